package ops_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/policy"
)

// Ordered drains: pods in ascending order groups (the drain-order label wins over the
// [[drain.order]] rules), each group gone before the next is asked to go; a skip rule leaves
// its pods like DaemonSet pods. The events' timestamps prove the order.
func TestOrderedDrainEvictsGroupInOrder(t *testing.T) {
	c := newCluster(t, 100)
	c2 := c.Name("c2")
	rs, uid := kubetest.ReplicaSet(t, c.CS, c.NS, "tiers", 7)
	pod := func(name string, kv ...string) {
		kubetest.Pod(t, c.CS, c.NS, name, c2, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels(kv...), kubetest.Grace(1))
	}
	pod("front-1", "tier", "front") // the rule: -5 (a label value cannot start with "-")
	pod("front-2", "tier", "front")
	pod("db-3", "tier", "db", model.DrainOrderLabel, "0")    // the label wins over the rule: 0
	pod("app-1", "tier", "app")                              // no rule: 0
	pod("db-1", "tier", "db")                                // the rule: 10
	pod("db-2", "tier", "db", model.DrainOrderLabel, "skip") // the label wins: stays
	pod("agent-1", "app", "node-agent")                      // the skip rule: stays

	cfg := model.DefaultConfig()
	cfg.Drain.Order = []model.DrainRule{
		{Selector: "tier=front", Order: -5},
		{Selector: "tier=db", Order: 10},
		{Selector: "app=node-agent", Skip: true},
	}
	pol, err := policy.FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "the informer sees the pods", func() bool { return len(c.Kube.PodsOn(c2)) == 7 })
	e := c.Engine("tester@order", nil)
	ro := ops.RunOptions{Policy: pol}
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c2, ro)
	if err != nil {
		t.Fatal(err)
	}
	var detail string
	for _, s := range plan.Steps {
		if s.Kind == model.StepEvictPods {
			detail = s.Detail
		}
	}
	if want := "evict 5 pod(s) in 3 groups, each gone before the next (order -5: 2, order 0: 2, order 10: 1); 2 pod(s) stay by drain skip rules"; detail != want {
		t.Errorf("plan's evict step:\n got %q\nwant %q", detail, want)
	}
	var order []string
	for _, p := range plan.Pods {
		order = append(order, p.Name)
	}
	if got := strings.Join(order, " "); !strings.HasPrefix(got, "front-") || !strings.HasSuffix(got, "db-1") || strings.Index(got, "app-1") < strings.Index(got, "front-2") {
		t.Errorf("the plan lists the pods out of order: %s", got)
	}

	rec, _, err := run(t, e, model.OpEvacuate, c2, ro)
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	group := map[string]int{"front-1": -5, "front-2": -5, "app-1": 0, "db-3": 0, "db-1": 10}
	gone := map[int]time.Time{}  // each group's last pod gone
	asked := map[int]time.Time{} // each group's first eviction request
	for _, ev := range rec.Events() {
		pe, ok := ev.(ops.PodEvent)
		if !ok {
			continue
		}
		g, ok := group[pe.Pod[strings.Index(pe.Pod, "/")+1:]]
		if !ok {
			t.Errorf("a pod that stays was touched: %+v", pe)
			continue
		}
		switch pe.State {
		case ops.PodEvicting:
			if asked[g].IsZero() || pe.At.Before(asked[g]) {
				asked[g] = pe.At
			}
		case ops.PodGone:
			if pe.At.After(gone[g]) {
				gone[g] = pe.At
			}
		}
	}
	if len(asked) != 3 || len(gone) != 3 {
		t.Fatalf("groups asked %v, gone %v", asked, gone)
	}
	if !gone[-5].Before(asked[0]) || !gone[0].Before(asked[10]) {
		t.Errorf("a group was asked to go before the one before it was gone: asked %v, gone %v", asked, gone)
	}
	var left []string
	for _, p := range c.Kube.PodsOn(c2) {
		left = append(left, p.Name)
	}
	if got := strings.Join(left, " "); !strings.Contains(got, "db-2") || !strings.Contains(got, "agent-1") || len(left) != 2 {
		t.Errorf("pods left on %s: %v", c2, left)
	}
}

// Pods waiting on one budget all wake when it reopens; only the first may go. Each checks
// the budget again under the budget's lock, so the API server refuses none of them (no 429
// herd), and the drain still ends.
func TestBudgetReopeningLetsOnePodGo(t *testing.T) {
	c := newCluster(t, 100)
	c2 := c.Name("c2")
	ns := kubetest.Namespace(t, c.CS, c.Px+"-herd")
	rs, uid := kubetest.ReplicaSet(t, c.CS, ns, "app", 5)
	for i := range 5 {
		kubetest.Pod(t, c.CS, ns, fmt.Sprintf("app-%d", i), c2, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels("app", "app"), kubetest.Grace(1))
	}
	kubetest.PDB(t, c.CS, ns, "app-pdb", "app", 4) // one at a time
	(&kubetest.Controllers{DeleteAfter: 100 * time.Millisecond, ReplaceOn: c.Name("c1"), ReadyAfter: 300 * time.Millisecond}).Run(t, c.CS, ns)
	kubetest.Eventually(t, 10*time.Second, "the budget allows one", func() bool {
		p, ok := c.Kube.PDB(ns, "app-pdb")
		return ok && p.DisruptionsAllowed == 1 && len(c.Kube.PodsOn(c2)) == 5
	})
	e := c.Engine("tester@herd", nil)
	rec, rep, err := run(t, e, model.OpEvacuate, c2, ops.RunOptions{Policy: defaults()})
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	refused := 0
	for _, p := range rep.Pods {
		refused += p.Blocked
	}
	if len(rep.Pods) != 5 || refused != 0 {
		t.Errorf("%d pods evicted, %d evictions refused by the API server (429)", len(rep.Pods), refused)
	}
}
