package ops_test

// More than one actor on one node: other engines (their own identities, one API server),
// someone moving a VM by hand, an API server that goes away. Each test fails on an engine
// that trusts its own view of the world.

import (
	"bytes"

	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drainctl/drainctl/ui/auto"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

func forced() ops.RunOptions {
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	return ro
}

// slow makes vm-a converge slowly (until fast is called), so that things can happen while
// it migrates.
func slow(c *simtest.Cluster) (fast func()) {
	vmA, _ := c.World.ServerByName("vm-a")
	c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0.9 * (1 << 30) })
	return func() {
		c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0 })
	}
}

// runAsync runs op in the background; the channel gets its error.
func runAsync(t *testing.T, e *ops.Engine, op model.OpKind, node string, ro ops.RunOptions, rec *simtest.Recorder) <-chan error {
	t.Helper()
	plan, err := e.Plan(kubetest.Ctx(t), op, node, ro)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(kubetest.Ctx(t), plan, ro, rec.Emit)
		done <- err
	}()
	return done
}

func migratingNow(c *simtest.Cluster, name string) func() bool {
	return func() bool {
		vm, _ := c.World.ServerByName(name)
		return vm.TaskState == "migrating"
	}
}

func migrations(c *simtest.Cluster, name string) int {
	vm, _ := c.World.ServerByName(name)
	return len(c.World.MigrationStatuses(vm.ID))
}

