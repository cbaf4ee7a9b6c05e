package ops_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

var update = flag.Bool("update", false, "rewrite the golden event transcripts")

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

func newCluster(t *testing.T, scale float64) *simtest.Cluster { return simtest.NewCluster(t, scale) }

func golden(t *testing.T, name, got string) { simtest.Golden(t, name, got) }

func run(t *testing.T, e *ops.Engine, op model.OpKind, target string, ro ops.RunOptions) (*simtest.Recorder, ops.Report, error) {
	return simtest.Run(t, e, op, target, ro)
}

func defaults() policy.Options { return simtest.Defaults() }

func TestEvacuateThenUncordon(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")

	// The bare pod refuses the plan; nothing changes.
	before := c.Muts.N.Load()
	rec, _, err := run(t, e, model.OpEvacuate, c0, ops.RunOptions{Policy: defaults()})
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || refused.Reasons[0].Code != model.BarePod || refused.Reasons[0].Override != model.OverrideForce {
		t.Fatalf("want a refusal for the bare pod, got %v", err)
	}
	if !errors.As(err, new(*ops.RefusedError)) || c.Muts.N.Load() != before || c.World.Stats().Mutations != 0 {
		t.Fatalf("a refused plan changed something: %v", err)
	}
	golden(t, "evacuate-refused", rec.Transcript(c.Px))

	// --force: evacuate everything.
	ro := ops.RunOptions{Policy: defaults(), Why: "kernel upgrade"}
	ro.Policy.Force = true
	rec, rep, err := run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	golden(t, "evacuate", rec.Transcript(c.Px))
	if rep.Result != ops.ResultDone || len(rep.VMs) != 2 || len(rep.Pods) != 3 {
		t.Errorf("report %+v", rep)
	}
	n := c.Node(c0)
	j, ok := ops.ReadJournal(n)
	if n.Schedulable || !ok || j.Phase != ops.PhaseDone || !j.WasSchedulable {
		t.Errorf("node after evacuate: %+v journal %+v", n, j)
	}
	h, _ := c.World.Host(c0)
	if h.Enabled || !strings.HasPrefix(h.DisabledReason, "drainctl: evacuate by tester@a at ") ||
		!strings.HasSuffix(h.DisabledReason, ": kernel upgrade") {
		t.Errorf("compute after evacuate: %+v", h)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host == c0 || vm.Status != "ACTIVE" {
			t.Errorf("%s: %+v", name, vm)
		}
	}
	left := c.Kube.PodsOn(c0)
	if len(left) != 1 || left[0].Name != "libvirt-x" {
		t.Errorf("pods left on %s: %v", c0, left)
	}

	// A rerun of the finished evacuation changes nothing at all.
	kubeBefore, novaBefore := c.Muts.N.Load(), c.World.Stats().Mutations
	rec, _, err = run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	if k, n := c.Muts.N.Load()-kubeBefore, c.World.Stats().Mutations-novaBefore; k != 0 || n != 0 {
		t.Errorf("rerun made %d Kubernetes and %d Nova mutating calls", k, n)
	}
	golden(t, "evacuate-rerun", rec.Transcript(c.Px))

	rec, _, err = run(t, e, model.OpUncordon, c0, ops.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "uncordon", rec.Transcript(c.Px))
	n = c.Node(c0)
	if _, journaled := ops.ReadJournal(n); !n.Schedulable || n.HasTaint(c.Cfg.Policy.TaintKey) || journaled {
		t.Errorf("node after uncordon: %+v", n)
	}
	if h, _ := c.World.Host(c0); !h.Enabled {
		t.Errorf("compute not re-enabled: %+v", h)
	}
}

func TestPDBThatNeverAllowsTimesOutNamingIt(t *testing.T) {
	c := newCluster(t, 100)
	frozenPDBOnC2(t, c)
	e := c.Engine("tester@a", nil)
	_, rep, err := run(t, e, model.OpEvacuate, c.Name("c2"), ops.RunOptions{Policy: defaults()})
	if err == nil || !strings.Contains(err.Error(), "PodDisruptionBudget frozen-pdb") {
		t.Fatalf("got %v", err)
	}
	var refusals int
	for _, p := range rep.Pods {
		if p.Pod == c.NS+"/frozen-0" {
			refusals = p.Blocked
		}
	}
	// The engine waits on the budget it watches instead of knocking: at most one 429.
	if refusals > 1 {
		t.Errorf("the API server refused the pod %d times: the engine should wait on the watched budget", refusals)
	}
	if j, _ := ops.ReadJournal(c.Node(c.Name("c2"))); j.Phase != ops.PhaseFailed {
		t.Errorf("journal %+v", j)
	}
}

// frozenPDBOnC2 puts on c2 a pod whose budget never allows a disruption (its status frozen
// at 0 allowed), with evictions given up after 300 ms.
func frozenPDBOnC2(t *testing.T, c *simtest.Cluster) {
	t.Helper()
	c.Cfg.Timeouts.Eviction = model.Duration(300 * time.Millisecond)
	c.Ctrl.Freeze("frozen-pdb")
	kubetest.PDB(t, c.CS, c.NS, "frozen-pdb", "frozen", 1)
	kubetest.SetPDBStatus(t, c.CS, c.NS, "frozen-pdb", 0, 1, 1, 1)
	rs, uid := kubetest.ReplicaSet(t, c.CS, c.NS, "frozen", 1)
	kubetest.Pod(t, c.CS, c.NS, "frozen-0", c.Name("c2"), kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels("app", "frozen"))
}

