package policy

import (
	"fmt"
	"testing"

	"github.com/drainctl/drainctl/model"
)

// failoverNode is a host of 64 GiB and 16 vCPU in zone, running n VMs of 8 GiB and 2 vCPU.
func failoverNode(name, zone string, n int) model.Node {
	node := model.Node{Name: name, Compute: &model.ComputeService{Host: name, Zone: zone, Enabled: true, Up: true},
		Hypervisor: &model.Hypervisor{CapacityKnown: true, MemoryMB: 64 << 10, MemoryMBUsed: int64(n) * 8 << 10, VCPUs: 16, VCPUsUsed: 2 * n}}
	for i := range n {
		node.VMs = append(node.VMs, model.VM{ID: fmt.Sprintf("%s-%d", name, i), Name: fmt.Sprintf("%s-vm-%d", name, i), Host: name,
			RAMMB: 8 << 10, VCPUs: 2})
	}
	return node
}

// tolerate = 1 over three hosts running 4, 4 and 2 VMs of 8 GiB: emptying the third puts its
// two on the first (48 GiB there), whose death the second's 32 GiB free cannot take: refused,
// naming the shortfall and the zone; --ignore-failover-room makes it a note. With nothing
// asked there is no reason.
func TestAPlanThatTakesTheFailoverRoomIsRefused(t *testing.T) {
	inv := model.Inventory{Nodes: []model.Node{failoverNode("h0", "a", 4), failoverNode("h1", "a", 4), failoverNode("h2", "a", 2)}}
	h2 := inv.Nodes[2]
	need := model.FailoverNeed{Tolerate: 1}
	r := FailoverReason(h2, h2.VMs, inv, nil, 1, need, Options{})
	if r == nil || r.Code != model.FailoverRoomShort || r.Severity != model.Blocks || r.Override != model.OverrideIgnoreFailoverRoom ||
		r.Message != "would leave room for 0 of 1 host failures: short 16 GiB and 4 vCPU in zone a" {
		t.Fatalf("emptying h2: %+v", r)
	}
	if r := FailoverReason(h2, h2.VMs, inv, nil, 1, need, Options{IgnoreFailoverRoom: true}); r == nil || r.Severity != model.Notes {
		t.Errorf("with --ignore-failover-room: %+v, want a note", r)
	}
	if r := FailoverReason(h2, h2.VMs, inv, nil, 1, model.FailoverNeed{}, Options{}); r != nil {
		t.Errorf("nothing asked: %+v", r)
	}
	// Room for one death holds with h2 leaving if h0 and h1 run three each.
	roomy := model.Inventory{Nodes: []model.Node{failoverNode("h0", "a", 3), failoverNode("h1", "a", 3), failoverNode("h2", "a", 2)}}
	if r := FailoverReason(roomy.Nodes[2], roomy.Nodes[2].VMs, roomy, nil, 1, need, Options{}); r != nil {
		t.Errorf("emptying h2 with room left: %+v", r)
	}
	// Leaving in a batch that names it too (a campaign's), h1 empty: before, h0's death finds
	// h1 and h2; with h2 gone, only h1, still enough; with h1 gone beside it, none.
	spare := model.Inventory{Nodes: []model.Node{failoverNode("h0", "a", 4), failoverNode("h1", "a", 0), failoverNode("h2", "a", 0)}}
	if r := FailoverReason(spare.Nodes[2], nil, spare, map[string]bool{"h2": true}, 1, need, Options{}); r != nil {
		t.Errorf("emptying an empty h2, h1 left: %+v", r)
	}
	if r := FailoverReason(spare.Nodes[2], nil, spare, map[string]bool{"h2": true, "h1": true}, 1, need, Options{}); r == nil {
		t.Errorf("emptying an empty h2 with h1 leaving beside it: no reason, want room for 0 of 1")
	}
	if len(inv.Nodes[0].VMs) != 4 {
		t.Errorf("the inventory changed: h0 runs %d VMs", len(inv.Nodes[0].VMs))
	}
}

