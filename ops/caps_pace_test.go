package ops_test

import (
	"fmt"
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

// The pace hears the live moves' copy: ten guests that each dirty 0.6 GiB/s, moved over one
// shared 1 GiB/s link six at once (every cap allows it), each copy at a sixth of the link and
// none converges; the pace halves on the moves (most polls not converging), holds the moves
// still to start and says why, and every VM still moves (the stalled ones force-completed).
// The cloud and the API server are never called slow here (a slow of 10 s), so it is the
// moves that decide.
func TestMovesNotConvergingOnASharedLinkHalveThePace(t *testing.T) {
	c := simtest.NewClusterWith(t, sim.Options{Scale: 20, Seed: 7, MaxConcurrentLiveMigrations: 10})
	c.Cfg.Concurrency.MigrationsPerSource, c.Cfg.Concurrency.MigrationsPerCluster = 10, 6
	c.Cfg.Concurrency.MigrationsPerDestination = 10
	c0 := c.Name("c0")
	for i := range 8 {
		c.World.AddServer(fmt.Sprintf("vm-l%d", i), c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	}
	c.World.AddHost(c.Name("spare"), 64, 262144, 2000)
	c.World.Update(func(_ map[string]*sim.Host, servers map[string]*sim.VM) {
		for _, s := range servers {
			s.DirtyBytesPerSec = 0.6 * (1 << 30)
		}
	})
	if err := c.World.ApplyFaultSpec("shared-link=1"); err != nil {
		t.Fatal(err)
	}
	e := c.Engine("linked@test", func(o *ops.EngineOptions) { o.PaceWindow, o.PaceSlow = 150*time.Millisecond, 10*time.Second })
	rec, rep, err := run(t, e, model.OpEvacuate, c0, forced())
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	if len(rep.VMs) != 10 {
		t.Errorf("%d VMs in the report, want 10", len(rep.VMs))
	}
	for _, v := range rep.VMs {
		if v.Result != ops.MigCompleted {
			t.Errorf("%s: %s %s", v.VM, v.Result, v.Message)
		}
	}
	said := ""
	for _, ev := range rec.Events() {
		if nc, ok := ev.(ops.NodeChanged); ok && strings.HasPrefix(nc.What, "moves held by the pace") && strings.Contains(nc.What, "the moves") {
			said = nc.What
		}
	}
	if !strings.Contains(said, "polls of the moves did not converge: halved") {
		t.Errorf("the run never said the moves' copy halved the pace (last said: %q):\n%s", said, rec.Transcript(c.Px))
	}
}

// The pace hears the budgets: a pod its budget never lets go, given up on, halves it and says
// so (the cloud and the API server are never called slow here).
func TestAPodGivenUpOnItsBudgetHalvesThePace(t *testing.T) {
	c := newCluster(t, 100)
	frozenPDBOnC2(t, c)
	e := c.Engine("budgeted@test", func(o *ops.EngineOptions) { o.PaceWindow, o.PaceSlow = 100*time.Millisecond, 10*time.Second })
	if _, _, err := run(t, e, model.OpEvacuate, c.Name("c2"), ops.RunOptions{Policy: defaults()}); err == nil {
		t.Fatal("the evacuation passed a budget that never allows")
	}
	time.Sleep(150 * time.Millisecond) // the window ends
	if st := e.Pace(); !strings.Contains(st.Why, "1 of 1 pods of the budgets were given up on: halved") {
		t.Errorf("the pace after a pod was given up on: %+v, want halved by the budgets", st)
	}
}
