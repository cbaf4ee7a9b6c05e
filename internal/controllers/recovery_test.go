package controllers_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/internal/notify"
	"github.com/drainctl/drainctl/internal/notify/notifytest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
	"github.com/drainctl/drainctl/ui/auto"
)

// startRecoverer runs automatic recovery as the controller's ServiceAccount with the
// opt-in recovery-rbac.yaml: what it does proves those grants are enough. fenced is the
// directory the fence command marks each node it powers off in.
func (c *cluster) startRecoverer(fenceCmd string) (stop func()) {
	return c.startRecovererAs("controller@test", fenceCmd)
}

func (c *cluster) startRecovererAs(holder, fenceCmd string) (stop func()) {
	for _, err := range kubetest.Apply(c.T, false, "../../deploy/namespace.yaml", "../../deploy/leases-role.yaml",
		"../../deploy/controller-rbac.yaml", "../../deploy/recovery-rbac.yaml") {
		c.T.Fatal(err)
	}
	c.Cfg.Recover.Automatic, c.Cfg.Recover.FenceCmd, c.Cfg.Recover.SharedStorage = true, fenceCmd, !c.localDisks
	c.Cfg.Recover.PodsGoneWithin = model.Duration(time.Second)
	cfg := kube.Tune(kubetest.Config(c.T), kube.Options{QPS: 200, Burst: 400})
	cfg.Impersonate.UserName = controllerUser
	kc := c.KubeClientFor(cfg)
	eng := ops.NewEngine(kc, c.Nova, c.Cfg, ops.EngineOptions{Holder: holder, Poll: 5 * time.Millisecond,
		StallAfter: 300 * time.Millisecond, Backoff: 20 * time.Millisecond, LeaseTTL: c.leaseTTL})
	pol := defaults()
	pol.Maintenance.Honour = c.Cfg.Policy.Maintenance.Honour // whose metadata is heard, as the configuration's
	rc := &controllers.Recoverer{Engine: eng, Policy: pol, Events: kc, Resync: cmp.Or(c.resync, 100*time.Millisecond),
		Log: func(l string) {
			c.T.Log(l)
			c.mu.Lock()
			c.logs = append(c.logs, l)
			c.mu.Unlock()
		}}
	rc.Notify = func(n model.Notice) {
		c.mu.Lock()
		c.notices = append(c.notices, n)
		c.mu.Unlock()
		if c.hook != nil {
			c.hook.Notify(n)
		}
	}
	rc.Paused = func(since time.Time) {
		c.mu.Lock()
		c.paused = append(c.paused, since)
		c.mu.Unlock()
	}
	forgetStorms(c.T, c.CS)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.mu.Lock()
	c.running++
	c.mu.Unlock()
	go func() { rc.Serve(ctx); close(done) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			c.mu.Lock()
			c.running--
			c.mu.Unlock()
		})
	}
}

// forgetStorms deletes the storm guard's record when the test ends: the API server is shared,
// and one test's storm (its cooldown) is not the next test's cluster's.
func forgetStorms(t *testing.T, cs kubernetes.Interface) {
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps(kube.LeaseNamespace).Delete(context.Background(), kube.RecordName("storm"), metav1.DeleteOptions{})
	})
}

// forgetRecoveryAtEnd deletes the node's recovery and fence records when the test ends: the
// API server is shared, and another test lists the recoveries.
func (c *cluster) forgetRecoveryAtEnd(node string) {
	c.T.Cleanup(func() {
		for _, name := range []string{ops.RecoveryRecord(node), "fence-" + node} {
			_ = c.CS.CoreV1().ConfigMaps(kube.LeaseNamespace).Delete(context.Background(), kube.RecordName(name), metav1.DeleteOptions{})
		}
	})
}

// die makes a node's machine dead five minutes ago: NotReady, its nova-compute down.
//
// A machine dies at once: its nova-compute falls silent no sooner than its node goes
// NotReady as automatic recovery sees it. With a recovery already running, the node goes
// NotReady first and the host dies once a pass has seen it (or a storm held the pass, or 5 s
// passed): on a loaded machine a pass can come seconds after the kill, and a nova-compute
// that stopped reporting longer than the tests' one-second thresholds before drainctl saw
// the node stop is a hung agent, not a dead machine (heartbeats.go), which is not this test.
func (c *cluster) die(node string) {
	kubetest.SetReady(c.T, c.CS, node, false, time.Now().Add(-5*time.Minute))
	c.mu.Lock()
	running := c.running > 0
	c.mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); running && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c.logged(node+" is not taken up: NotReady for") || c.logged("storm guard: no automatic recovery") {
			break
		}
	}
	c.World.KillHost(node)
}

// logged says whether automatic recovery logged a line holding s.
func (c *cluster) logged(s string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.logs, func(l string) bool { return strings.Contains(l, s) })
}

// localDiskOnVMB makes vm-a boot from a volume and leaves vm-b on a local disk, without shared
// storage: automatic recovery rebuilds vm-a and leaves vm-b to a person.
func (c *cluster) localDiskOnVMB() {
	c.localDisks = true
	c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
		for _, vm := range vms {
			vm.VolumeBacked = vm.Name == "vm-a"
		}
	})
}

// recoveredByItself makes the node's machine die under automatic recovery (the fence always
// succeeds) and returns its recovery record once done; the controller runs until the test ends.
func (c *cluster) recoveredByItself(node string) model.Recovery {
	c.T.Helper()
	c.die(node)
	c.T.Cleanup(c.startRecoverer("true {node}"))
	c.waitRecovered(node)
	rec, _ := c.recovery(node)
	return rec
}

// waitRecovered waits until the node's recovery record says done.
func (c *cluster) waitRecovered(node string) {
	c.T.Helper()
	kubetest.Eventually(c.T, 60*time.Second, node+" recovered", func() bool {
		rec, ok := c.recovery(node)
		return ok && rec.Outcome == string(ops.ResultDone)
	})
}

// recovery is the node's recovery record, if any.
func (c *cluster) recovery(node string) (model.Recovery, bool) {
	cm, err := c.CS.CoreV1().
		ConfigMaps(kube.LeaseNamespace).
		Get(kubetest.Ctx(c.T), kube.RecordName(ops.RecoveryRecord(node)), metav1.GetOptions{})
	if err != nil {
		return model.Recovery{}, false
	}
	var rec model.Recovery
	if err := json.Unmarshal([]byte(cm.Data["record.json"]), &rec); err != nil {
		c.T.Fatal(err)
	}
	return rec, true
}

// nodeEvents are the reasons of the Events on the node.
func (c *cluster) nodeEvents(node string) []string {
	list, err := c.CS.CoreV1().Events("default").List(kubetest.Ctx(c.T), metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
	if err != nil {
		c.T.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason)
	}
	return out
}

