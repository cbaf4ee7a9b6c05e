package ops_test

import (
	"strings"
	"testing"

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
