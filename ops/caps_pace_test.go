package ops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// A slow Nova (every answer 80 ms, above a pace's slow of 30 ms) halves the pace down to one
// move at once: the node's six VMs, allowed six at once by every cap, are moved one at a time,
// the run says the pace holds them and why, and every VM still moves.
func TestTheCloudSlowedThePaceHoldsTheMoves(t *testing.T) {
	c := newCluster(t, 4)
	e, c0 := c.SixToPace("pacer@test")
	// A window of quick answers first: the cloud's own speed (a cloud always this slow is
	// not struggling, and the pace leaves it).
	if _, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, forced()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	c.World.InjectFault(sim.Fault{Latency: 80 * time.Millisecond})
	rec, rep, err := run(t, e, model.OpEvacuate, c0, forced())
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	if moved := len(rep.VMs); moved != 6 {
		t.Errorf("%d VMs in the report, want 6: %+v", moved, rep.VMs)
	}
	for _, v := range rep.VMs {
		if v.Result != ops.MigCompleted {
			t.Errorf("%s: %s %s", v.VM, v.Result, v.Message)
		}
	}
	said := false
	for _, ev := range rec.Events() {
		if nc, ok := ev.(ops.NodeChanged); ok && strings.Contains(nc.What, "moves held by the pace: 1 of 6 moves at once (the cloud's p90") {
			said = true
		}
	}
	if !said {
		t.Errorf("the run never said the pace held its moves:\n%s", rec.Transcript(c.Px))
	}
	if got := c.World.Stats().MaxConcurrentMigrations; got > 3 {
		t.Errorf("%d moves at once with the cloud slow; the pace halves from 6 at the first slow window", got)
	}
	if st := e.Pace(); st.Limit != 1 || !strings.Contains(st.Why, "halved") {
		t.Errorf("the pace after the run: %+v, want 1, halved", st)
	}
}