// A node that dies is recovered without a person: fenced by the fence command, its VMs
// rebuilt elsewhere, each in the ledger, Events on the node, the person on call told by
// webhook (with its token); the way back stays manual.
func TestAutomaticRecoveryOfADeadNode(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	marks := t.TempDir()
	srv := notifytest.Start(t, "s3cret")
	hook, err := notify.New(
		model.NotifyConfig{Webhook: srv.URL},
		func(k string) string { return map[string]string{"DRAINCTL_WEBHOOK_TOKEN": "s3cret"}[k] },
		nil,
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go hook.Run(ctx)
	c.hook = hook
	// A ledger left unfinished by an earlier outage (or planted): none of it is taken in.
	stale := model.Recovery{
		Node:    c0,
		Started: time.Now().Add(-time.Hour),
		Outage:  time.Now().Add(-2 * time.Hour),
		Outcome: string(ops.ResultInterrupted),
		Moves:   []model.VMMove{{VM: "vm-x", VMID: "id-x", Source: c0, Method: model.MoveRebuild, Status: model.MoveSucceeded}},
	}
	if err := c.Engine("operator@test", nil).SaveRecovery(kubetest.Ctx(t), stale); err != nil {
		t.Fatal(err)
	}
	c.die(c0)
	stop := c.startRecoverer("touch " + marks + "/{node}")
	defer stop()
	c.waitRecovered(c0)
	rec, _ := c.recovery(c0)
	if _, err := os.Stat(filepath.Join(marks, c0)); err != nil || !rec.Automatic || len(rec.Moves) != 2 {
		t.Fatalf("fence mark %v, record %+v", err, rec)
	}
	for _, m := range rec.Moves {
		vm, _ := c.World.ServerByName(m.VM)
		ids := c.World.MigrationIDs(vm.ID)
		if m.Status != model.MoveSucceeded || m.Dest == "" || m.Dest == c0 || vm.Host != m.Dest || m.Method != model.MoveRebuild ||
			len(ids) != 1 || m.MigrationID != ids[0] {
			t.Errorf("ledger %+v; the server is on %s, its migrations %v", m, vm.Host, ids)
		}
	}
	// The Event of the end is posted after the record is saved: wait for it, as for the notice.
	kubetest.Eventually(t, 10*time.Second, "the Events of the start and the end on "+c0, func() bool {
		ev := c.nodeEvents(c0)
		return slices.Contains(ev, "DrainctlRecoveryStarted") && slices.Contains(ev, "DrainctlRecoveryDone")
	})
	if k := c.Node(c0); k.Schedulable {
		t.Errorf("%s was put back: the way back is a person's", c0)
	}
	kubetest.Eventually(t, 10*time.Second, "the webhook told of the start and the end", func() bool {
		kinds := srv.Kinds(nil)
		return slices.Contains(kinds, model.NoticeRecoveryStarted) && slices.Contains(kinds, model.NoticeRecoveryDone)
	})
	// The notice of the end carries the ledger in counts and the time from NotReady (five
	// minutes before) to both VMs running elsewhere.
	kubetest.Eventually(
		t,
		10*time.Second,
		"the recovery-done notice",
		func() bool { _, ok := c.notice(model.NoticeRecoveryDone); return ok },
	) // said after the record
	if done, _ := c.notice(model.NoticeRecoveryDone); done.Ledger == nil || *done.Ledger != (model.LedgerCounts{Succeeded: 2}) ||
		done.VMsRunningAfter < 5*time.Minute || done.VMsRunningAfter > 6*time.Minute {
		t.Errorf("the recovery-done notice: %+v", done)
	}
	// --auto recoveries lists it with its ledger, one JSON object a recovery.
	var out, errOut bytes.Buffer
	a := &auto.Auto{Engine: c.Engine("operator@test", nil), JSON: true, Stdout: &out, Stderr: &errOut}
	if err := a.Do(kubetest.Ctx(t), "recoveries", nil); err != nil {
		t.Fatal(err)
	}
	var line struct {
		Type string `json:"type"`
		model.Recovery
	}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil || line.Type != "recovery" || line.Node != c0 || len(line.Moves) != 2 ||
		line.Moves[0].Status != model.MoveSucceeded {
		t.Errorf("--auto recoveries -o json: %v\n%s", err, out.String())
	}
}

// Without shared storage, a VM whose local disk a rebuild would lose is a person's to decide:
// automatic recovery rebuilds the VM that boots from a volume and leaves the other, in the
// ledger with its reason; the recovery is done, the node not empty, and said so.
func TestAutomaticRecoveryLeavesALocalDiskToAPerson(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.localDiskOnVMB()
	c.die(c0)
	stop := c.startRecoverer("true {node}")
	defer stop()
	kubetest.Eventually(t, 60*time.Second, c0+" recovered", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.Outcome != "running"
	})
	rec, _ := c.recovery(c0)
	a, _ := c.World.ServerByName("vm-a")
	b, _ := c.World.ServerByName("vm-b")
	if rec.Outcome != string(ops.ResultDone) || a.Host == c0 || b.Host != c0 || len(c.World.MigrationStatuses(b.ID)) != 0 {
		t.Errorf("record %+v; vm-a on %s, vm-b on %s", rec, a.Host, b.Host)
	}
	for _, m := range rec.Moves {
		if m.VM == "vm-b" && (m.Status != model.MoveLeft || !strings.Contains(m.Reason, "local disk")) {
			t.Errorf("vm-b in the ledger: %+v", m)
		}
	}
	if started, _ := c.notice(model.NoticeRecoveryStarted); !strings.Contains(started.Message, "1 VM(s) rebuilt elsewhere, 1 left") {
		t.Errorf("the start said %q", started.Message)
	}
	// The notice is posted after the record's outcome is written: wait for it.
	kubetest.Eventually(
		t,
		10*time.Second,
		"the recovery-done notice",
		func() bool { _, ok := c.notice(model.NoticeRecoveryDone); return ok },
	)
	if done, _ := c.notice(model.NoticeRecoveryDone); done.Ledger == nil || *done.Ledger != (model.LedgerCounts{Succeeded: 1, Left: 1}) ||
		done.VMsRunningAfter < 5*time.Minute {
		t.Errorf("the recovery-done notice: %+v", done)
	}
}

// Two of three compute nodes dead at once, with max_unhealthy = 1: a storm. Nothing is
// fenced, nothing rebuilt, and the storm is said on the nodes.
func TestAStormFencesNothing(t *testing.T) {
	c := newCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	marks := t.TempDir()
	c.die(c0)
	c.die(c1)
	stop := c.startRecoverer("touch " + marks + "/{node}")
	kubetest.Eventually(
		t,
		30*time.Second,
		"the storm said",
		func() bool { return slices.Contains(c.nodeEvents(c0), "DrainctlRecoveryStorm") },
	)
	time.Sleep(time.Second) // passes go on meanwhile: none may fence
	stop()
	if entries, _ := os.ReadDir(marks); len(entries) != 0 {
		t.Errorf("fenced during a storm: %v", entries)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c0 {
			t.Errorf("%s moved during a storm: on %s", name, vm.Host)
		}
	}
	if _, ok := c.recovery(c0); ok {
		t.Errorf("a recovery was recorded during a storm")
	}
	if told := c.told(); !slices.Equal(told, []model.NoticeKind{model.NoticeStorm}) {
		t.Errorf("told %v; want the storm, once", told)
	}
	// While it holds, --auto recoveries says so (and the TUI's header, from the same records).
	var out, errOut bytes.Buffer
	a := &auto.Auto{Engine: c.Engine("operator@test", nil), Stdout: &out, Stderr: &errOut}
	if err := a.Do(kubetest.Ctx(t), "recoveries", nil); err != nil || !strings.Contains(out.String(), "automatic recovery held: storm: ") ||
		!strings.Contains(out.String(), c0) {
		t.Errorf("--auto recoveries during a storm: %v\n%s", err, out.String())
	}
}

// The pause's time is the record's claim, said for the metrics (the paused-too-long alert):
// a record that cannot be read, or that names a time to come, holds recovery all the same and
// is said paused from the pass that first saw it, not never.
func TestAPauseRecordsTimeIsAClaim(t *testing.T) {
	c := newCluster(t, 100)
	t.Cleanup(func() {
		_ = c.CS.CoreV1().ConfigMaps(kube.LeaseNamespace).Delete(context.Background(), kube.RecordName("pause-recovery"), metav1.DeleteOptions{})
	})
	stop := c.startRecoverer("true {node}")
	defer stop()
	lastPaused := func() (time.Time, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.paused) == 0 {
			return time.Time{}, false
		}
		return c.paused[len(c.paused)-1], true
	}
	kubetest.Eventually(t, 10*time.Second, "a pass said not paused", func() bool { at, ok := lastPaused(); return ok && at.IsZero() })
	for _, forged := range []string{`not json`, `{"by":"mallory","reason":"x","at":"2099-01-01T00:00:00Z"}`} {
		before := time.Now()
		if err := c.Kube.SaveRecord(kubetest.Ctx(t), "pause-recovery", []byte(forged)); err != nil {
			t.Fatal(err)
		}
		kubetest.Eventually(t, 10*time.Second, "said paused for "+forged, func() bool { at, _ := lastPaused(); return !at.IsZero() })
		if at, _ := lastPaused(); at.Before(before.Add(-time.Second)) || at.After(time.Now()) {
			t.Errorf("record %s: said paused since %v; want when a pass first saw it (after %v)", forged, at, before)
		}
		if err := c.CS.CoreV1().ConfigMaps(kube.LeaseNamespace).Delete(kubetest.Ctx(t), kube.RecordName("pause-recovery"),
			metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		kubetest.Eventually(t, 10*time.Second, "said not paused once the record is gone", func() bool {
			at, _ := lastPaused()
			return at.IsZero()
		})
	}
}