func TestSecondEngineRefusedByLease(t *testing.T) {
	c := newCluster(t, 100)
	a := c.Engine("tester@a", nil)
	b := c.Engine("tester@b", nil)
	if _, _, err := run(t, a, model.OpCordon, c.Name("c1"), ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatal(err)
	}
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	_, _, err := run(t, b, model.OpEvacuate, c.Name("c1"), ro)
	var held *ops.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "tester@a" {
		t.Fatalf("second engine: %v", err)
	}
	// The holder itself goes on.
	if _, _, err := run(t, a, model.OpEvacuate, c.Name("c1"), ro); err != nil {
		t.Fatalf("holder: %v", err)
	}
}

func TestInterruptedThenResumed(t *testing.T) {
	c := newCluster(t, 20)
	e := c.Engine("tester@a", nil)
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	c0 := c.Name("c0")
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(kubetest.Ctx(t))
	rec := &simtest.Recorder{}
	// Interrupt as soon as the first VM has completed.
	_, err = e.Run(ctx, plan, ro, func(ev ops.Event) {
		rec.Emit(ev)
		if m, ok := ev.(ops.MigrationEvent); ok && m.State == ops.MigCompleted {
			cancel()
		}
	})
	var intr *ops.Interrupted
	if !errors.As(err, &intr) {
		t.Fatalf("want an interruption, got %v", err)
	}
	if j, _ := ops.ReadJournal(c.Node(c0)); j.Phase != ops.PhaseInterrupted {
		t.Errorf("journal %+v", j)
	}
	// Resume: the remaining VM and the pods go; nothing is done twice.
	rec2, _, err := run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, rec2.Transcript(c.Px))
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		vm, _ := c.World.ServerByName(name)
		if n := len(c.World.MigrationStatuses(vm.ID)); n != 1 || vm.Host == c0 {
			t.Errorf("%s migrated %d times, now on %s", name, n, vm.Host)
		}
	}
	for _, step := range []string{"step cordon           skipped", "step disable-compute  skipped"} {
		if !strings.Contains(rec2.Transcript(c.Px), step) {
			t.Errorf("resume repeated a finished step (want %q):\n%s", step, rec2.Transcript(c.Px))
		}
	}
}

