package ops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// novaCalls counts the Nova requests f makes.
func novaCalls(t *testing.T, log interface{ Calls() []string }, f func()) int {
	t.Helper()
	before := len(log.Calls())
	f()
	n := 0
	for _, c := range log.Calls()[before:] {
		if strings.HasPrefix(c, "nova ") {
			n++
		}
	}
	return n
}

// A batch's plans share one read of the cluster (each target read the whole cloud again:
// at 5,000 nodes seconds a target), and a proposal by host reads less than a whole read:
// what the TUI's e and C now do (#53.11).
func TestABatchIsPlannedOnOneRead(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0, c1 := c.Name("c0"), c.Name("c1")
	ro := ops.RunOptions{Policy: defaults()}
	plan := func(ro ops.RunOptions, nodes ...string) func() {
		return func() {
			b, err := e.PlanBatch(t.Context(), model.OpCordon, nodes, ro)
			if err != nil || len(b.Plans) != len(nodes) {
				t.Fatalf("plan %v: %v (%d plans)", nodes, err, len(b.Plans))
			}
		}
	}
	plan(ro, c0)() // the first read of the process (the whole of Nova; later ones ask what changed)
	one := novaCalls(t, &c.Muts.Log, plan(ro, c0))
	two := novaCalls(t, &c.Muts.Log, plan(ro, c0, c1))
	if one == 0 || two != one {
		t.Errorf("a batch of two nodes made %d Nova requests, one node %d: want one read for the batch", two, one)
	}
	ro.ByHost = true
	before := len(c.Muts.Log.Calls())
	plan(ro, c0, c1)()
	byHost := 0
	for _, call := range c.Muts.Log.Calls()[before:] {
		switch {
		case strings.HasSuffix(call, "/os-hypervisors/detail"):
			t.Errorf("planned by host, the whole cloud's hypervisors were read: %s", call)
		case strings.HasPrefix(call, "nova GET ") && strings.HasSuffix(call, "/os-services"):
			byHost++
		}
	}
	if byHost != 2 {
		t.Errorf("planned by host, %d services read by host; want the batch's two", byHost)
	}
}

// A node's move step asks the moves under way before any request of its own (the cold moves
// from it to follow) and once its VMs are gone (the moves into it to wait for). Neither acts
// on what it reads (each VM is read afresh before it is followed; the host's list and the
// verify's are the proof it is empty), so a read begun within half a poll serves: from the
// run's start, the moves are first read for the cluster room's check, not for the adoption
// before it.
func TestAMoveStepSharesThePlansReadOfTheMoves(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Concurrency.MigrationsPerSource = 1
	e := c.Engine("tester@a", func(o *ops.EngineOptions) { o.Poll = 4 * time.Second }) // reads within 2 s serve
	ro := ops.RunOptions{Policy: defaults(), ByHost: true, EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	ctx := t.Context()
	if _, err := e.Inventory().Read(ctx); err != nil { // the campaign's whole read
		t.Fatal(err)
	}
	plan, err := e.Plan(ctx, model.OpEvacuate, c.Name("c0"), ro)
	if err != nil {
		t.Fatal(err)
	}
	before := len(c.Muts.Log.Calls())
	if _, err := e.Run(ctx, plan, ro, func(ops.Event) {}); err != nil {
		t.Fatal(err)
	}
	for _, call := range c.Muts.Log.Calls()[before:] {
		if strings.HasSuffix(call, "/leases/drainctl-migrations.lock") {
			break // the cluster room's check: its own read of the moves follows
		}
		if strings.HasSuffix(call, "/os-migrations") {
			t.Errorf("the moves read before the cluster room's check (for the cold moves to follow): %s", call)
		}
	}
}
