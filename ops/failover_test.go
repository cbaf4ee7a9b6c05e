package ops_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// fillHost puts n VMs of gib GiB (1 vCPU) on the test's host name.
func fillHost(c *simtest.Cluster, name string, n, gib int) {
	for i := range n {
		c.World.AddServer(fmt.Sprintf("%s-f%d", name, i), c.Name(name), sim.Flavor{Name: fmt.Sprintf("f%d", gib), RAMMB: int64(gib) << 10, VCPUs: 1, DiskGB: 10})
	}
}

// [capacity] tolerate = 1 on hosts of 256 GiB: c1 runs 243 GiB of VMs, whose rebuild only
// c0's room takes (c2 runs 210). Emptying c0 would leave room for none: the evacuation is
// refused with the typed reason, naming the shortfall, and changes nothing; the engine shows
// the room as it stands; --ignore-failover-room lets it go.
func TestAnEvacuationThatTakesTheFailoverRoomIsRefused(t *testing.T) {
	c := newCluster(t, 100)
	fillHost(c, "c1", 9, 27)
	fillHost(c, "c2", 7, 30)
	c.Cfg.Capacity.Tolerate = 1
	e := c.Engine("room@test", nil)
	c0 := c.Name("c0")
	before := c.Muts.N.Load()
	_, _, err := run(t, e, model.OpEvacuate, c0, forced())
	var refused *ops.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("evacuating c0: %v, want refused", err)
	}
	var reason model.Reason
	for _, r := range refused.Reasons {
		if r.Code == model.FailoverRoomShort {
			reason = r
		}
	}
	if reason.Override != model.OverrideIgnoreFailoverRoom || !strings.HasPrefix(reason.Message, "would leave room for 0 of 1 host failures: short ") {
		t.Errorf("the refusal: %+v, want the failover room's reason", refused.Reasons)
	}
	if c.Muts.N.Load() != before || c.World.Stats().Mutations != 0 {
		t.Errorf("a refused plan changed something")
	}
	inv, err := e.Inventory().Read(kubetest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	rooms := e.FailoverRoom(inv)
	if len(rooms) != 1 || rooms[0].Tolerated != 1 || rooms[0].Short() {
		t.Errorf("the room as it stands: %+v, want one zone holding one death", rooms)
	}
	ro := forced()
	ro.Policy.IgnoreFailoverRoom = true
	if _, rep, err := run(t, e, model.OpEvacuate, c0, ro); err != nil || rep.Result != ops.ResultDone {
		t.Errorf("with --ignore-failover-room: %v %+v", err, rep.Result)
	}
}

// tolerate = 1, hosts of 256 GiB (half a GiB reserved): c2 runs two VMs of 100 GiB (the
// largest host), which c0 (100.5 GiB free) and c1 (104.5) take one each. migrate --to c1 of
// vm-a (8 GiB) would leave c1 96.5 free: one of c2's would find no room, so it is refused;
// vm-b (2 GiB) leaves both with 102.5, and moves.
func TestAMigrateThatFragmentsTheFailoverRoomIsRefused(t *testing.T) {
	c := newCluster(t, 100)
	fillHost(c, "c0", 1, 145)
	fillHost(c, "c1", 1, 151)
	fillHost(c, "c2", 2, 100)
	c.Cfg.Capacity.Tolerate = 1
	e := c.Engine("room@test", nil)
	to := func(node string) ops.RunOptions {
		return ops.RunOptions{MigrateParams: ops.MigrateParams{To: c.Name(node)}}
	}
	_, _, err := run(t, e, model.OpMigrate, "vm-a", to("c1"))
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || len(refused.Reasons) != 1 || refused.Reasons[0].Code != model.FailoverRoomShort ||
		!strings.HasPrefix(refused.Reasons[0].Message, "would leave room for 0 of 1 host failures: short 100 GiB") {
		t.Fatalf("vm-a to c1: %v, want refused for the failover room", err)
	}
	if _, rep, err := run(t, e, model.OpMigrate, "vm-b", to("c1")); err != nil || rep.Result != ops.ResultDone {
		t.Errorf("vm-b to c1: %v %+v", err, rep.Result)
	}
}

// A scale-down that would take the last room (#56's "Done when") is refused as the evacuation
// under it is, with the typed reason, and neither the Node nor anything else goes: the same
// cluster as above, scaling c0 down.
func TestAScaleDownThatTakesTheFailoverRoomIsRefused(t *testing.T) {
	c := newCluster(t, 100)
	fillHost(c, "c1", 9, 27)
	fillHost(c, "c2", 7, 30)
	c.Cfg.Capacity.Tolerate = 1
	e := c.Engine("room@test", nil)
	c0 := c.Name("c0")
	before := c.Muts.N.Load()
	_, err := e.ScaleDown(kubetest.Ctx(t), c0, forced(), nil, func(ops.Event) {})
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || !slices.ContainsFunc(refused.Reasons, func(r model.Reason) bool {
		return r.Code == model.FailoverRoomShort && strings.HasPrefix(r.Message, "would leave room for 0 of 1 host failures: short ")
	}) {
		t.Fatalf("scaling c0 down: %v, want refused for the failover room", err)
	}
	if c.Muts.N.Load() != before || c.World.Stats().Mutations != 0 {
		t.Errorf("a refused scale-down changed something")
	}
	if _, ok := e.KubeNode(c0); !ok {
		t.Errorf("the Node %s is gone", c0)
	}
}