func TestMigrationFaults(t *testing.T) {
	t.Run("Nova 500 on the first request is retried", func(t *testing.T) {
		c := newCluster(t, 100)
		c.World.InjectFault(sim.Fault{Method: "POST", Path: regexp.MustCompile(`/action$`), Status: 500, Times: 1})
		vm, _ := c.World.ServerByName("vm-b")
		_, rep, err := run(t, c.Engine("t", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
		if err != nil || rep.VMs[0].Attempts != 2 || rep.VMs[0].Result != ops.MigCompleted {
			t.Fatalf("%v %+v", err, rep.VMs)
		}
		if after, _ := c.World.ServerByName("vm-b"); after.Host == vm.Host {
			t.Error("not moved")
		}
	})
	t.Run("Nova 500 every time fails with Nova's message", func(t *testing.T) {
		c := newCluster(t, 100)
		c.World.InjectFault(sim.Fault{Method: "POST", Path: regexp.MustCompile(`/action$`), Status: 500})
		_, _, err := run(t, c.Engine("t", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
		if err == nil || !strings.Contains(err.Error(), "500 Unexpected API Error") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a migration that errors is reported with the instance action's message", func(t *testing.T) {
		c := newCluster(t, 100)
		c.World.ApplyFaultSpec("fail-migration=vm-b@preparing")
		rec, rep, err := run(t, c.Engine("t", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
		if err == nil || !strings.Contains(err.Error(), "Error in pre_live_migration") || rep.VMs[0].Attempts != 2 {
			t.Fatalf("%v %+v", err, rep.VMs)
		}
		golden(t, "migrate-fails", rec.Transcript(c.Px))
	})
	t.Run("no valid host", func(t *testing.T) {
		c := newCluster(t, 100)
		c.World.SetNoValidHost(true)
		_, _, err := run(t, c.Engine("t", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
		if err == nil || !strings.Contains(err.Error(), "No valid host was found") {
			t.Fatalf("%v", err)
		}
	})
	for _, policyName := range []string{ops.StallForceComplete, ops.StallAbort, ops.StallWait} {
		t.Run("never converges: "+policyName, func(t *testing.T) {
			c := newCluster(t, 20)
			c.World.ApplyFaultSpec("never-converge=vm-b")
			c.Cfg.Timeouts.Migration = model.Duration(3 * time.Second)
			e := c.Engine("t", func(o *ops.EngineOptions) {
				o.OnStall = policyName
				o.StallAfter = 200 * time.Millisecond
				o.Attempts = 1
			})
			rec, rep, err := run(t, e, model.OpMigrate, "vm-b", ops.RunOptions{})
			switch policyName {
			case ops.StallForceComplete:
				if err != nil || rep.VMs[0].Result != ops.MigCompleted {
					t.Fatalf("%v %+v", err, rep.VMs)
				}
			case ops.StallAbort:
				if err == nil || rep.VMs[0].Result != ops.MigAborted {
					t.Fatalf("%v %+v", err, rep.VMs)
				}
			case ops.StallWait:
				if err == nil || !strings.Contains(err.Error(), "timed out") {
					t.Fatalf("%v %+v", err, rep.VMs)
				}
			}
			golden(t, "stall-"+policyName, rec.Transcript(c.Px))
		})
	}
}

func TestRollbackRestoresTheNode(t *testing.T) {
	c := newCluster(t, 10)
	c.World.ApplyFaultSpec("never-converge=vm-a")
	e := c.Engine("tester@a", func(o *ops.EngineOptions) { o.OnStall = ops.StallWait })
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	c0 := c.Name("c0")
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	runErr := make(chan error, 1)
	go func() {
		_, err := e.Run(kubetest.Ctx(t), plan, ro, func(ev ops.Event) {
			if m, ok := ev.(ops.MigrationEvent); ok && m.State == "running" {
				once.Do(func() { close(started) })
			}
		})
		runErr <- err
	}()
	<-started
	// Roll back from this process: the running evacuation stops, its migration is aborted.
	rec, _, err := run(t, e, model.OpRollback, c0, ops.RunOptions{})
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if err := <-runErr; !errors.As(err, new(*ops.Interrupted)) {
		t.Errorf("the evacuation ended with %v", err)
	}
	golden(t, "rollback", rec.Transcript(c.Px))
	vm, _ := c.World.ServerByName("vm-a")
	if vm.Host != c0 || vm.Status != "ACTIVE" {
		t.Errorf("vm-a after rollback: %+v", vm)
	}
	n := c.Node(c0)
	if _, j := ops.ReadJournal(n); !n.Schedulable || n.HasTaint(c.Cfg.Policy.TaintKey) || j {
		t.Errorf("node after rollback: %+v", n)
	}
	if h, _ := c.World.Host(c0); !h.Enabled {
		t.Errorf("compute after rollback: %+v", h)
	}
}

// Kubernetes alone: no Nova at all. Pods are evacuated, the VM steps say there is nothing to
// move, and the node-level refusals still apply.
func TestKubernetesAlone(t *testing.T) {
	c := newCluster(t, 100)
	e := ops.NewEngine(c.Kube, nil, c.Cfg, ops.EngineOptions{Holder: "t", Poll: 5 * time.Millisecond, Backoff: 20 * time.Millisecond})
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c.Name("c1"), ops.RunOptions{Policy: defaults()})
	if err != nil || plan.Steps[3].Detail != "no VMs to move: this node has no compute service" || plan.Host != "" {
		t.Errorf("plan without Nova: %+v %v", plan, err)
	}
	rec, rep, err := run(t, e, model.OpEvacuate, c.Name("c1"), ops.RunOptions{Policy: defaults()})
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Transcript(c.Px))
	}
	golden(t, "kubernetes-alone", rec.Transcript(c.Px))
	if len(rep.VMs) != 0 || len(rep.Pods) != 1 {
		t.Errorf("report %+v", rep)
	}
	_, _, err = run(t, e, model.OpEvacuate, c.Name("cp"), ops.RunOptions{Policy: defaults()})
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || refused.Reasons[0].Code != model.ControlPlane {
		t.Errorf("control plane without Nova: %v", err)
	}
}

// With Nova configured, a worker that has no compute service is evacuated of its pods and
// says there were no VMs to move.
func TestNodeWithoutComputeService(t *testing.T) {
	c := newCluster(t, 100)
	w9 := c.Name("w9")
	kubetest.Node(t, c.CS, w9)
	rs, uid := kubetest.ReplicaSet(t, c.CS, c.NS, "batch", 1)
	kubetest.Pod(t, c.CS, c.NS, "batch-0", w9, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Grace(1))
	e := c.Engine("t", nil)
	var plan model.Plan
	kubetest.Eventually(t, 10*time.Second, "the new node in the cache", func() bool {
		p, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, w9, ops.RunOptions{Policy: defaults()})
		plan = p
		return err == nil && len(p.Pods) == 1
	})
	if plan.Host != w9 || plan.Steps[3].Detail != "no VMs to move: this node has no compute service" {
		t.Errorf("plan %+v", plan)
	}
	if _, _, err := run(t, e, model.OpEvacuate, w9, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatal(err)
	}
	if pods := c.Kube.PodsOn(w9); len(pods) != 0 {
		t.Errorf("left %v", pods)
	}
}

// With migrations_per_destination = 1 and two migrations allowed per source, the two VMs go
// to two different hosts at once; with one destination left, they go one after the other.
func TestPerDestinationCap(t *testing.T) {
	c := newCluster(t, 50)
	c.Cfg.Concurrency.MigrationsPerSource, c.Cfg.Concurrency.MigrationsPerDestination = 4, 1
	e := c.Engine("t", nil)
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	if _, _, err := run(t, e, model.OpEvacuate, c.Name("c0"), ro); err != nil {
		t.Fatal(err)
	}
	a, _ := c.World.ServerByName("vm-a")
	b, _ := c.World.ServerByName("vm-b")
	if a.Host == b.Host {
		t.Errorf("both VMs went to %s despite a cap of 1 per destination", a.Host)
	}
	// Back to c0, then only c1 can take them: one at a time.
	c.World.Update(func(h map[string]*sim.Host, s map[string]*sim.VM) {
		s[a.ID].Host, s[b.ID].Host = c.Name("c0"), c.Name("c0")
		h[c.Name("c2")].Enabled = false
	})
	rec, _, err := run(t, e, model.OpEvacuate, c.Name("c0"), ro)
	if err != nil {
		t.Fatal(err)
	}
	inFlight, most := 0, 0
	for _, ev := range rec.Events() {
		if m, ok := ev.(ops.MigrationEvent); ok {
			switch m.State {
			case ops.MigRequested:
				inFlight++
			case ops.MigCompleted, ops.MigFailed:
				inFlight--
			}
			most = max(most, inFlight)
		}
	}
	if most != 1 {
		t.Errorf("%d migrations in flight to the one destination at once", most)
	}
	ma, mb := c.World.MigrationStatuses(a.ID), c.World.MigrationStatuses(b.ID)
	if len(ma) != 2 || len(mb) != 2 {
		t.Fatalf("migrations: %v %v", ma, mb)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c.Name("c1") {
			t.Errorf("%s on %s", name, vm.Host)
		}
	}
}

// A Kubernetes change is seen by re-joining with the last Nova read: no Nova request.
func TestRejoinSeesKubernetesWithoutCallingNova(t *testing.T) {
	c := newCluster(t, 100)
	inv := c.Engine("t", nil).Inventory()
	if _, err := inv.Read(kubetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	before := c.World.Stats().Requests
	c.SetUnschedulable(c.Name("c2"), true)
	kubetest.Eventually(t, 10*time.Second, "the cordon in a re-join", func() bool {
		got, err := inv.Rejoin(kubetest.Ctx(t))
		n, _ := got.Node(c.Name("c2"))
		return err == nil && n.Kube != nil && !n.Kube.Schedulable && n.Compute != nil
	})
	if after := c.World.Stats().Requests; after != before {
		t.Errorf("re-joins made %d Nova requests", after-before)
	}
}

// Recommend re-ranks incrementally as the cluster changes (a pod in Kubernetes, a service
// in Nova), and what it returns is what a full ranking of the same inventory says.
func TestRecommendFollowsChanges(t *testing.T) {
	c := newCluster(t, 20)
	e := c.Engine("rank@test", nil)
	ctx := kubetest.Ctx(t)
	w := policy.WeightsFromConfig(c.Cfg.ScaleDown)
	c1, c2 := c.Name("c1"), c.Name("c2")
	if _, _, err := e.Recommend(ctx, defaults(), true); err != nil {
		t.Fatal(err)
	}
	kubetest.Pod(t, c.CS, c.NS, "shell-c1", c1, kubetest.Grace(1))
	c.World.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) {
		h[c2].Enabled, h[c2].DisabledReason = false, "ticket 42"
	})
	var victims []policy.Victim
	var inv model.Inventory
	kubetest.Eventually(t, 10*time.Second, "both changes ranked", func() bool {
		var err error
		victims, inv, err = e.Recommend(ctx, defaults(), true)
		if err != nil {
			t.Fatal(err)
		}
		return hasCode(victims, c1, model.BarePod) && hasCode(victims, c2, model.HeldByOther)
	})
	if want := policy.Rank(inv, defaults(), w); !reflect.DeepEqual(strip(victims), strip(want)) {
		t.Errorf("incremental ranking differs from the full one:\n%+v\n%+v", victims, want)
	}
}

func hasCode(vs []policy.Victim, node string, code model.ReasonCode) bool {
	for _, v := range vs {
		for _, r := range v.Reasons {
			if v.Node == node && r.Code == code {
				return true
			}
		}
	}
	return false
}

// strip keeps what Victim shows (its placement is compared by the policy's own tests).
func strip(vs []policy.Victim) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%s %v %d %.3f %d %d %v", v.Node, v.Candidate, v.Rank, v.Cost, v.Pods, v.VMs, v.Reasons)
	}
	return out
}

// A ranking asked for with nothing changed since the last (no Kubernetes change of any kind,
// no newer Nova read) is the last one, not a re-join; any change makes a new one.
func TestRecommendWithNothingChangedIsTheLast(t *testing.T) {
	c := newCluster(t, 20)
	e := c.Engine("rank@test", nil)
	ctx := kubetest.Ctx(t)
	if _, _, err := e.Recommend(ctx, defaults(), true); err != nil {
		t.Fatal(err)
	}
	// The informers may still be delivering the cluster's setup: wait for a quiet cache.
	var again model.Inventory
	kubetest.Eventually(t, 10*time.Second, "an unchanged ranking", func() bool {
		_, prev, err := e.Recommend(ctx, defaults(), false)
		if err != nil {
			t.Fatal(err)
		}
		_, again, err = e.Recommend(ctx, defaults(), false)
		return err == nil && again.At.Equal(prev.At)
	})
	c1 := c.Name("c1")
	kubetest.Pod(t, c.CS, c.NS, "late-c1", c1)
	kubetest.Eventually(t, 10*time.Second, "the new pod ranked", func() bool {
		_, inv, err := e.Recommend(ctx, defaults(), false)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := inv.Node(c1)
		for _, p := range n.Pods {
			if p.Name == "late-c1" {
				return inv.At.After(again.At)
			}
		}
		return false
	})
}

// A destination disabled after the hosts were read (another node's evacuation, a colleague)
// is turned down by Nova's scheduler when the first VM is sent there (it stays where it was),
// and no VM of the run is sent there again: the VM goes elsewhere at its next attempt. The run
// picks from the read it was planned on; c2, the roomiest, is disabled after that read. (Nova
// checks the host it is given when it acts: drainctl no longer reads it before each request.)
// The attempt turned down moved nothing and does not count: one attempt a VM is enough here.
func TestDestinationDisabledMeanwhileIsTurnedDownOnce(t *testing.T) {
	c := newCluster(t, 50)
	c.Cfg.Concurrency.MigrationsPerSource, c.Cfg.Concurrency.MigrationsPerDestination = 2, 1 // drainctl picks
	c.World.AddServer("filler", c.Name("c1"), sim.Flavor{Name: "m1.xlarge", RAMMB: 16384, VCPUs: 8, DiskGB: 80})
	e := c.Engine("t", func(o *ops.EngineOptions) { o.Attempts = 1 })
	ctx := kubetest.Ctx(t)
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	plan, err := e.Plan(ctx, model.OpEvacuate, c.Name("c0"), ro)
	if err != nil {
		t.Fatal(err)
	}
	c2 := c.Name("c2")
	c.World.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) { h[c2].Enabled = false })
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
		t.Errorf("migrations requested to %v; want %s once (disabled since the hosts were read: Nova turns it down), "+
			"then the two VMs elsewhere", sentTo, c2)
	}
	if rep.Result != ops.ResultDone {
		t.Errorf("the run ended %s: %+v", rep.Result, rep.VMs)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c.Name("c1") {
			t.Errorf("%s on %s", name, vm.Host)
		}
	}
}

