package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// startProactive runs [proactive] as the controller's ServiceAccount with the records grant
// (controller-rbac.yaml and recovery-rbac.yaml): what it does proves those grants are enough.
func (c *cluster) startProactive(action string, conditions ...string) (stop func()) {
	for _, err := range kubetest.Apply(c.T, false, "../../deploy/namespace.yaml", "../../deploy/leases-role.yaml",
		"../../deploy/controller-rbac.yaml", "../../deploy/recovery-rbac.yaml") {
		c.T.Fatal(err)
	}
	c.Cfg.Proactive = model.ProactiveConfig{Conditions: conditions, Action: action}
	c.T.Cleanup(func() { // the API server is shared: the next test's controller reads every record
		for _, n := range []string{"c0", "c1", "c2"} {
			_ = c.CS.CoreV1().ConfigMaps(kube.LeaseNamespace).Delete(context.Background(), kube.RecordName(ops.ProactiveRecord(c.Name(n))),
				metav1.DeleteOptions{})
		}
	})
	cfg := kube.Tune(kubetest.Config(c.T), kube.Options{QPS: 200, Burst: 400})
	cfg.Impersonate.UserName = controllerUser
	kc := c.KubeClientFor(cfg)
	eng := ops.NewEngine(kc, c.Nova, c.Cfg, ops.EngineOptions{Holder: "controller@test", Poll: 5 * time.Millisecond,
		StallAfter: 300 * time.Millisecond, Backoff: 20 * time.Millisecond})
	p := &controllers.Proactive{Engine: eng, Policy: defaults(), Events: kc, Resync: 100 * time.Millisecond, Log: func(l string) { c.T.Log(l) },
		Notify: func(n model.Notice) {
			c.mu.Lock()
			c.notices = append(c.notices, n)
			c.mu.Unlock()
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Serve(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// setCondition makes the node report the condition typ (True), or clears it, as
// node-problem-detector does. One set is cleared when the test ends: the API server is shared,
// and the next test's controller would see this test's node degrading.
func (c *cluster) setCondition(node, typ string, on bool) {
	c.T.Helper()
	if on {
		c.T.Cleanup(func() { c.setCondition(node, typ, false) })
	}
	n, err := c.CS.CoreV1().Nodes().Get(kubetest.Ctx(c.T), node, metav1.GetOptions{})
	if err != nil {
		c.T.Fatal(err)
	}
	status := corev1.ConditionFalse
	if on {
		status = corev1.ConditionTrue
	}
	cond := corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: status, Reason: typ, LastTransitionTime: metav1.Now()}
	if i := slices.IndexFunc(n.Status.Conditions, func(x corev1.NodeCondition) bool { return string(x.Type) == typ }); i >= 0 {
		n.Status.Conditions[i] = cond
	} else {
		n.Status.Conditions = append(n.Status.Conditions, cond)
	}
	if _, err := c.CS.CoreV1().Nodes().UpdateStatus(kubetest.Ctx(c.T), n, metav1.UpdateOptions{}); err != nil {
		c.T.Fatal(err)
	}
}

// roomForOneFailure asks [capacity] for one host failure's room and fills c2 with 240 GiB
// (and c1 with 40): they fit on c0 and c1 now, on c1 alone they would not.
func (c *cluster) roomForOneFailure() {
	for i := range 6 {
		c.World.AddServer(fmt.Sprintf("filler-%d", i), c.Name("c2"), sim.Flavor{Name: "f40", RAMMB: 40 << 10, VCPUs: 1, DiskGB: 10})
	}
	c.World.AddServer("filler-c1", c.Name("c1"), sim.Flavor{Name: "f40", RAMMB: 40 << 10, VCPUs: 1, DiskGB: 10})
	c.Cfg.Capacity.Tolerate = 1
}

// deleteShell deletes c0's bare pod: an evacuation would lose it for good, and is refused.
func (c *cluster) deleteShell() {
	c.T.Helper()
	zero := int64(0)
	if err := c.CS.CoreV1().Pods(c.NS).Delete(kubetest.Ctx(c.T), "shell", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		c.T.Fatal(err)
	}
	kubetest.Eventually(c.T, 10*time.Second, "the shell pod gone from the cache", func() bool {
		_, err := c.CS.CoreV1().Pods(c.NS).Get(kubetest.Ctx(c.T), "shell", metav1.GetOptions{})
		return err != nil
	})
}

// proactive is the node's [proactive] record, if any.
func (c *cluster) proactive(node string) (model.Proactive, bool) {
	cm, err := c.CS.CoreV1().ConfigMaps(kube.LeaseNamespace).
		Get(kubetest.Ctx(c.T), kube.RecordName(ops.ProactiveRecord(node)), metav1.GetOptions{})
	if err != nil {
		return model.Proactive{}, false
	}
	var rec model.Proactive
	if err := json.Unmarshal([]byte(cm.Data["record.json"]), &rec); err != nil {
		c.T.Fatal(err)
	}
	return rec, true
}

// waitProactive waits until the node's record says outcome.
func (c *cluster) waitProactive(node, outcome string) model.Proactive {
	c.T.Helper()
	kubetest.Eventually(c.T, 60*time.Second, node+"'s [proactive] record "+outcome, func() bool {
		rec, ok := c.proactive(node)
		return ok && rec.Outcome == outcome
	})
	rec, _ := c.proactive(node)
	return rec
}

// A node given node-problem-detector's KernelDeadlock is evacuated with no person: cordoned,
// its nova-compute disabled, its VMs moved and its pods evicted; its record keeps the trigger
// and the ledger of both VMs' moves; the person on call is told as it begins and ends, and the
// node's Events say so. It is acted on once: the condition still there, nothing runs again;
// once it clears, the record says the episode is over. The way back stays a person's.
func TestADegradingNodeIsEvacuatedWithNoPerson(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.deleteShell() // a bare pod refuses the evacuation (TestAProactiveEvacuationOfABarePodIsRefused)
	t.Cleanup(c.startProactive(model.ProactiveEvacuate, "KernelDeadlock", "ReadonlyFilesystem"))
	c.setCondition(c0, "KernelDeadlock", true)
	rec := c.waitProactive(c0, "done")
	if !slices.Equal(rec.Triggers, []string{"KernelDeadlock"}) || rec.Action != model.ProactiveEvacuate || len(rec.Moves) != 2 {
		t.Fatalf("the record: %+v", rec)
	}
	for _, m := range rec.Moves {
		vm, _ := c.World.ServerByName(m.VM)
		if m.Status != model.MoveSucceeded || m.Dest == "" || m.Dest == c0 || vm.Host != m.Dest || vm.Status != "ACTIVE" {
			t.Errorf("ledger %+v; the server is %s on %s", m, vm.Status, vm.Host)
		}
	}
	if h, _ := c.World.Host(c0); h.Enabled || !strings.HasPrefix(h.DisabledReason, ops.ReasonPrefix) {
		t.Errorf("%s's nova-compute: enabled %v, reason %q", c0, h.Enabled, h.DisabledReason)
	}
	if k := c.Node(c0); k.Schedulable {
		t.Errorf("%s was left schedulable", c0)
	}
	if kinds := c.told(); !slices.Equal(kinds, []model.NoticeKind{model.NoticeDegrading, model.NoticeProactiveDone}) {
		t.Errorf("the person on call was told %v", kinds)
	}
	if done, _ := c.notice(model.NoticeProactiveDone); done.Ledger == nil || *done.Ledger != (model.LedgerCounts{Succeeded: 2}) ||
		!strings.Contains(done.Message, "is degrading (KernelDeadlock): evacuate done") {
		t.Errorf("the done notice: %+v", done)
	}
	kubetest.Eventually(t, 10*time.Second, "the Events on "+c0, func() bool {
		ev := c.nodeEvents(c0)
		return slices.Contains(ev, "DrainctlNodeDegrading") && slices.Contains(ev, "DrainctlProactiveDone")
	})
	time.Sleep(500 * time.Millisecond) // five passes with the condition still there
	if again, _ := c.proactive(c0); !again.Started.Equal(rec.Started) || len(c.told()) != 2 {
		t.Errorf("acted on again: %+v, told %v", again, c.told())
	}
	c.setCondition(c0, "KernelDeadlock", false)
	kubetest.Eventually(t, 10*time.Second, "the episode over", func() bool {
		rec, _ := c.proactive(c0)
		return !rec.Cleared.IsZero()
	})
	if k := c.Node(c0); k.Schedulable {
		t.Errorf("%s was put back: the way back is a person's", c0)
	}
}

// action = "notify" tells and changes nothing; a condition the configuration does not name is
// no trigger at all.
func TestANotifyActionChangesNothing(t *testing.T) {
	c := newCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	t.Cleanup(c.startProactive(model.ProactiveNotify, "KernelDeadlock"))
	c.setCondition(c1, "ReadonlyFilesystem", true) // not named
	c.setCondition(c0, "KernelDeadlock", true)
	rec := c.waitProactive(c0, "notified")
	if len(rec.Moves) != 0 || !c.Node(c0).Schedulable {
		t.Errorf("notify changed something: %+v, schedulable %v", rec, c.Node(c0).Schedulable)
	}
	if vm, _ := c.World.ServerByName("vm-a"); vm.Host != c0 {
		t.Errorf("vm-a moved to %s", vm.Host)
	}
	if n, ok := c.notice(model.NoticeDegrading); !ok || !strings.Contains(n.Message, "action notify: nothing changed") {
		t.Errorf("the notice: %+v", n)
	}
	time.Sleep(300 * time.Millisecond)
	if _, ok := c.proactive(c1); ok || !c.Node(c1).Schedulable {
		t.Errorf("%s was acted on for a condition not named", c1)
	}
}

// Evacuating c0 would take the room [capacity] keeps for the next host failure (c2's 240 GiB
// fit on c0 and c1 now, on c1 alone they would not): refused with the typed reason, told once,
// the node untouched; tried again while the condition holds.
func TestAProactiveEvacuationKeepsTheFailoverRoom(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.roomForOneFailure()
	c.deleteShell()
	t.Cleanup(c.startProactive(model.ProactiveEvacuate, "KernelDeadlock"))
	c.setCondition(c0, "KernelDeadlock", true)
	rec := c.waitProactive(c0, "refused")
	if !strings.Contains(rec.Error, "host failures") {
		t.Errorf("the refusal: %q", rec.Error)
	}
	time.Sleep(300 * time.Millisecond)
	if k := c.Node(c0); !k.Schedulable {
		t.Errorf("%s was cordoned by a refused evacuation", c0)
	}
	if vm, _ := c.World.ServerByName("vm-a"); vm.Host != c0 {
		t.Errorf("vm-a moved to %s", vm.Host)
	}
	if kinds := c.told(); !slices.Equal(kinds, []model.NoticeKind{model.NoticeProactiveRefused}) {
		t.Errorf("told %v, want one refusal", kinds)
	}
}

// Nova's own signal: c1's nova-compute disabled by another tool (its reason theirs) quarantines
// it: cordoned, nothing new lands; its VMs stay. A record of an earlier episode (cleared)
// answers nothing.
func TestANovaServiceDisabledByAnotherToolQuarantinesTheNode(t *testing.T) {
	c := newCluster(t, 100)
	c1 := c.Name("c1")
	e := c.Engine("operator@test", nil)
	for _, old := range []model.Proactive{
		{Node: c1, Triggers: []string{model.NovaDisabled}, Outcome: "done", Finished: time.Now().Add(-time.Hour), Cleared: time.Now()},
	} {
		if err := e.SaveProactive(kubetest.Ctx(t), old); err != nil {
			t.Fatal(err)
		}
	}
	c.World.Update(func(hosts map[string]*sim.Host, _ map[string]*sim.VM) {
		hosts[c1].Enabled, hosts[c1].DisabledReason = false, "hw-health: ECC errors on DIMM 3"
	})
	t.Cleanup(c.startProactive(model.ProactiveQuarantine, model.NovaDisabled))
	kubetest.Eventually(t, 30*time.Second, c1+" quarantined", func() bool {
		rec, ok := c.proactive(c1)
		return ok && rec.Outcome == "done" && rec.Cleared.IsZero()
	})
	if k := c.Node(c1); k.Schedulable {
		t.Errorf("%s was not cordoned", c1)
	}
	if h, _ := c.World.Host(c1); h.Enabled {
		t.Errorf("%s's nova-compute enabled", c1)
	}
}

// A node whose evacuation would lose a bare pod for good (nothing recreates it) is refused as
// a person's would be: the node untouched, the pod named, told once.
func TestAProactiveEvacuationOfABarePodIsRefused(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	t.Cleanup(c.startProactive(model.ProactiveEvacuate, "KernelDeadlock"))
	c.setCondition(c0, "KernelDeadlock", true)
	rec := c.waitProactive(c0, "refused")
	if !strings.Contains(rec.Error, "/shell: no controller") {
		t.Errorf("the refusal: %q", rec.Error)
	}
	time.Sleep(300 * time.Millisecond)
	if !c.Node(c0).Schedulable || len(c.told()) != 1 {
		c.mu.Lock()
		t.Errorf("schedulable %v, told %+v", c.Node(c0).Schedulable, c.notices)
		c.mu.Unlock()
	}
}

// An evacuation that cannot end (a budget that never allows) is bounded by
// timeouts.operation: it fails, a person's now, told; the record says why, and the node's
// journal where it stopped.
func TestAProactiveEvacuationThatCannotEndIsBounded(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.deleteShell()
	// One replica under a budget that keeps it: its eviction is never allowed.
	rs, uid := kubetest.ReplicaSet(t, c.CS, c.NS, "stuck", 1)
	kubetest.Pod(t, c.CS, c.NS, "stuck-0", c0, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels("app", "stuck"), kubetest.Grace(1))
	kubetest.PDB(t, c.CS, c.NS, "stuck-pdb", "stuck", 1)
	c.Cfg.Timeouts.Operation = model.Duration(3 * time.Second)
	t.Cleanup(c.startProactive(model.ProactiveEvacuate, "KernelDeadlock"))
	c.setCondition(c0, "KernelDeadlock", true)
	rec := c.waitProactive(c0, "failed")
	if !strings.Contains(rec.Error, "timeouts.operation") {
		t.Errorf("the failure: %q", rec.Error)
	}
	if n, ok := c.notice(model.NoticeProactiveFailed); !ok || !strings.Contains(n.Message, "a person's now") {
		t.Errorf("the notice: %+v", n)
	}
	if _, ok := ops.ReadJournal(c.Node(c0)); !ok {
		t.Errorf("%s has no journal: where the evacuation stopped is not said", c0)
	}
}

// One condition set on every node (a bad rule of node-problem-detector's) takes one node out,
// not the fleet: [proactive] max_out (1 by default) counts the nodes its records say it took
// out that are still out of service; the others are told of only, said with the node out. Once
// a person brings that node back (uncordon), the next is quarantined.
func TestProactiveHasAStormGuardOfItsOwn(t *testing.T) {
	c := newCluster(t, 100)
	nodes := []string{c.Name("c0"), c.Name("c1"), c.Name("c2")}
	t.Cleanup(c.startProactive(model.ProactiveQuarantine, "KernelDeadlock"))
	for _, n := range nodes {
		c.setCondition(n, "KernelDeadlock", true)
	}
	out := func() (cordoned []string) {
		for _, n := range nodes {
			if !c.Node(n).Schedulable {
				cordoned = append(cordoned, n)
			}
		}
		return cordoned
	}
	kubetest.Eventually(t, 30*time.Second, "one node quarantined, the others held", func() bool {
		held := 0
		for _, n := range nodes {
			if rec, ok := c.proactive(n); ok && rec.Outcome == "refused" && strings.Contains(rec.Error, "the storm guard") {
				held++
			}
		}
		return len(out()) == 1 && held == 2
	})
	time.Sleep(500 * time.Millisecond) // five resyncs: still one
	first := out()
	if len(first) != 1 {
		t.Fatalf("out: %v; want one", first)
	}
	if rec, _ := c.proactive(nodes[(slices.Index(nodes, first[0])+1)%3]); !strings.Contains(rec.Error, first[0]) {
		t.Errorf("a held node's record does not name the node out: %q", rec.Error)
	}
	// A person brings it back; its condition cleared with the repair.
	c.setCondition(first[0], "KernelDeadlock", false)
	patch := []byte(`{"spec":{"unschedulable":false}}`)
	if _, err := c.CS.CoreV1().Nodes().Patch(kubetest.Ctx(t), first[0], types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "the next node quarantined", func() bool {
		now := out()
		return len(now) == 1 && now[0] != first[0]
	})
}

// A quarantine that would leave no room for the next host failure ([capacity]) is refused, as
// an evacuation's plan is: c0 disabled, c2's 240 GiB would not fit on c1 alone.
func TestAProactiveQuarantineKeepsTheFailoverRoom(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.roomForOneFailure()
	t.Cleanup(c.startProactive(model.ProactiveQuarantine, "KernelDeadlock"))
	c.setCondition(c0, "KernelDeadlock", true)
	rec := c.waitProactive(c0, "refused")
	if !strings.Contains(rec.Error, "host failures") || !strings.Contains(rec.Error, "[capacity]") {
		t.Errorf("the refusal: %q", rec.Error)
	}
	if k := c.Node(c0); !k.Schedulable {
		t.Errorf("%s was cordoned by a refused quarantine", c0)
	}
	if h, _ := c.World.Host(c0); !h.Enabled {
		t.Errorf("%s's nova-compute disabled by a refused quarantine", c0)
	}
}
