package ops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
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
	rec, rep := evacuateSlowed(t, c, e, c0)
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

// The engine's pace hears the API server: a window of its answers slow (held 1 s, above a
// pace's slow of 30 ms and four times its quick window's) halves the pace and says so, as a slow
// Nova's does (the moves' leases and the nodes' evictions load it too). Only the API server is
// asked in these windows, so what Nova answers (slower on a loaded machine) cannot decide.
func TestASlowAPIServerHalvesThePace(t *testing.T) {
	c := newCluster(t, 4)
	e := c.Engine("pacer@test", func(o *ops.EngineOptions) { o.PaceWindow, o.PaceSlow = 150*time.Millisecond, 30*time.Millisecond })
	ctx := kubetest.Ctx(t)
	read := func(n int) {
		for range n {
			if _, _, err := c.Kube.NodeFresh(ctx, c.Name("c0")); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(200 * time.Millisecond) // the window ends
	}
	read(5) // a window of quick answers: the API server's own speed
	if st := e.Pace(); st.Limit != st.Max {
		t.Fatalf("the pace after quick answers: %+v, want its cap", st)
	}
	c.Muts.Latency.Store(int64(time.Second))
	read(1) // each answer takes longer than a window: a window of one (or of the process's own calls)
	st := e.Pace()
	if st.Limit > st.Max/2 || !strings.HasPrefix(st.Why, "the API server's p90 1") || !strings.HasSuffix(st.Why, ": halved") {
		t.Errorf("the pace after the API server's slow windows: %+v, want halved at least once, and why", st)
	}
}

// [concurrency] static_caps = true: the caps alone. A slow Nova holds no move: the node's six
// VMs go six at once, as the caps allow, and the pace stays at its cap.
func TestStaticCapsHoldNoMoveForASlowCloud(t *testing.T) {
	c := newCluster(t, 4)
	c.Cfg.Concurrency.StaticCaps = true
	e, c0 := c.SixToPace("static@test")
	_, rep := evacuateSlowed(t, c, e, c0)
	if len(rep.VMs) != 6 {
		t.Errorf("%d VMs in the report, want 6", len(rep.VMs))
	}
	if got := c.World.Stats().MaxConcurrentMigrations; got < 4 {
		t.Errorf("%d moves at once at most with static caps of 6: something held them", got)
	}
	if st := e.Pace(); st.Limit != 6 || st.Why != "" {
		t.Errorf("the pace with static caps: %+v, want 6, never changed", st)
	}
}

// evacuateSlowed evacuates c0 with every answer of Nova 80 ms, above a pace's slow of 30 ms.
// A window of quick answers first: the cloud's own speed (a cloud always this slow is not
// struggling, and the pace leaves it).
func evacuateSlowed(t *testing.T, c *simtest.Cluster, e *ops.Engine, c0 string) (*simtest.Recorder, ops.Report) {
	t.Helper()
	if _, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, forced()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	c.World.InjectFault(sim.Fault{Latency: 80 * time.Millisecond})
	rec, rep, err := run(t, e, model.OpEvacuate, c0, forced())
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	return rec, rep
}