// A person's pause in drainctl's namespace (--auto pause-recovery, as NodeHealthCheck's
// pauseRequests) holds every automatic recovery, cluster-wide, and says so; once lifted, the
// dead node is recovered.
func TestAPauseHoldsEveryRecovery(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	var out, errOut bytes.Buffer
	a := &auto.Auto{Engine: c.Engine("operator@test", nil), Run: ops.RunOptions{Why: "core switch firmware"}, Stdout: &out, Stderr: &errOut}
	if err := a.Do(kubetest.Ctx(t), "pause-recovery", nil); err != nil {
		t.Fatal(err)
	}
	c.die(c0)
	stop := c.startRecoverer("true {node}")
	defer stop()
	time.Sleep(time.Second) // passes go on meanwhile: none may start
	if _, ok := c.recovery(c0); ok {
		t.Fatalf("a recovery started while paused")
	}
	// The metrics hear since when (drainctl_recovery_paused_since_timestamp_seconds): the
	// pause record's time, then zero once it is lifted.
	pause, err := c.Engine("operator@test", nil).RecoveryPause(kubetest.Ctx(t))
	if err != nil || pause == nil {
		t.Fatalf("the pause record: %v %v", pause, err)
	}
	lastPaused := func() time.Time {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.paused) == 0 {
			return time.Time{}
		}
		return c.paused[len(c.paused)-1]
	}
	if got := lastPaused(); !got.Equal(pause.At) {
		t.Errorf("automatic recovery said it is paused since %v; want the record's %v", got, pause.At)
	}
	out.Reset()
	if err := a.Do(kubetest.Ctx(t), "recoveries", nil); err != nil ||
		!strings.Contains(out.String(), "automatic recovery is paused by operator@test") ||
		!strings.Contains(out.String(), "core switch firmware") {
		t.Errorf("--auto recoveries: %v\n%s", err, out.String())
	}
	// The node's own pause (its annotation) holds it still once the cluster's is lifted.
	annotate := func(value string) {
		patch := `{"metadata":{"annotations":{"` + controllers.PauseAnnotation + `":` + value + `}}}`
		if _, err := c.CS.CoreV1().Nodes().Patch(kubetest.Ctx(t), c0, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	annotate(`"disk replacement under way"`)
	if err := a.Do(kubetest.Ctx(t), "resume-recovery", nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, ok := c.recovery(c0); ok {
		t.Fatalf("a recovery started on a node annotated %s", controllers.PauseAnnotation)
	}
	if got := lastPaused(); !got.IsZero() {
		t.Errorf("automatic recovery said it is paused since %v after the resume; want zero", got)
	}
	annotate("null")
	kubetest.Eventually(t, 60*time.Second, c0+" recovered once both pauses are lifted", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.Outcome == string(ops.ResultDone)
	})
}

// A node NotReady for less than not_ready_for is recovered once it is not_ready_for old, not
// a resync later: here the resync never comes.
func TestADeadNodeIsRecoveredAtNotReadyFor(t *testing.T) {
	c := newCluster(t, 100)
	c.resync = time.Hour
	c.Cfg.Recover.NotReadyFor = model.Duration(3 * time.Second)
	c0 := c.Name("c0")
	c.World.KillHost(c0)
	kubetest.SetReady(t, c.CS, c0, false, time.Now())
	stop := c.startRecoverer("true {node}")
	defer stop()
	kubetest.Eventually(t, 30*time.Second, c0+" recovered", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.Outcome == string(ops.ResultDone)
	})
}

// Two nodes NotReady together for less than not_ready_for (two kubelets restarting) hold
// every recovery, page no one, and leave no cooldown: once one is back, the other, dead for
// long enough, is recovered as soon as drainctl has watched it for not_ready_for.
func TestAShortStormPagesNoOne(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Recover.NotReadyFor = model.Duration(5 * time.Second)
	c0, c1 := c.Name("c0"), c.Name("c1")
	c.World.KillHost(c0)
	kubetest.SetReady(t, c.CS, c0, false, time.Now().Add(-2*time.Second))
	kubetest.SetReady(t, c.CS, c1, false, time.Now().Add(-2*time.Second))
	stop := c.startRecoverer("true {node}")
	defer stop()
	time.Sleep(time.Second) // passes go on meanwhile
	if told := c.told(); len(told) != 0 || slices.Contains(c.nodeEvents(c0), "DrainctlRecoveryStorm") {
		t.Errorf("told %v, Events %v: a storm shorter than not_ready_for pages no one", told, c.nodeEvents(c0))
	}
	kubetest.SetReady(t, c.CS, c1, true, time.Now())
	kubetest.SetReady(t, c.CS, c0, false, time.Now().Add(-5*time.Minute))
	c.waitRecovered(c0)
	if slices.Contains(c.told(), model.NoticeStorm) {
		t.Errorf("told %v", c.told())
	}
}

// A fence command that fails stops the ladder: nothing rebuilt, and the refusal said.
func TestAFailedFenceRebuildsNothing(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.die(c0)
	marks := t.TempDir()
	c.Cfg.Recover.FenceRetries = 1
	stop := c.startRecoverer("echo {node} >> " + marks + "/tries; false")
	kubetest.Eventually(t, 30*time.Second, "the failed fence said", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.Outcome != "running"
	})
	time.Sleep(time.Second) // passes go on meanwhile: none may fence again in this outage
	stop()
	if tries, _ := os.ReadFile(filepath.Join(marks, "tries")); len(tries) != 2*(len(c0)+1) {
		t.Errorf("the fence ran %q: once and its one retry is all, in one outage", tries)
	}
	rec, _ := c.recovery(c0)
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c0 {
			t.Errorf("%s rebuilt without a fence: on %s", name, vm.Host)
		}
	}
	if rec.Outcome == string(ops.ResultDone) || rec.Error == "" || !slices.Contains(c.nodeEvents(c0), "DrainctlRecoveryFailed") {
		t.Errorf("record %+v, Events %v", rec, c.nodeEvents(c0))
	}
	if told := c.told(); !slices.Equal(
		told,
		[]model.NoticeKind{model.NoticeRecoveryStarted, model.NoticeFenceFailed, model.NoticeRecoveryFailed},
	) {
		t.Errorf("told %v; want the start, the fence failed, the recovery failed", told)
	}
	if failed, _ := c.notice(model.NoticeRecoveryFailed); failed.Ledger == nil || failed.Ledger.Pending != 2 ||
		failed.VMsRunningAfter != 0 {
		t.Errorf("the recovery-failed notice: %+v", failed)
	}
}