func setLease(t *testing.T, c *simtest.Cluster, node, holder string, ttl time.Duration) {
	now := metav1.NewMicroTime(time.Now())
	secs := int32(ttl.Seconds())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "drainctl-" + node, Namespace: kube.LeaseNamespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}}
	c.CS.CoreV1().Namespaces() // the namespace is created by the engines; make sure of it here too
	kubetest.Namespace(t, c.CS, kube.LeaseNamespace)
	leases := c.CS.CoordinationV1().Leases(kube.LeaseNamespace)
	_ = leases.Delete(kubetest.Ctx(t), l.Name, metav1.DeleteOptions{}) // set anew: a test may set one node's lease twice
	if _, err := leases.Create(kubetest.Ctx(t), l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Item 1: every process is its own holder; a second one is refused, told who and since when;
// a holder whose process is gone (same machine, dead pid) is taken over at once, a live one
// of another machine is not.
func TestHoldersAreUniqueAndTakeoverIsExplicit(t *testing.T) {
	a, b := ops.DefaultHolder(), ops.DefaultHolder()
	if a == b || !strings.HasPrefix(a, "drainctl/") {
		t.Fatalf("two engines of one process share an identity: %q %q", a, b)
	}
	c := newCluster(t, 20)
	fast := slow(c)
	c0 := c.Name("c0")
	ea, eb := c.Engine(a, nil), c.Engine(b, nil)
	done := runAsync(t, ea, model.OpEvacuate, c0, forced(), &simtest.Recorder{})
	kubetest.Eventually(t, 20*time.Second, "vm-a migrating", migratingNow(c, "vm-a"))
	_, _, err := run(t, eb, model.OpEvacuate, c0, forced())
	var held *ops.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != a || held.Since.IsZero() || !strings.Contains(err.Error(), "since") {
		t.Fatalf("second engine on the same node: %v", err)
	}
	fast()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := migrations(c, "vm-a") + migrations(c, "vm-b"); n != 2 {
		t.Errorf("%d migrations for 2 VMs", n)
	}

	// A dead holder of this machine: its lease is taken over without waiting for it to expire.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	c1, c2 := c.Name("c1"), c.Name("c2")
	// The same hostname in another PID namespace (a container beside this one, or an older
	// drainctl that named none): its PID absent here proves nothing. Refused.
	space := strings.Split(ops.DefaultHolder(), "/")[3]
	for _, other := range []string{fmt.Sprintf("drainctl/someone@%s/%d-abcdef/0123456789ab", host, dead.Process.Pid),
		fmt.Sprintf("drainctl/someone@%s/%d-abcdef", host, dead.Process.Pid)} {
		setLease(t, c, c1, other, time.Hour)
		if _, _, err := run(t, eb, model.OpCordon, c1, ops.RunOptions{Policy: defaults()}); !errors.As(err, new(*ops.LeaseHeldError)) {
			t.Errorf("%s: a holder in another process space was taken for gone: %v", other, err)
		}
	}
	setLease(t, c, c1, fmt.Sprintf("drainctl/someone@%s/%d-abcdef/%s", host, dead.Process.Pid, space), time.Hour)
	if _, _, err := run(t, eb, model.OpCordon, c1, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Errorf("a dead holder's lease is not taken over: %v", err)
	}
	// A holder on another machine is alive as far as anyone can prove: refused.
	setLease(t, c, c2, "drainctl/someone@elsewhere/1-abcdef", time.Hour)
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.AllowLastNode = true // c0 and c1 are cordoned: the lease is what is tested
	if _, _, err := run(t, eb, model.OpCordon, c2, ro); !errors.As(err, &held) {
		t.Errorf("a live holder's lease was taken: %v", err)
	}
}

// Item 2: abort and rollback from another engine stop the running evacuation at its next
// safe point, through a request on the node; nothing is done by two holders.
func TestAbortAndRollbackFromAnotherEngine(t *testing.T) {
	for _, op := range []model.OpKind{model.OpAbort, model.OpRollback} {
		t.Run(string(op), func(t *testing.T) {
			c := newCluster(t, 20)
			slow(c)
			c0 := c.Name("c0")
			a, b := ops.DefaultHolder(), ops.DefaultHolder()
			ea, eb := c.Engine(a, nil), c.Engine(b, nil)
			rec := &simtest.Recorder{}
			done := runAsync(t, ea, model.OpEvacuate, c0, forced(), rec)
			kubetest.Eventually(t, 20*time.Second, "vm-a migrating", migratingNow(c, "vm-a"))
			_, rep, err := run(t, eb, op, c0, ops.RunOptions{Policy: defaults()})
			if err != nil {
				t.Fatalf("%s from another engine: %v", op, err)
			}
			// The evacuation has stopped before the abort went on, and says why.
			errA := <-done
			var intr *ops.Interrupted
			var req *ops.CancelRequest
			if !errors.As(errA, &intr) || !errors.As(errA, &req) || req.By != b {
				t.Fatalf("the running evacuation: %v", errA)
			}
			if rep.Result != ops.ResultDone {
				t.Errorf("%s: %+v", op, rep)
			}
			if n := migrations(c, "vm-b"); n != 0 {
				t.Errorf("vm-b was migrated %d times after the %s", n, op)
			}
			vmA, _ := c.World.ServerByName("vm-a")
			if vmA.Host != c0 || vmA.TaskState != "" {
				t.Errorf("vm-a's migration was not aborted: %+v", vmA)
			}
			n := c.Node(c0)
			if op == model.OpRollback {
				h, _ := c.World.Host(c0)
				if !n.Schedulable || n.HasTaint(c.Cfg.Policy.TaintKey) || !h.Enabled {
					t.Errorf("rollback left the node %+v, compute %+v", n, h)
				}
				if _, j := ops.ReadJournal(n); j {
					t.Error("rollback left a journal")
				}
			} else if j, _ := ops.ReadJournal(n); j.Phase != ops.PhaseAborted {
				t.Errorf("journal after abort: %+v", j)
			}
			if _, ok := n.Annotations[ops.CancelAnnotation]; ok {
				t.Error("the cancel request was left on the node")
			}
			if holder, _, _ := c.Kube.LeaseHolder(kubetest.Ctx(t), c0); holder != "" {
				t.Errorf("lease still held by %s", holder)
			}
		})
	}
}

// Item 2: a holder that does not answer (another machine, lease renewed) is waited for, a
// bounded time, then the abort is refused: nothing changed, its lease untouched.
func TestAbortWaitsBoundedForAHolderThatDoesNotStop(t *testing.T) {
	c := newCluster(t, 20)
	c1 := c.Name("c1")
	other := "drainctl/someone@elsewhere/1-abcdef"
	setLease(t, c, c1, other, time.Hour)
	e := c.Engine(ops.DefaultHolder(), func(o *ops.EngineOptions) { o.CancelWait = 500 * time.Millisecond })
	_, _, err := run(t, e, model.OpRollback, c1, ops.RunOptions{Policy: defaults()})
	var held *ops.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != other || !strings.Contains(err.Error(), "did not stop within") {
		t.Fatalf("rollback against a live holder: %v", err)
	}
	if holder, _, _ := c.Kube.LeaseHolder(kubetest.Ctx(t), c1); holder != other {
		t.Errorf("the holder's lease was released or taken: %q", holder)
	}
	if n := c.Node(c1); !n.Schedulable || n.HasTaint(c.Cfg.Policy.TaintKey) {
		t.Errorf("the node was changed: %+v", n)
	}
}

// Item 3: an API outage longer than the lease's TTL: the holder cannot renew, stops at its
// next safe point and records "interrupted (lease lost)"; it starts no migration after.
func TestLeaseLossStopsTheRun(t *testing.T) {
	c := newCluster(t, 20)
	slow(c)
	c0 := c.Name("c0")
	e := c.Engine(ops.DefaultHolder(), func(o *ops.EngineOptions) { o.LeaseTTL = time.Second }) // leases count whole seconds
	done := runAsync(t, e, model.OpEvacuate, c0, forced(), &simtest.Recorder{})
	kubetest.Eventually(t, 20*time.Second, "vm-a migrating", migratingNow(c, "vm-a"))
	c.Muts.Down.Store(true) // the API server goes away for longer than the TTL
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Second):
		c.Muts.Down.Store(false)
		err = <-done
	}
	c.Muts.Down.Store(false)
	var intr *ops.Interrupted
	if !errors.As(err, &intr) || !errors.Is(err, ops.ErrLeaseLost) || !strings.Contains(err.Error(), "lease lost") {
		t.Fatalf("want an interruption for the lost lease, got %v", err)
	}
	kubetest.Eventually(t, 15*time.Second, "the journal saying why", func() bool {
		j, _ := ops.ReadJournal(c.Node(c0))
		return j.Phase == ops.PhaseInterrupted && j.Error == "lease lost"
	})
	if n := migrations(c, "vm-b"); n != 0 {
		t.Errorf("vm-b migrated %d times after the lease was lost", n)
	}
}