// A destination this process disabled since the run read the hosts (a campaign's next node,
// cordoned by another run of the same engine while the VMs go) is passed over on Nova's answer
// to that disable: no VM is sent there after it, and no read of it is made before each request.
// c2, the roomiest, takes vm-a; as vm-a is requested, c2 is cordoned and disabled; vm-b goes
// to c1 (before, Nova turned it down on c2 first).
func TestADestinationThisProcessDisabledIsPassedOver(t *testing.T) {
	c := newCluster(t, 50)
	c.Cfg.Concurrency.MigrationsPerSource, c.Cfg.Concurrency.MigrationsPerDestination = 1, 1 // one at a time
	c.World.AddServer("filler", c.Name("c1"), sim.Flavor{Name: "m1.xlarge", RAMMB: 16384, VCPUs: 8, DiskGB: 80})
	e := c.Engine("t", nil)
	ctx := kubetest.Ctx(t)
	// A campaign's run (nodes later): drainctl picks the destinations.
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}, Later: []string{"a-node-later"}}
	plan, err := e.Plan(ctx, model.OpEvacuate, c.Name("c0"), ro)
	if err != nil {
		t.Fatal(err)
	}
	cordonC2 := func() {
		cordon, err := e.Plan(ctx, model.OpCordon, c.Name("c2"), ops.RunOptions{Policy: defaults()})
		if err != nil {
			t.Error(err)
			return
		}
		if rep, err := e.Run(ctx, cordon, ops.RunOptions{Policy: defaults()}, func(ops.Event) {}); err != nil || rep.Result != ops.ResultDone {
			t.Errorf("cordon of c2: %v %+v", err, rep)
		}
	}
	var sentTo []string
	emit := func(ev ops.Event) {
		if e, ok := ev.(ops.MigrationEvent); ok && e.State == ops.MigRequested {
			sentTo = append(sentTo, e.Dest)
			if len(sentTo) == 1 {
				cordonC2() // the run waits: the next VM's request comes after the disable's answer
			}
		}
	}
	if rep, err := e.Run(ctx, plan, ro, emit); err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("evacuation of c0: %v %+v", err, rep)
	}
	if len(sentTo) != 2 || sentTo[0] != c.Name("c2") || sentTo[1] != c.Name("c1") {
		t.Errorf("migrations requested to %v; want %s, then %s (%s disabled by this process in between)",
			sentTo, c.Name("c2"), c.Name("c1"), c.Name("c2"))
	}
}

