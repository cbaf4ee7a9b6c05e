package ops_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/sim"
)

// A read of Nova begun before drainctl disabled a host and stored after it (a whole read of a
// large cloud takes seconds under load) never puts the host back to enabled in the cache: the
// uncordon planned from it would see nothing to enable and leave nova-compute disabled. A
// 1,000-node campaign lost two nodes so, each failing its verify after four minutes.
func TestAReadBegunBeforeADisableNeverUndoesIt(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	ctx := t.Context()
	c1 := c.Name("c1")
	if _, err := e.Inventory().Read(ctx); err != nil {
		t.Fatal(err)
	}
	// The next whole read reads the services at once and waits on the hypervisors.
	c.World.InjectFault(sim.Fault{Method: "GET", Path: regexp.MustCompile(`^/os-hypervisors`), Latency: 2 * time.Second, Times: 1})
	read := make(chan error, 1)
	go func() {
		_, err := e.Inventory().Read(ctx)
		read <- err
	}()
	time.Sleep(500 * time.Millisecond)
	cordon := ops.RunOptions{Policy: defaults(), ByHost: true} // planned by host, as a campaign plans
	if _, _, err := run(t, e, model.OpCordon, c1, cordon); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	inv, err := e.Inventory().Rejoin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := inv.Node(c1); !ok || n.Compute == nil || n.Compute.Enabled {
		t.Fatalf("the cache after the read begun before the disable: %+v; want disabled", n.Compute)
	}
	plan, err := e.Plan(ctx, model.OpUncordon, c1, ops.RunOptions{Policy: defaults(), FromCache: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range plan.Steps {
		if s.Kind == model.StepEnableCompute && s.Done {
			t.Errorf("the uncordon's plan says nova-compute needs no enabling: %+v", s)
		}
	}
}

// A read of one host's service that Nova answered before drainctl disabled it, and that came
// back after (a slow answer: a plan's read by host, in the TUI beside a campaign), is older
// than Nova's answer to the disable: it does not replace it, in the cache nor as the answer a
// wait reads first.
func TestASlowReadOfAServiceNeverUndoesADisable(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	ctx := t.Context()
	c1 := c.Name("c1")
	if _, err := e.Inventory().Read(ctx); err != nil {
		t.Fatal(err)
	}
	c.World.InjectFault(sim.Fault{Method: "GET", Path: regexp.MustCompile(`^/os-services`), LatencyAfter: 2 * time.Second, Times: 1})
	read := make(chan error, 1)
	go func() { // the uncordon's preview reads c1's service by host: enabled, answered late
		_, err := e.Plan(ctx, model.OpUncordon, c1, ops.RunOptions{Policy: defaults(), ByHost: true})
		read <- err
	}()
	time.Sleep(500 * time.Millisecond)
	if _, _, err := run(t, e, model.OpCordon, c1, ops.RunOptions{Policy: defaults(), ByHost: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	inv, err := e.Inventory().Rejoin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := inv.Node(c1); !ok || n.Compute == nil || n.Compute.Enabled {
		t.Errorf("the cache after a slow read answered before the disable: %+v; want disabled", n.Compute)
	}
	if svc, ok := e.Inventory().ServiceAnswered(c1, time.Time{}); !ok || svc.Enabled {
		t.Errorf("the answer a wait reads first: %+v (%v); want the disable's", svc, ok)
	}
}