// Item 4: a VM moved by someone else while the evacuation ran is not migrated again: it
// left by itself, and the report says so with its real place.
func TestVMMovedBySomeoneElseIsSkipped(t *testing.T) {
	// Nova runs two live migrations per host, drainctl asks for one at a time: an operator's
	// own migration of vm-b can finish while drainctl's of vm-a runs.
	c := simtest.NewClusterWith(t, sim.Options{Scale: 20, Seed: 7, MaxConcurrentLiveMigrations: 2})
	fast := slow(c)
	c0, c2 := c.Name("c0"), c.Name("c2")
	e := c.Engine(ops.DefaultHolder(), nil)
	rec := &simtest.Recorder{}
	var rep ops.Report
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, forced())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var err error
		rep, err = e.Run(kubetest.Ctx(t), plan, forced(), rec.Emit)
		done <- err
	}()
	kubetest.Eventually(t, 20*time.Second, "vm-a migrating", migratingNow(c, "vm-a"))
	vmB, _ := c.World.ServerByName("vm-b")
	if err := c.Nova.LiveMigrate(kubetest.Ctx(t), vmB.ID, c2); err != nil { // an operator, by hand
		t.Fatal(err)
	}
	kubetest.Eventually(t, 20*time.Second, "vm-b moved by hand", func() bool {
		vm, _ := c.World.ServerByName("vm-b")
		return vm.Host == c2 && vm.TaskState == ""
	})
	fast()
	if err := <-done; err != nil {
		t.Fatalf("%v\n%s", err, rec.Transcript(c.Px))
	}
	if n := migrations(c, "vm-b"); n != 1 {
		t.Errorf("vm-b migrated %d times", n)
	}
	for _, v := range rep.VMs {
		if v.VM == "vm-b" && (v.Result != ops.MigSkipped || !strings.Contains(v.Message, "left the node by itself (now on "+c2+")")) {
			t.Errorf("vm-b's report: %+v", v)
		}
	}
}