// Two nodes emptied at once choose their destinations from one ledger of what was sent
// where: with room on each of two hosts for one VM, their two VMs go one to each, never
// both to the host that looked emptiest when the runs began (Nova would turn the second
// down: No valid host). Each run used to count only its own VMs against the figures it
// began with.
func TestNodesAtOnceShareOneLedgerOfRoom(t *testing.T) {
	c := newCluster(t, 50)
	c.Cfg.Concurrency.Nodes = 2
	c.Cfg.Concurrency.MigrationsPerSource, c.Cfg.Concurrency.MigrationsPerDestination = 2, 2 // drainctl picks
	c0, c1, c2, c3 := c.Name("c0"), c.Name("c1"), c.Name("c2"), c.Name("c3")
	c.World.DeleteServer("vm-b")
	c.World.AddServer("vm-x", c1, sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	c.World.AddHost(c3, 64, 512+8192+50, 2000) // room for one: the second emptiest
	c.World.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) { h[c2].MemoryMB = 512 + 8192 + 100 })
	e := c.Engine("t", nil)
	ctx := kubetest.Ctx(t)
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	b, err := e.PlanBatch(ctx, model.OpEvacuate, []string{c0, c1}, ro)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var failed []string
	_, err = e.RunBatch(ctx, b, func(model.Plan) func(ops.Event) {
		return func(ev ops.Event) {
			if m, ok := ev.(ops.MigrationEvent); ok && m.State == ops.MigFailed {
				mu.Lock()
				failed = append(failed, m.VM+": "+m.Message)
				mu.Unlock()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 {
		t.Errorf("a VM was sent where the other took the room: %v", failed)
	}
	a, _ := c.World.ServerByName("vm-a")
	x, _ := c.World.ServerByName("vm-x")
	if got := []string{a.Host, x.Host}; !slices.Contains(got, c2) || !slices.Contains(got, c3) {
		t.Errorf("vm-a on %s, vm-x on %s: want one on each of %s and %s", a.Host, x.Host, c2, c3)
	}
}

// The acts a run starts at once check its node's lease with one read between them: each
// still sees a read begun after it asked (a lease taken over is seen before the next act),
// but thirty evictions, ten at a time, no longer cost thirty reads of the lease.
func TestActsAtOnceShareALeaseRead(t *testing.T) {
	c := newCluster(t, 100)
	c2 := c.Name("c2")
	rs, uid := kubetest.ReplicaSet(t, c.CS, c.NS, "batch", 30)
	for i := range 30 {
		kubetest.Pod(t, c.CS, c.NS, fmt.Sprintf("batch-%02d", i), c2, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Grace(1))
	}
	e := c.Engine("tester@a", nil)
	before := len(c.Muts.Log.Calls())
	rec, rep, err := run(t, e, model.OpEvacuate, c2, ops.RunOptions{Policy: defaults()})
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Transcript(c.Px))
	}
	evicted, reads := 0, 0
	for _, p := range rep.Pods {
		if p.Result == ops.PodGone {
			evicted++
		}
	}
	for _, call := range c.Muts.Log.Calls()[before:] {
		if strings.HasPrefix(call, "kube GET ") && (strings.HasSuffix(call, "/leases/drainctl-"+c2) || strings.HasSuffix(call, "/leases")) {
			reads++ // the node's lease, or every lease (the engine's read for every node's acts, the slots)
		}
	}
	if evicted < 30 || reads >= evicted {
		t.Errorf("%d pods evicted with %d reads of the node's lease: the checks made at once did not share", evicted, reads)
	}
	t.Logf("%d evictions, %d lease reads", evicted, reads)
}

// Each VM as its own policy asks (#42.1), read from its Nova metadata over HTTP: stays keeps
// its node from being emptied, a blocker naming its owner's request, until --skip-vm leaves
// it; stop-start moves a running VM cold (Nova stops, moves and starts it), and it runs again
// elsewhere. The plan says each VM's policy and where it comes from.
func TestEachVMAsItsPolicyAsks(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.World.SetMetadata("vm-a", model.VMPolicyKey, "stop-start")
	c.World.SetMetadata("vm-b", model.VMPolicyKey, "stays")
	e := c.Engine("tester@a", nil)
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	before := c.World.Stats().Mutations
	_, _, err := run(t, e, model.OpEvacuate, c0, ro)
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || len(refused.Reasons) != 1 || refused.Reasons[0].Code != model.VMAsksToStay || refused.Reasons[0].Object != "vm-b" ||
		!strings.Contains(refused.Reasons[0].Message, "its metadata drainctl:maintenance") ||
		refused.Reasons[0].Override != model.OverrideSkipVM {
		t.Fatalf("want vm-b's own stays to refuse the node, got %v", err)
	}
	if c.World.Stats().Mutations != before {
		t.Fatal("a refused plan changed Nova")
	}

	ro.Policy.SkipVMs = []string{"vm-b"}
	p, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range p.VMs {
		if want := map[string]model.VMPolicy{"vm-a": model.PolicyStopStart, "vm-b": model.PolicyStays}[vm.Name]; vm.Policy != want ||
			vm.PolicyFrom != "its metadata drainctl:maintenance" {
			t.Errorf("the plan shows %s's policy as %q from %q, want %q from its metadata", vm.Name, vm.Policy, vm.PolicyFrom, want)
		}
		if vm.Name == "vm-a" && vm.Method != model.MoveCold {
			t.Errorf("vm-a (stop-start) is planned %s", vm.Method)
		}
	}
	rec, _, err := run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Transcript(c.Px))
	}
	a, _ := c.World.ServerByName("vm-a")
	b, _ := c.World.ServerByName("vm-b")
	if a.Host == c0 || a.Status != "ACTIVE" || b.Host != c0 || b.Status != "ACTIVE" {
		t.Errorf("vm-a %s on %s (want ACTIVE elsewhere), vm-b %s on %s (want ACTIVE on %s)", a.Status, a.Host, b.Status, b.Host, c0)
	}
	if len(c.World.MigrationStatuses(a.ID)) != 1 || len(c.World.MigrationStatuses(b.ID)) != 0 {
		t.Errorf("migrations: vm-a %v, vm-b %v", c.World.MigrationStatuses(a.ID), c.World.MigrationStatuses(b.ID))
	}

	// The operator's named override moves vm-b anyway, live as its state says, and the plan
	// says whose word moved it.
	ro.Policy.SkipVMs, ro.Policy.OverrideVMPolicies = nil, []string{b.ID}
	p, err = e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	var note *model.Reason
	for i, r := range p.Reasons {
		if r.Object == "vm-b" {
			note = &p.Reasons[i]
		}
	}
	if len(p.Blockers()) != 0 || note == nil || note.Severity != model.Notes || note.By != model.OverrideVMPolicy ||
		!strings.Contains(note.Message, `although its policy is "stays"`) {
		t.Fatalf("want vm-b planned to move under the override, noted; blockers %v, note %+v", p.Blockers(), note)
	}
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("%v\n%s", err, rec.Transcript(c.Px))
	}
	if b, _ := c.World.ServerByName("vm-b"); b.Host == c0 || b.Status != "ACTIVE" || len(c.World.MigrationStatuses(b.ID)) != 1 {
		t.Errorf("vm-b under the override: %s on %s, migrations %v", b.Status, b.Host, c.World.MigrationStatuses(b.ID))
	}
}

