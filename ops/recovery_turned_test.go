package ops_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// A recovery's destination taken meanwhile (a campaign's move, a colleague's disable after the
// recovery read the hosts) is turned down by Nova's scheduler after it accepted the evacuation
// (TestConformanceEvacuationToANamedHost: the record in error, the server ERROR where it was):
// the VM is rebuilt elsewhere at its next attempt, and no VM is sent there again. c2, the
// roomiest, is disabled as the first rebuild is asked; one attempt a VM is enough (a turned-down
// attempt rebuilt nothing and does not count).
func TestARecoverysDestinationTakenMeanwhileIsTurnedDownOnce(t *testing.T) {
	c := newCluster(t, 50)
	c.Cfg.Concurrency.MigrationsPerSource, c.Cfg.Concurrency.MigrationsPerDestination = 2, 1 // drainctl picks
	c.World.AddServer("filler", c.Name("c1"), sim.Flavor{Name: "m1.xlarge", RAMMB: 16384, VCPUs: 8, DiskGB: 80})
	e := c.Engine("t", func(o *ops.EngineOptions) { o.Attempts = 1 })
	ctx := kubetest.Ctx(t)
	c0, c2 := c.Name("c0"), c.Name("c2")
	dies(t, c, e, c0)
	ro := ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	plan, err := e.Plan(ctx, model.OpRecover, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	// c2 disabled by a colleague as the first rebuild's request arrives, after every read.
	c.World.InjectFault(sim.Fault{Method: "POST", Action: "evacuate", Times: 1,
		Meanwhile: func(h map[string]*sim.Host, _ map[string]*sim.VM) { h[c2].Enabled = false }})
	var mu sync.Mutex
	var sentTo []string
	emit := func(ev ops.Event) {
		if e, ok := ev.(ops.MigrationEvent); ok && e.State == ops.MigRequested {
			mu.Lock()
			sentTo = append(sentTo, e.Dest)
			mu.Unlock()
		}
	}
	rep, err := e.Run(ctx, plan, ro, emit)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := slices.Index(sentTo, c2); n < 0 || slices.Contains(sentTo[n+1:], c2) || len(sentTo) != 3 {
		t.Errorf("rebuilds requested to %v; want %s once (disabled since the hosts were read: Nova turns it down), "+
			"then the two VMs elsewhere", sentTo, c2)
	}
	if rep.Result != ops.ResultDone {
		t.Errorf("the recovery ended %s: %+v", rep.Result, rep.VMs)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c.Name("c1") || vm.Status != "ACTIVE" {
			t.Errorf("%s: %s on %s; want ACTIVE on c1", name, vm.Status, vm.Host)
		}
	}
}