// Item 5: migrations_per_cluster = 1 holds across three engines working three nodes at once:
// counted in Nova, not per process.
func TestClusterCapAcrossEngines(t *testing.T) {
	c := newCluster(t, 50)
	c.Cfg.Concurrency.MigrationsPerCluster = 1
	c1, c2 := c.Name("c1"), c.Name("c2")
	c.World.AddServer("vm-c", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.AddServer("vm-d", c2, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.AddHost(c.Name("spare"), 64, 262144, 2000) // where they go: every node is emptied
	c.World.Stop("vm-c")                               // cold moves count against the same cap as live ones
	c.World.Stop("vm-d")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, node := range []string{"c0", "c1", "c2"} {
		e := c.Engine(ops.DefaultHolder(), nil)
		ro := ops.RunOptions{Policy: defaults(), Leaving: []string{c.Name("c0"), c1, c2}, EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
		plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c.Name(node), ro)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Run(kubetest.Ctx(t), plan, ro, func(ops.Event) {})
		}()
	}
	wg.Wait()
	if got := c.World.Stats().MaxConcurrentMigrations; got != 1 {
		t.Errorf("at most %d migrations ran at once under migrations_per_cluster = 1", got)
	}
	for _, name := range []string{"vm-a", "vm-b", "vm-c", "vm-d"} {
		if n := migrations(c, name); n > 1 {
			t.Errorf("%s migrated %d times", name, n)
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("engine %d: %v", i, err)
		}
	}
}

// Item 7: an API server failing evictions (503) and journal writes for a moment: retried
// with backoff, the evacuation finishes, and the journal is right.
func TestTransientAPIErrorsAreRetried(t *testing.T) {
	c := newCluster(t, 50)
	c0 := c.Name("c0")
	e := c.Engine(ops.DefaultHolder(), nil)
	c.Muts.FailEvictions.Store(3)
	c.Muts.FailNodePatches.Store(2)
	rec, rep, err := run(t, e, model.OpEvacuate, c0, forced())
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Transcript(c.Px))
	}
	if c.Muts.FailEvictions.Load() != 0 || c.Muts.FailNodePatches.Load() != 0 {
		t.Fatal("the faults were not played")
	}
	retried := 0
	for _, ev := range rec.Events() {
		if p, ok := ev.(ops.PodEvent); ok && p.State == ops.PodRetrying {
			retried++
		}
	}
	if retried != 3 {
		t.Errorf("%d retries reported for 3 failed evictions", retried)
	}
	for _, p := range rep.Pods {
		if p.Result != ops.PodGone {
			t.Errorf("pod %+v", p)
		}
	}
	if j, _ := ops.ReadJournal(c.Node(c0)); j.Phase != ops.PhaseDone {
		t.Errorf("journal %+v", j)
	}
	_ = context.Background
}

// Item 6: a node that runs the hypervisor pods but maps to no Nova host is not evacuated as
// if it had no VMs; two nodes mapped to one host are refused too (the join would depend on
// their order).
func TestUnmappedOrSharedHostIsABlocker(t *testing.T) {
	c := newCluster(t, 50)
	w9, w7, c1 := c.Name("w9"), c.Name("w7"), c.Name("c1")
	kubetest.Node(t, c.CS, w9)
	kubetest.Node(t, c.CS, w7)
	ds := kubetest.DaemonSet(t, c.CS, c.NS, "libvirt-w9")
	kubetest.Pod(t, c.CS, c.NS, "libvirt-w9", w9, kubetest.Owned("DaemonSet", "libvirt-w9", ds), kubetest.Labels("application", "libvirt"))
	c.Cfg.Mapping.Hosts = map[string]string{w7: c1} // a typo in [mapping]: w7 claims c1's host
	e := c.Engine(ops.DefaultHolder(), nil)
	kubetest.Eventually(t, 10*time.Second, "the new nodes and pod in the cache", func() bool {
		return len(c.Kube.PodsOn(w9)) == 1 && func() bool { _, ok := c.Kube.Node(w7); return ok }()
	})
	for node, code := range map[string]model.ReasonCode{w9: model.NoNovaHost, w7: model.HostConflict, c1: model.HostConflict} {
		plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, node, forced())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range plan.Blockers() {
			found = found || r.Code == code
		}
		if !found {
			t.Errorf("%s: want a %s blocker, got %+v", node, code, plan.Reasons)
		}
	}
	_, _, err := run(t, e, model.OpEvacuate, w9, forced())
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "no Nova host matches node "+w9) {
		t.Errorf("evacuating the unmapped hypervisor: %v", err)
	}
	if n := c.Node(w9); !n.Schedulable {
		t.Error("the refused node was changed")
	}
	// doctor lists both findings.
	var out bytes.Buffer
	err = (&auto.Auto{Engine: e, Run: forced(), Stdout: &out, Stderr: &out}).Do(kubetest.Ctx(t), "doctor", nil)
	if err == nil || !strings.Contains(out.String(), "NoNovaHost: "+w9) || !strings.Contains(out.String(), "HostConflict: "+w7) {
		t.Errorf("doctor: %v\n%s", err, out.String())
	}
}

