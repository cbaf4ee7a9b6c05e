package bench

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

// Automatic recovery against its floor: from a node's NotReady to every VM of it ACTIVE on
// another host, over not_ready_for (the wait the operator chose) plus Nova's own rebuild
// time for those VMs at drainctl's caps (each rebuild about 3 s in the simulator, as on
// Nova's fake driver; the VMs of one source rebuilt migrations_per_source at a time). The
// controller's defaults otherwise: a 10 s resync, 2 s polls. Wall-clock seconds (scale 1).
func TestAutomaticRecoveryFloor(t *testing.T) {
	skipUnlessAsked(t)
	for _, perSource := range []int{1, 3} {
		recoveryFloor(t, perSource)
	}
}

func recoveryFloor(t *testing.T, perSource int) {
	const notReadyFor, rebuild = 30 * time.Second, 3 * time.Second
	c, _ := startDemo(t, sim.DemoOptions{Nodes: 12, Seed: 1, Scale: 1})
	cfg := model.DefaultConfig()
	cfg.Concurrency.MigrationsPerSource = perSource
	cfg.Recover.Automatic, cfg.Recover.FenceCmd, cfg.Recover.SharedStorage = true, "true {node}", true
	cfg.Recover.NotReadyFor = model.Duration(notReadyFor)
	eng := ops.NewEngine(c.kube, c.nova, cfg, ops.EngineOptions{Holder: "bench", Poll: cfg.Timeouts.Poll.D()})
	rc := &controllers.Recoverer{Engine: eng, Policy: policy.Options{IgnoreDaemonSets: true, MoveStopped: true}, Events: c.kube}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = rc.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	const node = "compute-0"
	inv, err := c.inv.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := inv.Node(node)
	was := map[string]string{} // name -> status: a stopped VM is rebuilt stopped
	for _, vm := range n.VMs {
		was[vm.Name] = string(vm.Status)
	}
	time.Sleep(3 * time.Second) // the controller has passed over a healthy cluster: the node dies between two resyncs
	dead := time.Now()
	c.demo.World.KillHost(node)
	if err := c.demo.Kube.SetNodeReady(node, false); err != nil {
		t.Fatal(err)
	}
	for !allRebuilt(c.demo.World, was, node) {
		if time.Since(dead) > 5*time.Minute {
			t.Fatalf("%s's VMs not rebuilt after 5 min", node)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wall := time.Since(dead)
	floor := notReadyFor + time.Duration(math.Ceil(float64(len(was))/float64(perSource)))*rebuild
	row(fmt.Sprintf("Automatic recovery: NotReady to %d VMs running elsewhere, %d rebuild(s) at once", len(was), perSource),
		fmt.Sprintf("%.2f× (%.1f s / %.1f s)", wall.Seconds()/floor.Seconds(), wall.Seconds(), floor.Seconds()),
		fmt.Sprintf("over not_ready_for (%v) + Nova's rebuilds at the caps; resync 10 s, poll %v", notReadyFor, cfg.Timeouts.Poll.D()))
}

// allRebuilt: every server is on a host other than from, in the status it had, in Nova's
// own view.
func allRebuilt(w *sim.World, was map[string]string, from string) bool {
	for name, status := range was {
		vm, ok := w.ServerByName(name)
		if !ok || vm.Host == from || vm.Status != status {
			return false
		}
	}
	return true
}