// Two controllers at once (two replicas, a leader change half way): one recovery. The fence
// runs once and each VM is rebuilt once, under the cluster-wide recovery lease.
func TestTwoRecoverersRecoverOnce(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	marks := t.TempDir()
	c.die(c0)
	fence := "echo {node} >> " + marks + "/tries"
	stop1 := c.startRecovererAs("controller-1@test", fence)
	defer stop1()
	stop2 := c.startRecovererAs("controller-2@test", fence)
	defer stop2()
	c.waitRecovered(c0)
	time.Sleep(500 * time.Millisecond) // the other's passes go on: none may start again
	if tries, _ := os.ReadFile(filepath.Join(marks, "tries")); len(tries) != len(c0)+1 {
		t.Errorf("the fence ran %q: once is all", tries)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if st := c.World.MigrationStatuses(mustServer(t, c, name)); len(st) != 1 {
			t.Errorf("%s: evacuations %v, want one", name, st)
		}
	}
}

func mustServer(t *testing.T, c *cluster, name string) string {
	vm, ok := c.World.ServerByName(name)
	if !ok {
		t.Fatalf("no server %s", name)
	}
	return vm.ID
}

// A node seen Ready again mid-ladder stops it before the next rebuild: its machine is back,
// and a VM rebuilt elsewhere would run beside its own disk.
func TestANodeBackMidLadderStopsTheRebuilds(t *testing.T) {
	c := newCluster(t, 1) // life speed: a rebuild takes seconds
	c.Cfg.Concurrency.MigrationsPerSource = 1
	c0 := c.Name("c0")
	c.die(c0)
	stop := c.startRecoverer("true {node}")
	defer stop()
	c.firstRebuild()
	// The ledger says so while it lasts: that VM ongoing since its request, the other pending.
	kubetest.Eventually(t, 10*time.Second, "the ledger showing the rebuild ongoing", func() bool {
		rec, _ := c.recovery(c0)
		st := map[string]int{}
		for _, m := range rec.Moves {
			if m.Status != model.MoveOngoing || !m.Started.IsZero() {
				st[m.Status]++
			}
		}
		return st[model.MoveOngoing] == 1 && st[model.MovePending] == 1
	})
	kubetest.SetReady(t, c.CS, c0, true, time.Now())
	rec, moved := c.stoppedMidLadder(c0)
	if moved != 1 || rec.Outcome != string(ops.ResultInterrupted) {
		t.Errorf("%d VM(s) moved after the node came back, record %+v", moved, rec)
	}
}

// A fence command that fails once (a BMC dropping a request) is run again within
// fence_timeout, and the recovery goes on.
func TestAFenceThatFailsOnceIsRetried(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	marks := t.TempDir()
	c.die(c0)
	stop := c.startRecoverer("test -e " + marks + "/{node} || { touch " + marks + "/{node}; false; }")
	defer stop()
	c.waitRecovered(c0)
}

// A ledger of this very outage, forged (or left by a run that claims too much): its moves are
// claims. A server it says was rebuilt from this host is counted so only when Nova shows its
// evacuation from here; a record of many moves costs a read of each, once a run, not once a
// write; and the recovery itself goes as it would.
func TestAForgedLedgerClaimsNothing(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	other := c.World.AddServer("never-here", c.Name("c1"), sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.die(c0)
	n, err := c.CS.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var outage time.Time // the outage the forger names: the node's own NotReady, for anyone to read
	for _, cond := range n.Status.Conditions {
		if cond.Type == "Ready" {
			outage = cond.LastTransitionTime.Time
		}
	}
	forged := model.Recovery{Node: c0, Started: time.Now().Add(-time.Minute), Outage: outage, Outcome: "running",
		Moves: []model.VMMove{{VM: "never-here", VMID: other.ID, Source: c0, Method: model.MoveRebuild, Status: model.MoveOngoing}}}
	const bogus = 200
	for i := range bogus {
		forged.Moves = append(
			forged.Moves,
			model.VMMove{VM: fmt.Sprintf("ghost-%d", i), VMID: fmt.Sprintf("00000000-0000-0000-0000-%012d", i),
				Source: c0, Method: model.MoveRebuild, Status: model.MovePending},
		)
	}
	if err := c.Engine("forger@test", nil).SaveRecovery(kubetest.Ctx(t), forged); err != nil {
		t.Fatal(err)
	}
	c.World.ResetStats()
	stop := c.startRecoverer("true {node}")
	defer stop()
	c.waitRecovered(c0)
	rec, _ := c.recovery(c0)
	if len(rec.Moves) != bogus+3 {
		t.Fatalf("the record of the same outage was not taken in: %d moves", len(rec.Moves))
	}
	for _, m := range rec.Moves {
		switch {
		case m.VM == "never-here" && m.Status == model.MoveSucceeded:
			t.Errorf("the forged move is counted rebuilt: %+v", m)
		case (m.VM == "vm-a" || m.VM == "vm-b") && m.Status != model.MoveSucceeded:
			t.Errorf("a real move: %+v", m)
		}
	}
	if n := c.World.Stats().ByRoute["GET /servers/{id}"]; n >= 2*bogus {
		t.Errorf("%d server reads for a record of %d forged moves: each is asked once a run", n, bogus+1)
	}
}

// A pause record that cannot be read holds every automatic recovery, as a readable one does:
// a recovery never starts on the guess that nobody meant to pause it.
func TestAnUnreadablePauseHolds(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	if err := c.Kube.SaveRecord(kubetest.Ctx(t), "pause-recovery", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	c.die(c0)
	stop := c.startRecoverer("true {node}")
	defer stop()
	time.Sleep(time.Second) // passes go on meanwhile: none may start
	if _, ok := c.recovery(c0); ok {
		t.Fatalf("a recovery started under an unreadable pause")
	}
	var out bytes.Buffer
	a := &auto.Auto{Engine: c.Engine("operator@test", nil), Stdout: &out, Stderr: &out}
	if err := a.Do(kubetest.Ctx(t), "resume-recovery", nil); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 60*time.Second, c0+" recovered once the pause is lifted", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.Outcome == string(ops.ResultDone)
	})
}

// restarted runs the controller for a few passes at a time, restarting it (a new process, a
// new leader: nothing kept in memory) between each: what holds must hold on the cluster.
func (c *cluster) restarted(fenceCmd string, times int) {
	c.resync = 50 * time.Millisecond
	for range times {
		stop := c.startRecoverer(fenceCmd)
		time.Sleep(200 * time.Millisecond) // a few passes
		stop()
	}
}

// A failing fence is not run again by itself in the same outage, however often the controller
// restarts: the recovery record of the outage says "failed", a person's now. One page.
func TestAFailedFenceIsNotRunAgainAfterARestart(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	runs := filepath.Join(t.TempDir(), "runs")
	fence := "echo {node} >> " + runs + "; exit 1"
	c.die(c0)
	stop := c.startRecoverer(fence)
	kubetest.Eventually(t, 30*time.Second, "the fence failed", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.APersons()
	})
	stop()
	first, _ := os.ReadFile(runs)
	c.restarted(fence, 6)
	after, _ := os.ReadFile(runs)
	if string(after) != string(first) || len(first) == 0 {
		t.Errorf(
			"the fence ran %d times before the restarts, %d after",
			strings.Count(string(first), "\n"),
			strings.Count(string(after), "\n"),
		)
	}
	if n := slices.Index(c.told(), model.NoticeFenceFailed); n < 0 ||
		strings.Count(fmt.Sprint(c.told()), string(model.NoticeFenceFailed)) != 1 {
		t.Errorf("told %v; want the failed fence once", c.told())
	}
}

// A storm's cooldown holds across restarts: the storm recorded, its end recorded, a
// controller started inside the cooldown fences nothing.
func TestAStormsCooldownSurvivesARestart(t *testing.T) {
	c := newCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	marks := t.TempDir()
	fence := "touch " + marks + "/{node}"
	c.die(c0)
	c.die(c1)
	stop := c.startRecoverer(fence)
	kubetest.Eventually(t, 30*time.Second, "the storm said", func() bool { return slices.Contains(c.told(), model.NoticeStorm) })
	stop()
	c.restarted(fence, 2) // restarted in the storm: still held
	c.World.ReviveHost(c1)
	kubetest.SetReady(t, c.CS, c1, true, time.Now())
	c.restarted(fence, 6) // the storm ends, then every restart falls in its cooldown
	if entries, _ := os.ReadDir(marks); len(entries) != 0 {
		t.Errorf("fenced within storm_cooldown after a restart: %v", entries)
	}
	if _, ok := c.recovery(c0); ok {
		t.Errorf("a recovery started within storm_cooldown")
	}
	if told := c.told(); strings.Count(fmt.Sprint(told), string(model.NoticeStorm)) != 1 {
		t.Errorf("told %v; want the storm once", told)
	}
}