// A lease taken over mid-run (someone edits it, a clock skews) is seen before the next change,
// not at the next renewal (every 20 s here): the migration waiting behind the one in flight
// never starts, and the run stops saying who holds the node now.
func TestLeaseTakenOverIsSeenBeforeTheNextChange(t *testing.T) {
	c := newCluster(t, 20)
	converge := slow(c)
	c0 := c.Name("c0")
	e := c.Engine(ops.DefaultHolder(), func(o *ops.EngineOptions) { o.LeaseTTL = time.Minute })
	done := runAsync(t, e, model.OpEvacuate, c0, forced(), &simtest.Recorder{})
	kubetest.Eventually(t, 20*time.Second, "vm-a migrating", migratingNow(c, "vm-a"))
	l, err := c.CS.CoordinationV1().Leases(kube.LeaseNamespace).Get(kubetest.Ctx(t), "drainctl-"+c0, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := "drainctl/colleague@elsewhere/4242-abcdef"
	l.Spec.HolderIdentity = &other
	if _, err := c.CS.CoordinationV1().Leases(kube.LeaseNamespace).Update(kubetest.Ctx(t), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	converge() // vm-a finishes: the next step would be vm-b's migration
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(10 * time.Second): // well before the renewal would have noticed
		t.Fatal("the run went on after its lease was taken over")
	}
	if !errors.Is(runErr, ops.ErrLeaseLost) || !strings.Contains(runErr.Error(), other) {
		t.Errorf("want an interruption naming the new holder, got %v", runErr)
	}
	if n := migrations(c, "vm-b"); n != 0 {
		t.Errorf("vm-b migrated %d times after the lease was taken over", n)
	}
}

// The caps hold for rebuilds as for migrations: while a dead host's VM is being rebuilt,
// another engine's live migration waits under migrations_per_cluster = 1 (the rebuild is
// seen in Nova's list), and the recovery's own second rebuild waits too.
func TestRebuildsCountAgainstTheClusterCap(t *testing.T) {
	c := newCluster(t, 1) // life speed: a rebuild takes 3 s
	c.Cfg.Concurrency.MigrationsPerCluster = 1
	c.Cfg.Concurrency.MigrationsPerSource = 2
	c0, c1 := c.Name("c0"), c.Name("c1")
	c.World.AddServer("vm-c", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.KillHost(c0)
	kubetest.SetReady(t, c.CS, c0, false, time.Now().Add(-5*time.Minute))
	kubetest.Eventually(
		t,
		10*time.Second,
		"the engines' cache seeing "+c0+" NotReady",
		func() bool { k, _ := c.Engine("observer@test", nil).KubeNode(c0); return !k.Ready },
	)
	run := func(kind model.OpKind, node string, ro ops.RunOptions) <-chan error {
		e := c.Engine(ops.DefaultHolder(), nil)
		plan, err := e.Plan(kubetest.Ctx(t), kind, node, ro)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := e.Run(kubetest.Ctx(t), plan, ro, func(ops.Event) {})
			done <- err
		}()
		return done
	}
	recovered := run(model.OpRecover, c0, ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}})
	kubetest.Eventually(t, 20*time.Second, "a VM of the dead host being rebuilt", func() bool {
		select {
		case err := <-recovered:
			t.Fatalf("the recovery ended before a rebuild was seen: %v", err)
		default:
		}
		a, _ := c.World.ServerByName("vm-a")
		b, _ := c.World.ServerByName("vm-b")
		return a.Status == "REBUILD" || b.Status == "REBUILD"
	})
	evacuated := run(model.OpEvacuate, c1, ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}})
	for i, done := range []<-chan error{recovered, evacuated} {
		if err := <-done; err != nil {
			t.Fatalf("engine %d: %v", i, err)
		}
	}
	if got := c.World.Stats().MaxConcurrentMigrations; got != 1 {
		t.Errorf("%d moves at once (rebuilds and a live migration) under migrations_per_cluster = 1", got)
	}
	for _, name := range []string{"vm-a", "vm-b", "vm-c"} {
		if vm, _ := c.World.ServerByName(name); vm.Host == c0 || vm.Host == c1 || migrations(c, name) != 1 {
			t.Errorf("%s: on %s after %d move(s)", name, vm.Host, migrations(c, name))
		}
	}
}

