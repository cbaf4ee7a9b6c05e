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