// A person's recovery stays the person's: `recover --skip-vm vm-a` interrupted mid-rebuild
// is not finished by the controller with its own options (vm-a rebuilt); it says, once, that
// the person's recovery stopped and is not resumed.
func TestAPersonsRecoveryIsNotResumed(t *testing.T) {
	c := newCluster(t, 1) // life speed: a rebuild takes 3 s
	c0 := c.Name("c0")
	c.die(c0)
	e := c.Engine("alice@laptop", nil)
	ro := ops.RunOptions{Policy: defaults(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	ro.Policy.AcceptDiskLoss = true
	ro.Policy.SkipVMs = []string{"vm-a"}
	plan, err := e.Plan(kubetest.Ctx(t), model.OpRecover, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(kubetest.Ctx(t))
	_, err = e.Run(ctx, plan, ro, func(ev ops.Event) {
		if m, ok := ev.(ops.MigrationEvent); ok && m.VM == "vm-b" && m.State == ops.MigRequested {
			cancel() // Ctrl-C while vm-b is rebuilt
		}
	})
	if !errors.As(err, new(*ops.Interrupted)) {
		t.Fatalf("want the person's recovery interrupted, got %v", err)
	}
	if rec, _ := c.recovery(c0); rec.Automatic || rec.By != "alice@laptop" ||
		!slices.Contains(rec.Options, model.Given{Override: model.OverrideSkipVM, Object: "vm-a"}) ||
		!slices.Contains(rec.Options, model.Given{Override: model.OverrideConfirmFenced}) { // K, the person's word, given too
		t.Fatalf("the record does not say whose recovery it is: %+v", rec)
	}
	stop := c.startRecoverer("true {node}")
	time.Sleep(2 * time.Second) // passes go on meanwhile: none may resume it
	stop()
	if vm, _ := c.World.ServerByName("vm-a"); vm.Host != c0 || len(c.World.MigrationStatuses(vm.ID)) != 0 {
		t.Errorf("vm-a, skipped by the person, was rebuilt by the controller: on %s", vm.Host)
	}
	n, ok := c.notice(model.NoticeRecoveryRefused)
	if !ok || !strings.Contains(n.Message, "recovery of "+c0+" by alice@laptop stopped at") || !strings.Contains(n.Message, "not resumed") {
		t.Errorf("the notice: %+v (told %v)", n, c.told())
	}
}

// kubeletBeats plays a kubelet's heartbeat: the node's Lease in kube-node-lease, renewed every
// 200 ms until stop (the machine dies: its kubelet stops renewing).
func (c *cluster) kubeletBeats(node string) (stop func()) {
	leases := c.CS.CoordinationV1().Leases(kube.NodeLeaseNamespace)
	renew := func() {
		now := metav1.NewMicroTime(time.Now())
		l, err := leases.Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			l = &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: node},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &node, RenewTime: &now},
			}
			_, _ = leases.Create(context.Background(), l, metav1.CreateOptions{})
			return
		}
		l.Spec.RenewTime = &now
		_, _ = leases.Update(context.Background(), l, metav1.UpdateOptions{})
	}
	renew()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
				renew()
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(done); <-stopped }) }
	c.T.Cleanup(stop)
	return stop
}

// A NotReady written five minutes back (a backdated condition, a skewed clock) is no
// five-minute outage: drainctl counts not_ready_for on its own clock from the pass that first
// saw it, and recovers only then.
func TestABackdatedNotReadyWaitsForDrainctlsOwnCount(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Recover.NotReadyFor = model.Duration(3 * time.Second)
	c0 := c.Name("c0")
	c.die(c0) // NotReady since five minutes ago, by its timestamp
	started := time.Now()
	stop := c.startRecoverer("true {node}")
	defer stop()
	kubetest.Eventually(t, 30*time.Second, c0+" recovered", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.Outcome == string(ops.ResultDone)
	})
	if rec, _ := c.recovery(c0); rec.Started.Sub(started) < 3*time.Second {
		t.Errorf("recovered %s after the controller started; want not before not_ready_for (3s) on its own clock", rec.Started.Sub(started))
	}
}

// A kubelet that still renews its Lease while its node shows NotReady (it cannot post its
// status: a partition between it and the API server's status path) runs on a live machine:
// nothing is fenced, said once.
func TestARenewingKubeletIsNotFenced(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	marks := t.TempDir()
	c.kubeletBeats(c0)
	c.die(c0)
	stop := c.startRecoverer("touch " + marks + "/{node}")
	time.Sleep(3 * time.Second) // heartbeat_timeout is 1 s here: three times over
	stop()
	if entries, _ := os.ReadDir(marks); len(entries) != 0 {
		t.Errorf("fenced a node whose kubelet renews its Lease: %v", entries)
	}
	if _, ok := c.recovery(c0); ok {
		t.Errorf("a recovery started on a node whose kubelet renews its Lease")
	}
}

// nova-compute stopped reporting long before the node did (a hung agent: the VMs it left may
// well run): when the node then goes NotReady, nothing is fenced; a person is told.
func TestAHungComputeAgentPagesInsteadOfFencing(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	marks := t.TempDir()
	stopKubelet := c.kubeletBeats(c0)
	stop := c.startRecoverer("touch " + marks + "/{node}")
	defer stop()
	c.World.KillHost(c0)        // the agent stops reporting; the machine, its kubelet, go on
	time.Sleep(3 * time.Second) // longer than heartbeat_timeout (1 s here) before the node
	stopKubelet()
	kubetest.SetReady(t, c.CS, c0, false, time.Now().Add(-5*time.Minute))
	kubetest.Eventually(t, 30*time.Second, "a person told of the hung agent", func() bool {
		n, ok := c.notice(model.NoticeRecoveryRefused)
		return ok && strings.Contains(n.Message, "hung agent")
	})
	time.Sleep(2 * time.Second) // passes go on meanwhile: none may fence
	if entries, _ := os.ReadDir(marks); len(entries) != 0 {
		t.Errorf("fenced a node whose nova-compute hung long before it: %v", entries)
	}
	// Recorded: a person's, for a restarted controller too, and said while it lasts.
	holds, err := c.Engine("operator@test", nil).RecoveryHolds(kubetest.Ctx(t))
	if err != nil || !slices.ContainsFunc(holds, func(h model.RecoveryHold) bool {
		return h.Node == c0 && h.Kind == string(ops.ResultRefused) && strings.Contains(h.Why, "hung agent")
	}) {
		t.Errorf("holds %+v, %v; want %s refused for its hung agent", holds, err, c0)
	}
}