// A VM migrating into the node when its evacuation begins (a colleague's migration by hand,
// another node's evacuation that chose it just before its nova-compute was disabled) is
// waited for, then moved out too: "done" means empty, and the node is never called empty
// with a VM on it.
func TestVMArrivingDuringEvacuationIsMovedToo(t *testing.T) {
	c := newCluster(t, 20)
	c0, c1 := c.Name("c0"), c.Name("c1")
	in := colleagueMigrates(t, c, c1, c0, false)
	ro := forced()
	ro.VMsOnly = true
	rec, _, err := run(t, c.Engine("t", nil), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	for _, name := range []string{"vm-a", "vm-b", "incoming"} {
		if vm, _ := c.World.ServerByName(name); vm.Host == c0 {
			t.Errorf("%s is on %s after its evacuation said done", name, c0)
		}
	}
	if ms := c.World.MigrationStatuses(in.ID); len(ms) != 2 {
		t.Errorf("incoming's migrations: %v (want the colleague's, then drainctl's)", ms)
	}
}

// A colleague's move into the node that never ends (the guest dirties memory faster than it
// is copied) is not drainctl's to abort: after timeouts.migration the evacuation stops and
// names it, instead of waiting for the whole operation's timeout; the host stays disabled.
func TestEndlessMoveIntoTheNodeIsNamedAfterTheMigrationTimeout(t *testing.T) {
	c := newCluster(t, 20)
	c0, c1 := c.Name("c0"), c.Name("c1")
	in := colleagueMigrates(t, c, c1, c0, true)
	c.Cfg.Timeouts.Migration = model.Duration(3 * time.Second)
	ro := forced()
	ro.VMsOnly = true
	rec, _, err := run(t, c.Engine("t", nil), model.OpEvacuate, c0, ro)
	if err == nil || !strings.Contains(err.Error(), "still under way after 3s (timeouts.migration)") ||
		!strings.Contains(err.Error(), in.ID) {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	if ms := c.World.MigrationStatuses(in.ID); len(ms) != 1 || ms[0][len(ms[0])-1] != "running" {
		t.Errorf("the colleague's migration: %v (drainctl must leave it running)", ms)
	}
	if h, _ := c.World.Host(c0); h.Enabled {
		t.Errorf("%s's nova-compute is enabled again after a failed evacuation\n%s", c0, rec.Transcript(c.Px))
	}
}

// colleagueMigrates creates the VM "incoming" on from and live-migrates it to to by hand,
// returning once the copy runs; endless: its guest dirties memory faster than it is copied.
func colleagueMigrates(t *testing.T, c *simtest.Cluster, from, to string, endless bool) sim.VM {
	t.Helper()
	c.World.AddServer("incoming", from, sim.Flavor{Name: "m1.huge", RAMMB: 32768, VCPUs: 8, DiskGB: 80})
	if endless {
		c.World.ApplyFaultSpec("never-converge=incoming")
	}
	in, _ := c.World.ServerByName("incoming")
	if err := c.Nova.LiveMigrate(kubetest.Ctx(t), in.ID, to); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "the colleague's migration copying", func() bool {
		ms := c.World.MigrationStatuses(in.ID)
		return len(ms) == 1 && ms[0][len(ms[0])-1] == "running"
	})
	return in
}

// A plan on a node another drainctl holds says so (a note): nothing else refuses it, but a run
// now is refused by the lease; a view must not read it as one that will run.
func TestAPlanSaysWhoHoldsTheNode(t *testing.T) {
	c := newCluster(t, 20)
	c1 := c.Name("c1")
	other := "drainctl/someone@elsewhere/1-abcdef"
	setLease(t, c, c1, other, time.Hour)
	e := c.Engine(ops.DefaultHolder(), nil)
	for _, op := range []model.OpKind{model.OpCordon, model.OpEvacuate} {
		plan, err := e.Plan(kubetest.Ctx(t), op, c1, ops.RunOptions{Policy: defaults()})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(plan.Reasons, func(r model.Reason) bool { return r.Code == model.HeldByOther })
		if i < 0 || plan.Reasons[i].Severity != model.Notes || !strings.Contains(plan.Reasons[i].Message, other) {
			t.Errorf("%s: reasons %+v; want a note naming %s", op, plan.Reasons, other)
		}
	}
	// Abort is how one asks the holder to stop: its plan says nothing of the kind.
	plan, err := e.Plan(kubetest.Ctx(t), model.OpAbort, c1, ops.RunOptions{Policy: defaults()})
	if err != nil || slices.ContainsFunc(plan.Reasons, func(r model.Reason) bool { return r.Code == model.HeldByOther }) {
		t.Errorf("abort's plan: %v %+v", err, plan.Reasons)
	}
}

// A host whose nova-compute is down (a dead machine) is refused for evacuation: Nova moves
// its VMs neither live nor cold; its way is recover.
func TestADownHostIsNotEvacuated(t *testing.T) {
	c := newCluster(t, 20)
	c0 := c.Name("c0") // vm-a and vm-b on it
	c.World.KillHost(c0)
	e := c.Engine(ops.DefaultHolder(), nil)
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ops.RunOptions{Policy: defaults()})
	if err != nil {
		t.Fatal(err)
	}
	if b := plan.Blockers(); !slices.ContainsFunc(b, func(r model.Reason) bool {
		return r.Code == model.ComputeIsDown && strings.Contains(r.Message, "recover")
	}) {
		t.Errorf("blockers %+v; want nova-compute down, recover instead (VMs %d, reasons %+v)", b, len(plan.VMs), plan.Reasons)
	}
}

