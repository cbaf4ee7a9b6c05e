package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

// Evacuation efficiency: the wall time of moving a node's VMs (mixed sizes and dirty
// rates) over the lower bound: the longest single migration, or total memory / (cap ×
// bandwidth), whichever is larger. Times are simulated seconds.
func TestEvacuationEfficiency(t *testing.T) {
	skipUnlessAsked(t)
	for _, perSource := range []int{1, 2} {
		evacuationEfficiency(t, perSource)
	}
}

// evacuationEfficiency runs one evacuation with perSource live migrations at once from a
// host: Nova's max_concurrent_live_migrations and drainctl's cap alike.
func evacuationEfficiency(t *testing.T, perSource int) {
	const scale = 50.0
	c, _ := startDemo(t, sim.DemoOptions{Nodes: 12, Seed: 1, Scale: scale, MigrationsPerSource: perSource})
	cfg := model.DefaultConfig()
	cfg.Concurrency.MigrationsPerSource = perSource
	eng := ops.NewEngine(c.kube, c.nova, cfg, ops.EngineOptions{Holder: "bench", Poll: 10 * time.Millisecond})
	node := "compute-1"
	inv, _ := c.inv.Read(context.Background())
	n, _ := inv.Node(node)
	const bw = float64(1 << 30) // the simulator's bandwidth
	var total, longest float64
	for _, vm := range n.VMs {
		s, _ := c.demo.World.ServerByName(vm.Name)
		mem := float64(vm.RAMMB) * (1 << 20)
		total += mem
		// One migration alone: scheduling, preparing, the copy against dirtying, switch-over.
		d := 0.1 + 1 + mem/(bw-s.DirtyBytesPerSec) + 0.8
		longest = max(longest, d)
	}
	bound := max(longest, total/(float64(perSource)*bw))
	ro := ops.RunOptions{Policy: policy.Options{IgnoreDaemonSets: true}, EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	plan, err := eng.Plan(context.Background(), model.OpEvacuate, node, ro)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := eng.Run(context.Background(), plan, ro, func(ops.Event) {}); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start).Seconds() * scale
	row(
		fmt.Sprintf(
			"Evacuation efficiency: %d VMs (%.0f GiB, one converging slowly), %d migration(s) per source",
			len(n.VMs),
			total/(1<<30),
			perSource,
		),
		fmt.Sprintf("%.2f× (%.0f s / %.0f s)", wall/bound, wall, bound),
		"wall time over the lower bound max(longest migration, memory / (cap × bandwidth)); simulated seconds",
	)
}