// The storm guard by failure domain: two dead nodes of one rack in a cluster of ten, under
// max_unhealthy = 3, are the rack (its switch), not two machines: nothing is fenced.
func TestARacksTwoDeadNodesAreAStorm(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Recover.MaxUnhealthy, c.Cfg.Recover.FailureDomain = "3", "rack"
	for i := 3; i < 10; i++ {
		name := c.Name(fmt.Sprintf("c%d", i))
		kubetest.Node(t, c.CS, name, kubetest.Label("rack", fmt.Sprintf("r%d", i/2)))
		c.World.AddHost(name, 64, 262144, 2000)
	}
	for i, n := range []string{"c0", "c1", "c2"} {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"rack":"r%d"}}}`, map[int]int{0: 0, 1: 0, 2: 1}[i])
		if _, err := c.CS.CoreV1().Nodes().Patch(kubetest.Ctx(t), c.Name(n), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	marks := t.TempDir()
	c.die(c.Name("c0"))
	c.die(c.Name("c1"))
	stop := c.startRecoverer("touch " + marks + "/{node}")
	kubetest.Eventually(t, 30*time.Second, "the storm said", func() bool { return slices.Contains(c.told(), model.NoticeStorm) })
	time.Sleep(time.Second)
	stop()
	if entries, _ := os.ReadDir(marks); len(entries) != 0 {
		t.Errorf("fenced two nodes of one rack: %v", entries)
	}
	if n, _ := c.notice(model.NoticeStorm); !strings.Contains(n.Message, "rack=r0") ||
		!strings.Contains(n.Message, "max_unhealthy_per_domain") {
		t.Errorf("the storm notice: %q", n.Message)
	}
}

// A fence check that reports the machine still on ([recover] fence_check_cmd): the fence
// command's exit 0 is no proof then, and nothing is rebuilt.
func TestAFenceCheckSayingOnRebuildsNothing(t *testing.T) {
	for name, check := range map[string]string{
		"says on": `echo "Chassis Power is on"; exit 1`,
		// A BMC that never answers, printing without end: cut at fence_timeout, proving nothing.
		"hangs": `while true; do echo "waiting for the BMC"; done`,
	} {
		t.Run(name, func(t *testing.T) { fenceCheckRebuildsNothing(t, check) })
	}
}

func fenceCheckRebuildsNothing(t *testing.T, check string) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.Cfg.Recover.FenceCheckCmd, c.Cfg.Recover.FenceTimeout = check, model.Duration(time.Second)
	c.die(c0)
	stop := c.startRecoverer("true {node}")
	defer stop()
	kubetest.Eventually(t, 30*time.Second, "the recovery refused", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.APersons()
	})
	rec, _ := c.recovery(c0)
	if !strings.Contains(rec.Error, "fence check does not report the machine off") {
		t.Errorf("the record's error: %q", rec.Error)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c0 || len(c.World.MigrationStatuses(vm.ID)) != 0 {
			t.Errorf("%s rebuilt though the fence check says the machine is on", name)
		}
	}
}

// One recovery, then the next: a node fenced and recovered stays dead (its machine is off),
// but it is no new failure. With max_unhealthy = 1 a second host dying afterwards is
// recovered, not held as a storm for as long as the first stays dead.
func TestASecondDeathAfterARecoveryIsRecovered(t *testing.T) {
	c := newCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	c.recoveredByItself(c0)
	if k := c.Node(c0); k.Ready {
		t.Fatalf("%s is Ready: the test needs it still dead", c0)
	}
	c.die(c1)
	kubetest.Eventually(t, 60*time.Second, c1+" recovered too", func() bool {
		rec, ok := c.recovery(c1)
		return ok && rec.Outcome == string(ops.ResultDone)
	})
	if slices.Contains(c.told(), model.NoticeStorm) {
		t.Errorf("told %v: a recovered node counted as a new failure", c.told())
	}
	// Two more at once are a storm all the same, and it names what it did not count.
	c3 := c.Name("c3")
	kubetest.Node(t, c.CS, c3)
	c.World.AddHost(c3, 64, 262144, 2000)
	c.die(c.Name("c2"))
	c.die(c3)
	kubetest.Eventually(t, 30*time.Second, "the storm said", func() bool { _, ok := c.notice(model.NoticeStorm); return ok })
	if n, _ := c.notice(model.NoticeStorm); !strings.Contains(n.Message, "2 of 4 compute nodes unhealthy") ||
		!strings.Contains(n.Message, "not counted: "+c0+" (recovered), "+c1+" (recovered)") {
		t.Errorf("the storm: %q", n.Message)
	}
}

// A person's recovery after automatic recovery finished (what it left for a person: a VM
// whose local disk a rebuild loses) keeps the automatic run's rebuild in the ledger: a rerun
// keeps the moves an earlier run of the outage made, finished or not.
func TestAPersonsRerunKeepsTheAutomaticRebuild(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.localDiskOnVMB()
	c.die(c0)
	c.leaseTTL = 2 * time.Second // the node's lease, kept after the recovery, expires soon after
	stop := c.startRecoverer("true {node}")
	c.waitRecovered(c0)
	stop()
	time.Sleep(3 * time.Second) // the lease the recovery kept has expired
	e := c.Engine("alice@laptop", nil)
	ro := ops.RunOptions{Policy: defaults(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	ro.Policy.AcceptDiskLoss = true
	plan, err := e.Plan(kubetest.Ctx(t), model.OpRecover, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(kubetest.Ctx(t), plan, ro, func(ops.Event) {}); err != nil {
		t.Fatal(err)
	}
	rec, _ := c.recovery(c0)
	status := map[string]string{}
	for _, m := range rec.Moves {
		status[m.VM] = m.Status
	}
	if rec.By != "alice@laptop" || rec.Automatic || status["vm-a"] != model.MoveSucceeded || status["vm-b"] != model.MoveSucceeded {
		t.Errorf(
			"the ledger after the person's run: by %s, automatic %v, moves %v; want vm-a (the automatic rebuild) and vm-b (the person's) succeeded",
			rec.By,
			rec.Automatic,
			status,
		)
	}
}

// Recovery priorities when room runs short: the other hosts have room for one of the dead
// host's two VMs. The small one its owner marked 9 is rebuilt; the large one marked 1 is left
// and named in the ledger with its priority (largest-first alone would have taken it).
func TestPrioritiesAreHonouredWhenRoomRunsShort(t *testing.T) {
	rec, c, c0 := recoveredShortOfRoom(t, func(*cluster) {})
	for _, m := range rec.Moves {
		switch m.VM {
		case "vm-b":
			if m.Status != model.MoveSucceeded {
				t.Errorf("vm-b, priority 9: %+v; want rebuilt", m)
			}
		case "vm-a":
			if m.Status != model.MoveLeft || !strings.Contains(m.Reason, "recovery priority 1") {
				t.Errorf("vm-a, priority 1: %+v; want left, its priority named", m)
			}
		}
	}
	if a, _ := c.World.ServerByName("vm-a"); a.Host != c0 || len(c.World.MigrationStatuses(a.ID)) != 0 {
		t.Errorf("vm-a was asked of Nova: on %s", a.Host)
	}
}

// An owner's recovery priority is heard within the operator's bounds: not at all for a project
// [policy.maintenance] honour leaves out, and never above [recover.priority] owner_max. Either
// way vm-b's owner's 9 does not put it before vm-a, which the operator ranks.
func TestAnOwnersPriorityIsHeardWithinTheOperatorsBounds(t *testing.T) {
	for name, set := range map[string]func(*cluster){
		"honour none": func(c *cluster) {
			c.Cfg.Policy.Maintenance.Honour = model.Honour{None: true}
			c.Cfg.Recover.Priority.Flavors = map[string]int{"m1.large": 6}
		},
		"owner_max 4": func(c *cluster) {
			c.World.SetMetadata("vm-a", model.RecoveryPriorityKey, "") // vm-a's owner says nothing: the operator's 6
			c.Cfg.Recover.Priority.OwnerMax = ptr.To(4)
			c.Cfg.Recover.Priority.Flavors = map[string]int{"m1.large": 6}
		},
	} {
		t.Run(name, func(t *testing.T) {
			rec, _, _ := recoveredShortOfRoom(t, set)
			for _, m := range rec.Moves {
				if m.VM == "vm-a" && m.Status != model.MoveSucceeded {
					t.Errorf("vm-a, the operator's 6: %+v; want rebuilt", m)
				}
				if m.VM == "vm-b" && m.Status != model.MoveLeft {
					t.Errorf("vm-b, its owner's 9 bounded: %+v; want left", m)
				}
			}
		})
	}
}

// recoveredShortOfRoom recovers c0 where the other hosts have room for one of its two VMs:
// vm-a (8 GiB, m1.large) its owner marked 1, vm-b (2 GiB) its owner marked 9. set changes the
// configuration (or the metadata) before the death.
func recoveredShortOfRoom(t *testing.T, set func(*cluster)) (model.Recovery, *cluster, string) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
		for _, vm := range vms {
			switch vm.Name {
			case "vm-a": // 8 GiB
				vm.Metadata = map[string]string{model.RecoveryPriorityKey: "1"}
			case "vm-b": // 2 GiB
				vm.Metadata = map[string]string{model.RecoveryPriorityKey: "9"}
			}
		}
	})
	set(c)
	// Fill the other hosts: 9,000 MiB free on c1 (either VM, not both), none on c2.
	inv, err := c.Engine("operator@test", nil).Inventory().Read(kubetest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, keep := range map[string]float64{c.Name("c1"): 9000, c.Name("c2"): 0} {
		n, _ := inv.Node(name)
		room, ok := n.Hypervisor.Room(4)
		if !ok {
			t.Fatalf("%s: no room known", name)
		}
		c.World.AddServer("filler-"+name, name, sim.Flavor{Name: "filler", RAMMB: int64(room.MemoryMB.Free() - keep), VCPUs: 1, DiskGB: 1})
	}
	return c.recoveredByItself(c0), c, c0
}

// The owner's stays on a dead host: staying means staying down, so the VM is rebuilt all the
// same, and that is said in the plan's notice and the ledger, not merely counted.
func TestAnOwnersStaysOnADeadHostIsSaid(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.World.SetMetadata("vm-a", model.VMPolicyKey, "stays")
	rec := c.recoveredByItself(c0)
	for _, m := range rec.Moves {
		if m.VM == "vm-a" && (m.Status != model.MoveSucceeded || !strings.Contains(m.Reason, "its owner asks that it stay")) {
			t.Errorf("vm-a in the ledger: %+v; want rebuilt, its owner's stays said", m)
		}
	}
	if n, _ := c.notice(model.NoticeRecoveryStarted); !strings.Contains(
		n.Message,
		"1 whose owner asks that it stay, rebuilt all the same (its host is dead): vm-a",
	) {
		t.Errorf("the start said %q", n.Message)
	}
}

// A failed fence's command line and its output never leave the operator's side: the Node's
// Events (readable in namespace default), the notices (a webhook) and the recovery record
// name the fence command and carry its last line masked.
func TestAFailedFenceLeaksNoSecret(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.die(c0)
	c.Cfg.Recover.FenceRetries = 0
	stop := c.startRecoverer("echo ipmitool -I lanplus -H {node}-bmc -U admin -Phunter2 failed: BMC_PW=hunter2; exit 1 # -P hunter2")
	kubetest.Eventually(t, 30*time.Second, "the failed fence said", func() bool {
		rec, ok := c.recovery(c0)
		return ok && rec.APersons()
	})
	stop()
	rec, _ := c.recovery(c0)
	events, err := c.CS.CoreV1().Events("default").List(kubetest.Ctx(t), metav1.ListOptions{FieldSelector: "involvedObject.name=" + c0})
	if err != nil {
		t.Fatal(err)
	}
	seen := []string{rec.Error}
	for _, e := range events.Items {
		seen = append(seen, e.Message)
	}
	c.mu.Lock()
	for _, n := range c.notices {
		seen = append(seen, n.Message)
	}
	c.mu.Unlock()
	all := strings.Join(seen, "\n")
	if strings.Contains(all, "hunter2") || !strings.Contains(all, "fence command") {
		t.Errorf("a secret left the operator's side, or the fence is not named:\n%s", all)
	}
	// A plan (what -o json prints, and logs keep) names the command, never its line.
	plan, err := c.Engine("operator@test", nil).Plan(kubetest.Ctx(t), model.OpRecover, c0,
		ops.RunOptions{
			Policy:        defaults(),
			RecoverParams: ops.RecoverParams{FenceCmd: "ipmitool -H {node}-bmc -U admin -P hunter2 chassis power off"},
		})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(plan); strings.Contains(string(out), "ipmitool") ||
		!strings.Contains(string(out), "the fence command given for this run") {
		t.Errorf("the plan shows the fence command's line, or does not name it:\n%s", out)
	}
}

// Faster than the node lifecycle controller and Nova (#51.4): a machine whose kubelet stops
// renewing its Lease and whose nova-compute stops reporting is dead once both have stood still
// for heartbeat_timeout, while its node is still Ready by its condition (the lifecycle
// controller writes NotReady 40 s later) and Nova still calls the service up: fenced once,
// nova-compute forced down, its VMs rebuilt. The outage is named by the kubelet's last renewal,
// so the NotReady that follows is the same outage: nothing is fenced again.
func TestADeadMachineIsRecoveredBeforeItsNodeIsNotReady(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Recover.NotReadyFor = model.Duration(time.Hour) // never: the heartbeats decide
	c0 := c.Name("c0")
	marks := t.TempDir()
	stopKubelet := c.kubeletBeats(c0)
	stop := c.startRecoverer("echo {node} >> " + marks + "/fenced")
	defer stop()
	time.Sleep(time.Second) // the controller sees the kubelet renew
	stopKubelet()
	c.World.KillHost(c0)
	died := time.Now()
	c.waitRecovered(c0)
	rec, _ := c.recovery(c0)
	if k := c.Node(c0); !k.Ready {
		t.Fatalf("%s NotReady: the test means a node still Ready by its condition", c0)
	}
	lease, err := c.CS.CoordinationV1().Leases(kube.NodeLeaseNamespace).Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Outage.Equal(lease.Spec.RenewTime.Time) {
		t.Errorf("the recovery names the outage %s; want its kubelet's last renewal %s", rec.Outage, lease.Spec.RenewTime.Time)
	}
	if took := rec.Started.Sub(lease.Spec.RenewTime.Time); took < time.Second || rec.Started.Sub(died) > 10*time.Second {
		t.Errorf(
			"recovered %s after the kubelet's last renewal (%s after the death); want not before heartbeat_timeout (1s)",
			took,
			rec.Started.Sub(died),
		)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host == c0 || vm.Status != "ACTIVE" {
			t.Errorf("%s after the recovery: %s on %s", name, vm.Status, vm.Host)
		}
	}
	if h, _ := c.World.Host(c0); !h.ForcedDown {
		t.Errorf("nova-compute on %s not forced down", c0)
	}
	// The node lifecycle controller's NotReady, 40 s later: the same outage.
	kubetest.SetReady(t, c.CS, c0, false, time.Now())
	time.Sleep(2 * time.Second) // passes go on meanwhile
	if data, _ := os.ReadFile(filepath.Join(marks, "fenced")); strings.Count(string(data), c0) != 1 {
		t.Errorf("fenced %d times; want once:\n%s", strings.Count(string(data), c0), data)
	}
	if again, _ := c.recovery(c0); !again.Started.Equal(rec.Started) {
		t.Errorf("a second recovery started at NotReady: %+v", again)
	}
}

// A kubelet that renews its Lease again after the fence (the machine was not off after all, its
// node still Ready by its condition) stops the recovery before the next rebuild: the fence
// proved the outage after the renewal it saw last, and a new renewal ends it.
func TestAKubeletRenewingMidLadderStopsTheRebuilds(t *testing.T) {
	c := newCluster(t, 1) // life speed: a rebuild takes seconds
	c.Cfg.Concurrency.MigrationsPerSource = 1
	c.Cfg.Recover.NotReadyFor = model.Duration(time.Hour) // the heartbeats decide
	c0 := c.Name("c0")
	stopKubelet := c.kubeletBeats(c0)
	stop := c.startRecoverer("true {node}")
	defer stop()
	time.Sleep(time.Second)
	stopKubelet()
	c.World.KillHost(c0)
	c.firstRebuild()
	c.kubeletBeats(c0) // it renews again
	rec, moved := c.stoppedMidLadder(c0)
	if moved != 1 || rec.Outcome != string(ops.ResultInterrupted) || !strings.Contains(rec.Error, "renewed its Lease") {
		t.Errorf("%d VM(s) moved after the kubelet renewed, record %+v", moved, rec)
	}
}

// firstRebuild waits until vm-a or vm-b is being rebuilt.
func (c *cluster) firstRebuild() {
	c.T.Helper()
	kubetest.Eventually(c.T, 30*time.Second, "the first rebuild", func() bool {
		a, _ := c.World.ServerByName("vm-a")
		b, _ := c.World.ServerByName("vm-b")
		return a.Status == "REBUILD" || b.Status == "REBUILD"
	})
}

// stoppedMidLadder waits until the node's recovery has stopped, and counts the VMs (vm-a,
// vm-b) moved off it by then.
func (c *cluster) stoppedMidLadder(node string) (model.Recovery, int) {
	c.T.Helper()
	kubetest.Eventually(c.T, 30*time.Second, "the recovery stopped", func() bool {
		rec, ok := c.recovery(node)
		return ok && rec.Outcome != "running"
	})
	rec, _ := c.recovery(node)
	moved := 0
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != node {
			moved++
		}
	}
	return rec, moved
}

// A fence record the controller wrote (it may write records, under recovery-rbac.yaml) is the
// controller's claim: a person's recover with no proof of its own does not take it, and says
// who wrote it; a record the person wrote is taken, as a rerun of their own recovery needs.
func TestAPersonTakesNoFenceTheControllerWrote(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	for _, err := range kubetest.Apply(c.T, false, "../../deploy/namespace.yaml", "../../deploy/leases-role.yaml", "../../deploy/controller-rbac.yaml", "../../deploy/recovery-rbac.yaml") {
		t.Fatal(err)
	}
	c.die(c0)
	ctx := kubetest.Ctx(t)
	cfg := kubetest.Config(t)
	cfg.Impersonate.UserName = controllerUser
	writeFence := func(kc *kube.Client, by string) {
		k, _, err := kc.NodeFresh(ctx, c0)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(model.NewFenceRecord(k, "the fence command exited 0", by, time.Now()))
		if err := kc.SaveRecord(ctx, "fence-"+c0, data); err != nil {
			t.Fatal(err)
		}
	}
	person := c.Engine("operator@test", nil)
	lossAccepted := defaults()
	lossAccepted.AcceptDiskLoss = true
	fenceStep := func() (model.Step, []model.Reason) {
		plan, err := person.Plan(ctx, model.OpRecover, c0, ops.RunOptions{Policy: lossAccepted})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(plan.Steps, func(s model.Step) bool { return s.Kind == model.StepFence })
		return plan.Steps[i], plan.Reasons
	}
	writeFence(c.KubeClientFor(cfg), "drainctl-controller/1-abc")
	step, reasons := fenceStep()
	blocked, named := false, false
	for _, r := range reasons {
		blocked = blocked || (r.Code == model.NotFenced && r.Severity == model.Blocks)
		named = named || strings.Contains(r.Message, controllerUser)
	}
	if step.Done || !blocked || !named {
		t.Errorf(
			"the controller's fence record: the fence step %+v, reasons %+v; want it not done, blocked, the writer named",
			step,
			reasons,
		)
	}
	writeFence(c.Kube, "operator@test") // the person's own (the test's admin user, this engine's holder)
	if step, reasons := fenceStep(); !step.Done || !strings.Contains(step.Detail, "fenced already") {
		t.Errorf("the person's own fence record: the fence step %+v, reasons %+v", step, reasons)
	}
}

// The cluster-wide recovery lease held by someone else (a stuck process, or an identity that
// should not hold it) holds every automatic recovery: said once, with its holder, never a
// silent stop; recovered once it is free.
func TestARecoveryLeaseHeldElsewhereIsSaidOnce(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	other := c.Engine("intruder@test", nil)
	_, release, err := other.HoldKey(kubetest.Ctx(t), "recovery")
	if err != nil {
		t.Fatal(err)
	}
	c.die(c0)
	stop := c.startRecoverer("true {node}")
	defer stop()
	said := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for _, l := range c.logs {
			if strings.Contains(l, "recovery lease") && strings.Contains(l, "intruder@test") {
				n++
			}
		}
		return n
	}
	kubetest.Eventually(t, 30*time.Second, "the held lease said", func() bool { return said() > 0 })
	time.Sleep(time.Second) // ten passes meanwhile
	if n := said(); n != 1 {
		t.Errorf("the held lease said %d times; want once", n)
	}
	if rec, ok := c.recovery(c0); ok {
		t.Errorf("recovered under another's lease: %+v", rec)
	}
	release()
	_ = other.ReleaseKey(kubetest.Ctx(t), "recovery")
	c.waitRecovered(c0)
}

// A recovery's plan says why its pod count is below the node list's: the pods that stay with
// the dead node (tolerating the out-of-service taint, or mirror pods) are counted and said.
func TestARecoverPlanSaysWhichPodsStay(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	kubetest.Pod(t, c.CS, c.NS, "agent", c0, kubetest.Tolerates("node.kubernetes.io/out-of-service"))
	c.die(c0)
	lossAccepted := defaults()
	lossAccepted.AcceptDiskLoss = true
	kubetest.Eventually(t, 10*time.Second, "the agent pod in the engine's cache", func() bool {
		plan, err := c.Engine("operator@test", nil).
			Plan(kubetest.Ctx(t), model.OpRecover, c0, ops.RunOptions{Policy: lossAccepted, RecoverParams: ops.RecoverParams{ConfirmFenced: true}})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(plan.Steps, func(s model.Step) bool { return s.Kind == model.StepPodsGone })
		return i >= 0 && strings.Contains(plan.Steps[i].Detail, "(1 more stay: mirror pods and those tolerating the out-of-service taint")
	})
}

// A person's recovery under way is said so, never "stopped … not resumed" (the controller's
// passes see it mid-rebuild), and it ends done with no refusal told.
func TestAPersonsRecoveryUnderWayIsNotCalledStopped(t *testing.T) {
	c := newCluster(t, 1) // life speed: a rebuild takes 3 s
	c0 := c.Name("c0")
	c.die(c0)
	e := c.Engine("alice@laptop", nil)
	ro := ops.RunOptions{Policy: defaults(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	ro.Policy.AcceptDiskLoss = true
	plan, err := e.Plan(kubetest.Ctx(t), model.OpRecover, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	var stop func()
	_, err = e.Run(kubetest.Ctx(t), plan, ro, func(ev ops.Event) {
		if m, ok := ev.(ops.MigrationEvent); ok && m.State == ops.MigRequested && stop == nil {
			stop = c.startRecoverer("true {node}") // its passes see the person's recovery mid-rebuild
		}
	})
	if err != nil {
		t.Fatalf("the person's recovery: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	if n, ok := c.notice(model.NoticeRecoveryRefused); ok {
		t.Errorf("told %q of a person's recovery that ran to its end", n.Message)
	}
	c.mu.Lock()
	logs := strings.Join(c.logs, "\n")
	c.mu.Unlock()
	if !strings.Contains(logs, "recovery of "+c0+" by alice@laptop under way") {
		t.Errorf("the controller did not say the person's recovery is under way:\n%s", logs)
	}
}

// An automatic recovery that ended gives the node's lease back: a person acts on the node at
// once (its uncordon, a rerun), not once the lease has lapsed.
func TestAnAutomaticRecoveryGivesTheNodeBack(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.recoveredByItself(c0)
	kubetest.Eventually(t, 10*time.Second, "the controller's lease on "+c0+" given back", func() bool {
		h, _ := c.Engine("observer@test", nil).NodeHolder(kubetest.Ctx(t), c0)
		return h == ""
	})
}