// withDiskLoss: the defaults, and a recovery may rebuild VMs from their image
// (--accept-disk-loss), as the tests' image-backed VMs need.
// dies kills node's machine: its nova-compute down, the node NotReady these five minutes, as
// e's cache sees it.
func dies(t *testing.T, c *simtest.Cluster, e *ops.Engine, node string) {
	t.Helper()
	c.World.KillHost(node)
	kubetest.SetReady(t, c.CS, node, false, time.Now().Add(-5*time.Minute))
	kubetest.Eventually(t, 10*time.Second, "the cache seeing "+node+" NotReady", func() bool { k, _ := e.KubeNode(node); return !k.Ready })
}

func withDiskLoss() policy.Options {
	o := defaults()
	o.AcceptDiskLoss = true
	return o
}

// Plans asked at once (a campaign's nodes in flight) share the Nova read that begins after
// they asked: twenty reads cost at most two reads of the whole cloud, and each sees what was
// true when it asked (a VM stopped before the reads began is seen stopped by all).
func TestReadsAtOnceShareOneNovaRead(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("reader@test", nil)
	if _, err := e.Inventory().Read(kubetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	c.World.Stop("vm-a")
	c.World.ResetStats()
	// A read takes a moment, as a real Nova's does: the twenty ask while the first is under
	// way even on a loaded machine (where twenty goroutines do not all start at once).
	c.World.InjectFault(sim.Fault{Method: "GET", Path: regexp.MustCompile(`^/os-services$`), Latency: 300 * time.Millisecond})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	start := make(chan struct{})
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			inv, err := e.Inventory().Read(kubetest.Ctx(t))
			if err == nil {
				n, _ := inv.Node(c.Name("c0"))
				i := slices.IndexFunc(n.VMs, func(vm model.VM) bool { return vm.Name == "vm-a" })
				if i < 0 || n.VMs[i].Phase != model.PhaseStopped {
					err = fmt.Errorf("a read did not see vm-a stopped: %v", n.VMs)
				}
			}
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := c.World.Stats().ByRoute["GET /os-services"]; n < 1 || n > 2 {
		t.Errorf("20 reads at once read the services %d times, want 1 or 2", n)
	}
}

// A campaign's node plan (ByHost) reads its own host afresh, by host, on the last whole read: what changed on
// it since (a VM stopped, its service disabled by a colleague) is planned on, and a host VMs
// were moved to is read again with it; the cloud's whole lists are not read (#41: a
// campaign's bytes a node do not grow with the fleet).
func TestAPlanReadsItsHostNotTheFleet(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("reader@test", nil)
	ctx := kubetest.Ctx(t)
	if _, err := e.Inventory().Read(ctx); err != nil {
		t.Fatal(err)
	}
	c0, c1 := c.Name("c0"), c.Name("c1")
	c.World.Stop("vm-a")
	c.World.Update(func(hosts map[string]*sim.Host, _ map[string]*sim.VM) {
		hosts[c0].Enabled, hosts[c0].DisabledReason = false, "a colleague's"
		hosts[c1].Enabled = false
	})
	c.World.ResetStats()
	byHost := ops.RunOptions{Policy: defaults(), ByHost: true}
	p, err := e.Plan(ctx, model.OpEvacuate, c0, byHost)
	if err != nil {
		t.Fatal(err)
	}
	st := c.World.Stats().ByRoute
	for _, whole := range []string{"GET /os-hypervisors/detail", "placement GET /resource_providers", "GET /os-server-groups"} {
		if st[whole] != 0 {
			t.Errorf("a node's plan read %s %d times: the cloud's whole list", whole, st[whole])
		}
	}
	// Its own host's hypervisor and room are not read again: Nova derives the one's state from
	// the service, and the plan empties the host, so the other as last read serves.
	if st["GET /os-services"] != 1 || st["GET /os-hypervisors/{id}"]+st["placement GET /resource_providers/{uuid}/allocations"] != 0 {
		t.Errorf("the plan read services %d times, hypervisors by ID %d and rooms %d; want its host's service once, nothing else",
			st["GET /os-services"], st["GET /os-hypervisors/{id}"], st["placement GET /resource_providers/{uuid}/allocations"])
	}
	i := slices.IndexFunc(p.VMs, func(vm model.VM) bool { return vm.Name == "vm-a" })
	if i < 0 || p.VMs[i].Phase != model.PhaseStopped || p.VMs[i].Method != model.MoveCold {
		t.Errorf("the plan did not see vm-a stopped since the whole read: %+v", p.VMs)
	}
	if s := p.Steps[slices.IndexFunc(p.Steps, func(s model.Step) bool { return s.Kind == model.StepDisableCompute })]; !s.Done {
		t.Errorf("the plan did not see its host's service disabled since the whole read: %+v", s)
	}
	if inv, _ := e.Inventory().Cached(); nodeOf(inv, c1).Compute == nil || !nodeOf(inv, c1).Compute.Enabled {
		t.Errorf("a host neither planned nor moved to was read again")
	}

	// A service a step changed (a host enabled again) goes into the last read as Nova answered
	// the change: the next plan sees it without reading the host again.
	svcs, err := e.ComputeServices(ctx, c1)
	if err != nil || len(svcs) != 1 {
		t.Fatalf("c1's service: %v %+v", err, svcs)
	}
	e.Inventory().ServiceSet(svcs[0])
	c.World.ResetStats()
	if _, err := e.Plan(ctx, model.OpEvacuate, c0, byHost); err != nil {
		t.Fatal(err)
	}
	if n := c.World.Stats().ByRoute["GET /os-services"]; n != 1 {
		t.Errorf("the next plan read %d services, want 1: its own host's", n)
	}
	if inv, _ := e.Inventory().Cached(); nodeOf(inv, c1).Compute == nil || nodeOf(inv, c1).Compute.Enabled {
		t.Errorf("the service set is not in the last read: %+v", nodeOf(inv, c1).Compute)
	}

	// The way back by host decides on its host's service alone: one GET, read afresh (the
	// colleague's disable on c0 lifted meanwhile is seen), nothing else of the host.
	c.World.Update(func(hosts map[string]*sim.Host, _ map[string]*sim.VM) {
		hosts[c0].Enabled, hosts[c0].DisabledReason = true, ""
	})
	c.World.ResetStats()
	up, err := e.Plan(ctx, model.OpUncordon, c0, byHost)
	if err != nil {
		t.Fatal(err)
	}
	st = c.World.Stats().ByRoute
	if st["GET /os-services"] != 1 || st["GET /os-hypervisors/{id}"]+st["GET /servers/detail"]+st["GET /os-migrations"] != 0 {
		t.Errorf("the way back's plan by host read %v; want its host's service alone (1 GET)", st)
	}
	if inv, _ := e.Inventory().Cached(); nodeOf(inv, c0).Compute == nil || !nodeOf(inv, c0).Compute.Enabled {
		t.Errorf("the way back's plan did not read c0's service afresh: %+v (%+v)", nodeOf(inv, c0).Compute, up.Steps)
	}
	c.World.ResetStats() // a plan of one operator's (not ByHost) reads the cloud: a host added a moment ago counts
	if _, err := e.Plan(ctx, model.OpUncordon, c0, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatal(err)
	}
	if n := c.World.Stats().ByRoute["GET /os-hypervisors/detail"]; n != 1 {
		t.Errorf("a plan without ByHost read the hypervisors whole %d times, want 1", n)
	}
}

func nodeOf(inv model.Inventory, name string) model.Node {
	n, _ := inv.Node(name)
	return n
}

// Two nodes emptied at once with pods under one budget (allowing one disruption): the
// engine's nodes share the budget's count, so no eviction is sent that it refuses (a 429),
// and every pod goes as the budget reopens.
func TestNodesAtOnceShareABudget(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Concurrency.Nodes = 2
	ns := kubetest.Namespace(t, c.CS, c.Px+"-shared")
	rs, uid := kubetest.ReplicaSet(t, c.CS, ns, "shared", 4)
	for i, n := range []string{"c1", "c1", "c2", "c2"} {
		kubetest.Pod(
			t,
			c.CS,
			ns,
			fmt.Sprintf("shared-%d", i),
			c.Name(n),
			kubetest.Owned("ReplicaSet", rs, uid),
			kubetest.Labels("app", "shared"),
			kubetest.Grace(1),
		)
	}
	kubetest.PDB(t, c.CS, ns, "shared-pdb", "shared", 3)
	(&kubetest.Controllers{ReplaceOn: c.Name("cp"), ReadyAfter: 300 * time.Millisecond}).Run(t, c.CS, ns)
	kubetest.Eventually(t, 10*time.Second, "the budget allowing one", func() bool {
		p, err := c.CS.PolicyV1().PodDisruptionBudgets(ns).Get(kubetest.Ctx(t), "shared-pdb", metav1.GetOptions{})
		return err == nil && p.Status.ExpectedPods == 4 && p.Status.DisruptionsAllowed == 1
	})
	e := c.Engine("tester@a", nil)
	ro := ops.RunOptions{Policy: defaults()}
	b, err := e.PlanBatch(kubetest.Ctx(t), model.OpEvacuate, []string{c.Name("c1"), c.Name("c2")}, ro)
	if err != nil {
		t.Fatal(err)
	}
	reports, err := e.RunBatch(kubetest.Ctx(t), b, func(model.Plan) func(ops.Event) { return func(ops.Event) {} })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		for _, p := range r.Pods {
			if p.Blocked > 0 {
				t.Errorf("%s: the API server refused %s %d time(s): the nodes did not share the budget's count", r.Node, p.Pod, p.Blocked)
			}
			if p.Result != ops.PodGone {
				t.Errorf("%s: %s %s", r.Node, p.Pod, p.Result)
			}
		}
	}
}

// A step the plan marks done is said as "nothing to do" with its plan's detail, never "already
// done" of a step that never ran (an uncordon of a node nobody cordoned).
func TestAStepNeverRunIsNotSaidDone(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	rec, _, err := run(t, e, model.OpUncordon, c.Name("c0"), ops.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range rec.Events() {
		if s, ok := ev.(ops.StepEvent); ok && s.State == ops.StepSkipped {
			n++
			if !strings.HasPrefix(s.Detail, "nothing to do (") {
				t.Errorf("step %s skipped: %q", s.Step, s.Detail)
			}
		}
	}
	if n == 0 {
		t.Error("no step was skipped: the test proves nothing")
	}
}