// An abort Nova refuses as the copy ends by itself (the real Nova clears the server's task
// before it marks the record completed, and answers 409 in between; seen on a loaded CI run)
// follows the record until it ends: the abort is done, the migration counted as ended meanwhile
// and the VM on its destination. Without following it, the abort failed on the 409.
func TestAnAbortRefusedAsTheCopyEndsFollowsItsRecord(t *testing.T) {
	c := newCluster(t, 20)
	fast := slow(c)
	c0 := c.Name("c0")
	ea, eb := c.Engine(ops.DefaultHolder(), nil), c.Engine(ops.DefaultHolder(), nil)
	rec := &simtest.Recorder{}
	done := runAsync(t, ea, model.OpEvacuate, c0, forced(), rec)
	kubetest.Eventually(t, 20*time.Second, "vm-a migrating", migratingNow(c, "vm-a"))
	vmA, _ := c.World.ServerByName("vm-a")
	c.World.InjectFault(sim.Fault{Method: "DELETE", Path: regexp.MustCompile(`^/servers/[^/]+/migrations/[0-9]+$`), Status: 409, Times: 1,
		Message:   "Instance " + vmA.ID + " is in an invalid state for 'abort live migration'",
		Meanwhile: func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0 }}) // it converges now
	_, rep, err := run(t, eb, model.OpAbort, c0, ops.RunOptions{Policy: defaults()})
	fast()
	<-done
	if err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("the abort Nova refused as the copy ended: %v, %+v", err, rep)
	}
	// Its record ended; the server follows it a moment later (its post-copy on the destination).
	kubetest.Eventually(t, 20*time.Second, "vm-a on its destination, its copy completed", func() bool {
		vm, _ := c.World.ServerByName("vm-a")
		return vm.Host != c0 && vm.TaskState == ""
	})
	if statuses := c.World.MigrationStatuses(vmA.ID); len(statuses) != 1 || slices.Contains(statuses[0], "cancelled") {
		t.Errorf("vm-a's migration went %v: one, not cancelled, was expected", statuses)
	}
}