// reserve = "30%": a VM moved into zone b from zone a takes zone b from 37.5 % free to 25 %:
// refused, naming zone b; a move within zone a is not.
func TestAMoveThatTakesAZonesReserveIsRefused(t *testing.T) {
	inv := model.Inventory{Nodes: []model.Node{failoverNode("a1", "a", 1), failoverNode("a2", "a", 0), failoverNode("b1", "b", 5)}}
	need := model.FailoverNeed{ReservePercent: 30}
	vm := inv.Nodes[0].VMs[0]
	r := FailoverMoveReason(vm, "a1", "b1", inv, 1, need, Options{})
	if r == nil || r.Code != model.FailoverRoomShort || r.Message != "would leave less than the 30% reserve free: short 3.2 GiB and 0.8 vCPU in zone b" {
		t.Fatalf("a VM moved into zone b: %+v", r)
	}
	if r := FailoverMoveReason(vm, "a1", "a2", inv, 1, need, Options{}); r != nil {
		t.Errorf("a VM moved within zone a: %+v", r)
	}
}

// tolerate = 1 over twelve hosts of 64 GiB each running five VMs of 8 GiB (480 of 768 GiB):
// with three out, their fifteen VMs fill five hosts and the four others keep 96 GiB free, room
// for a full host's 64; with four out, eight hosts keep 32 GiB: a campaign over ten of them
// runs three at once, whatever --parallel above that. Two hosts of four VMs each: one out
// alone fills the other, and none can be out.
func TestTheFailoverRoomSaysHowManyNodesCanBeOutAtOnce(t *testing.T) {
	var inv model.Inventory
	var order []string
	for i := range 12 {
		inv.Nodes = append(inv.Nodes, failoverNode(fmt.Sprintf("h%02d", i), "a", 5))
		if i < 10 {
			order = append(order, inv.Nodes[i].Name)
		}
	}
	need := model.FailoverNeed{Tolerate: 1}
	for par, want := range map[int]int{1: 1, 2: 2, 3: 3, 5: 3, 20: 3} {
		if got := FailoverOutAtOnce(inv, order, par, 1, need); got != want {
			t.Errorf("--parallel %d: %d out at once, want %d", par, got, want)
		}
	}
	if got := FailoverOutAtOnce(inv, order, 5, 1, model.FailoverNeed{}); got != 5 {
		t.Errorf("nothing asked: %d out at once, want --parallel's 5", got)
	}
	pair := model.Inventory{Nodes: []model.Node{failoverNode("p0", "a", 4), failoverNode("p1", "a", 4)}}
	if got := FailoverOutAtOnce(pair, []string{"p0", "p1"}, 2, 1, need); got != 0 {
		t.Errorf("two hosts of four VMs: %d out at once, want 0", got)
	}
}

// A campaign's node in flight (h1) still has six VMs to move: they land on the hosts left
// (h0) before h2's plan as after it. h2's two VMs then fill h0, whose death h3's 56 GiB cannot
// take: refused. Counting h1's VMs as staying where they are (they will not) would let it pass.
func TestTheNodesInFlightStillHaveVMsToPlace(t *testing.T) {
	inv := model.Inventory{Nodes: []model.Node{failoverNode("h0", "a", 0), failoverNode("h1", "a", 6), failoverNode("h2", "a", 2),
		failoverNode("h3", "a", 1)}}
	h2 := inv.Nodes[2]
	r := FailoverReason(h2, h2.VMs, inv, map[string]bool{"h1": true, "h2": true}, 1, model.FailoverNeed{Tolerate: 1}, Options{})
	if r == nil || r.Message != "would leave room for 0 of 1 host failures: short 8 GiB and 2 vCPU in zone a" {
		t.Fatalf("emptying h2 beside h1: %+v", r)
	}
}
