package ops_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

var update = flag.Bool("update", false, "rewrite the golden event transcripts")

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// mutations counts the Kubernetes requests that change something.
type mutations struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (m *mutations) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		m.n.Add(1)
	}
	return m.next.RoundTrip(r)
}

// cluster is one test's world: a namespace and nodes on the real API server, compute hosts
// of the same names in the Nova simulator.
type cluster struct {
	t     *testing.T
	cs    kubernetes.Interface
	ns    string
	px    string
	world *sim.World
	srv   *sim.Server
	kube  *kube.Client
	nova  *nova.Client
	muts  *mutations
	cfg   model.Config
	ctrl  *kubetest.Controllers
}

func (c *cluster) name(s string) string { return c.px + "-" + s }

// newCluster makes: a control-plane node, three workers c0..c2 (compute hosts too), on c0
// two VMs, two web pods under a PDB (minAvailable 1 of 3), a DaemonSet pod, a bare pod.
func newCluster(t *testing.T, scale float64) *cluster {
	t.Helper()
	c := &cluster{t: t, cs: kubetest.Client(t), px: kubetest.Prefix(t), muts: &mutations{}}
	c.ns = kubetest.Namespace(t, c.cs, c.px)
	kubetest.Node(t, c.cs, c.name("cp"), kubetest.Role("control-plane"))
	c.world = sim.NewWorld(sim.Options{Scale: scale, Seed: 7})
	for _, n := range []string{"c0", "c1", "c2"} {
		kubetest.Node(t, c.cs, c.name(n))
		c.world.AddHost(c.name(n), 64, 262144, 2000)
	}
	c.world.AddServer("vm-a", c.name("c0"), sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	c.world.AddServer("vm-b", c.name("c0"), sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	rs, rsUID := kubetest.ReplicaSet(t, c.cs, c.ns, "web", 3)
	for i, n := range []string{"c0", "c0", "c1"} {
		kubetest.Pod(t, c.cs, c.ns, fmt.Sprintf("web-%d", i), c.name(n), kubetest.Owned("ReplicaSet", rs, rsUID), kubetest.Labels("app", "web"), kubetest.Grace(1))
	}
	kubetest.PDB(t, c.cs, c.ns, "web-pdb", "web", 1)
	dsUID := kubetest.DaemonSet(t, c.cs, c.ns, "libvirt")
	kubetest.Pod(t, c.cs, c.ns, "libvirt-x", c.name("c0"), kubetest.Owned("DaemonSet", "libvirt", dsUID), kubetest.Labels("application", "libvirt"))
	kubetest.Pod(t, c.cs, c.ns, "shell", c.name("c0"), kubetest.Grace(1))
	c.ctrl = &kubetest.Controllers{}
	c.ctrl.Run(t, c.cs, c.ns)
	kubetest.Eventually(t, 10*time.Second, "the disruption controller's first status", func() bool {
		p, err := c.cs.PolicyV1().PodDisruptionBudgets(c.ns).Get(kubetest.Ctx(t), "web-pdb", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 3
	})

	var err error
	if c.srv, err = sim.Serve(c.world, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.srv.Close() })
	env := map[string]string{}
	for _, kv := range c.srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	creds, _ := nova.ResolveCredentials(nil, model.OpenStackConfig{}, func(k string) string { return env[k] })
	if c.nova, err = nova.Connect(kubetest.Ctx(t), creds, nova.Options{}); err != nil {
		t.Fatal(err)
	}
	c.kube = c.kubeClient()
	c.cfg = model.DefaultConfig()
	c.cfg.Timeouts.Eviction = model.Duration(20 * time.Second)
	return c
}

func (c *cluster) kubeClient() *kube.Client {
	return c.kubeClientFor(kube.Tune(kubetest.Config(c.t), kube.Options{QPS: 200, Burst: 400, WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		c.muts.next = rt
		return c.muts
	}}))
}

func (c *cluster) kubeClientFor(cfg *rest.Config) *kube.Client { return kubetest.KubeClient(c.t, cfg) }

func (c *cluster) engine(holder string, mod func(*ops.EngineOptions)) *ops.Engine {
	o := ops.EngineOptions{Holder: holder, Poll: 5 * time.Millisecond, StallAfter: 300 * time.Millisecond, Backoff: 20 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	return ops.NewEngine(c.kube, c.nova, c.cfg, o)
}

// recorder keeps the events of a run.
type recorder struct {
	mu     sync.Mutex
	events []ops.Event
}

func (r *recorder) emit(e ops.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }

// engineStates are the migration states the engine decides; Nova's own phases (accepted,
// queued, preparing, running, post-migrating) are seen or not depending on when a poll
// lands, so a stable transcript leaves them out.
var engineStates = map[string]bool{ops.MigRequested: true, ops.MigRetrying: true, "stalled": true, ops.MigForced: true,
	ops.MigCompleted: true, ops.MigFailed: true, ops.MigAborted: true, ops.MigSkipped: true}

// transcript normalizes the events into a stable text: the steps in order, then each pod's
// and each VM's sequence of states (no progress samples, no times), sorted by name. The
// node prefix is replaced by "T".
func (r *recorder) transcript(px string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var steps []string
	objs := map[string][]string{}
	add := func(key, state string) {
		if s := objs[key]; len(s) == 0 || s[len(s)-1] != state {
			objs[key] = append(s, state)
		}
	}
	for _, e := range r.events {
		switch e := e.(type) {
		case ops.StepEvent:
			steps = append(steps, fmt.Sprintf("step %-16s %s", e.Step, e.State))
		case ops.PodEvent:
			add("pod "+e.Pod[strings.Index(e.Pod, "/")+1:], e.State)
		case ops.MigrationEvent:
			if engineStates[e.State] {
				add("vm  "+e.VM, e.State)
			}
		case ops.RunDone:
			for _, r := range e.Report.Reasons {
				steps = append(steps, fmt.Sprintf("reason %s %s %s", r.Code, r.Object, r.Override))
			}
			steps = append(steps, "done "+e.Report.Result)
		}
	}
	keys := make([]string, 0, len(objs))
	for k := range objs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := strings.Join(steps, "\n") + "\n"
	for _, k := range keys {
		out += k + ": " + strings.Join(objs[k], " > ") + "\n"
	}
	return strings.ReplaceAll(out, px, "T")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("event transcript differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func run(t *testing.T, e *ops.Engine, op model.OpKind, target string, ro ops.RunOptions) (*recorder, ops.Report, error) {
	t.Helper()
	plan, err := e.Plan(kubetest.Ctx(t), op, target, ro)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	rec := &recorder{}
	rep, err := e.Run(kubetest.Ctx(t), plan, ro, rec.emit)
	return rec, rep, err
}

func defaults() policy.Options {
	o, _ := policy.FromConfig(model.DefaultConfig().Policy)
	return o
}

func (c *cluster) node(name string) model.KubeNode {
	n, err := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(c.t), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	out := model.KubeNode{Name: n.Name, Schedulable: !n.Spec.Unschedulable, Annotations: n.Annotations}
	for _, t := range n.Spec.Taints {
		out.Taints = append(out.Taints, model.Taint{Key: t.Key})
	}
	return out
}

func TestEvacuateThenUncordon(t *testing.T) {
	c := newCluster(t, 100)
	e := c.engine("tester@a", nil)
	c0 := c.name("c0")

	// The bare pod refuses the plan; nothing changes.
	before := c.muts.n.Load()
	rec, _, err := run(t, e, model.OpEvacuate, c0, ops.RunOptions{Policy: defaults()})
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || refused.Reasons[0].Code != model.BarePod || refused.Reasons[0].Override != "--force" {
		t.Fatalf("want a refusal for the bare pod, got %v", err)
	}
	if ops.ExitCodeOf(err) != ops.ExitRefused || c.muts.n.Load() != before || c.world.Stats().Mutations != 0 {
		t.Fatalf("a refused plan changed something (exit %d)", ops.ExitCodeOf(err))
	}
	golden(t, "evacuate-refused", rec.transcript(c.px))

	// --force: evacuate everything.
	ro := ops.RunOptions{Policy: defaults(), Why: "kernel upgrade"}
	ro.Policy.Force = true
	rec, rep, err := run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.transcript(c.px))
	}
	golden(t, "evacuate", rec.transcript(c.px))
	if rep.Result != ops.ResultDone || len(rep.VMs) != 2 || len(rep.Pods) != 3 {
		t.Errorf("report %+v", rep)
	}
	n := c.node(c0)
	j, ok := ops.ReadJournal(n)
	if n.Schedulable || !ok || j.Phase != ops.PhaseDone || !j.WasSchedulable {
		t.Errorf("node after evacuate: %+v journal %+v", n, j)
	}
	h, _ := c.world.Host(c0)
	if h.Enabled || !strings.HasPrefix(h.DisabledReason, "drainctl: evacuate by tester@a at ") || !strings.HasSuffix(h.DisabledReason, ": kernel upgrade") {
		t.Errorf("compute after evacuate: %+v", h)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.world.ServerByName(name); vm.Host == c0 || vm.Status != "ACTIVE" {
			t.Errorf("%s: %+v", name, vm)
		}
	}
	left := c.kube.PodsOn(c0)
	if len(left) != 1 || left[0].Name != "libvirt-x" {
		t.Errorf("pods left on %s: %v", c0, left)
	}

	// A rerun of the finished evacuation changes nothing at all.
	kubeBefore, novaBefore := c.muts.n.Load(), c.world.Stats().Mutations
	rec, _, err = run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	if k, n := c.muts.n.Load()-kubeBefore, c.world.Stats().Mutations-novaBefore; k != 0 || n != 0 {
		t.Errorf("rerun made %d Kubernetes and %d Nova mutating calls", k, n)
	}
	golden(t, "evacuate-rerun", rec.transcript(c.px))

	rec, _, err = run(t, e, model.OpUncordon, c0, ops.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "uncordon", rec.transcript(c.px))
	n = c.node(c0)
	if _, journaled := ops.ReadJournal(n); !n.Schedulable || hasTaint(n, c.cfg.Policy.TaintKey) || journaled {
		t.Errorf("node after uncordon: %+v", n)
	}
	if h, _ := c.world.Host(c0); !h.Enabled {
		t.Errorf("compute not re-enabled: %+v", h)
	}
}

func TestPDBThatNeverAllowsTimesOutNamingIt(t *testing.T) {
	c := newCluster(t, 100)
	c.cfg.Timeouts.Eviction = model.Duration(300 * time.Millisecond)
	c.ctrl.Freeze("frozen-pdb")
	kubetest.PDB(t, c.cs, c.ns, "frozen-pdb", "frozen", 1)
	kubetest.SetPDBStatus(t, c.cs, c.ns, "frozen-pdb", 0, 1, 1, 1)
	rs, uid := kubetest.ReplicaSet(t, c.cs, c.ns, "frozen", 1)
	kubetest.Pod(t, c.cs, c.ns, "frozen-0", c.name("c2"), kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels("app", "frozen"))
	e := c.engine("tester@a", nil)
	_, rep, err := run(t, e, model.OpEvacuate, c.name("c2"), ops.RunOptions{Policy: defaults()})
	if err == nil || !strings.Contains(err.Error(), "PodDisruptionBudget frozen-pdb") {
		t.Fatalf("got %v", err)
	}
	var refusals int
	for _, p := range rep.Pods {
		if p.Pod == c.ns+"/frozen-0" {
			refusals = p.Blocked
		}
	}
	// The engine waits on the budget it watches instead of knocking: at most one 429.
	if refusals > 1 {
		t.Errorf("the API server refused the pod %d times: the engine should wait on the watched budget", refusals)
	}
	if j, _ := ops.ReadJournal(c.node(c.name("c2"))); j.Phase != ops.PhaseFailed {
		t.Errorf("journal %+v", j)
	}
}

func TestSecondEngineRefusedByLease(t *testing.T) {
	c := newCluster(t, 100)
	a := c.engine("tester@a", nil)
	b := c.engine("tester@b", nil)
	if _, _, err := run(t, a, model.OpCordon, c.name("c1"), ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatal(err)
	}
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	_, _, err := run(t, b, model.OpEvacuate, c.name("c1"), ro)
	var held *ops.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "tester@a" || ops.ExitCodeOf(err) != ops.ExitRefused {
		t.Fatalf("second engine: %v", err)
	}
	// The holder itself goes on.
	if _, _, err := run(t, a, model.OpEvacuate, c.name("c1"), ro); err != nil {
		t.Fatalf("holder: %v", err)
	}
}

func TestInterruptedThenResumed(t *testing.T) {
	c := newCluster(t, 20)
	e := c.engine("tester@a", nil)
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	c0 := c.name("c0")
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(kubetest.Ctx(t))
	rec := &recorder{}
	// Interrupt as soon as the first VM has completed.
	_, err = e.Run(ctx, plan, ro, func(ev ops.Event) {
		rec.emit(ev)
		if m, ok := ev.(ops.MigrationEvent); ok && m.State == ops.MigCompleted {
			cancel()
		}
	})
	var intr *ops.Interrupted
	if !errors.As(err, &intr) || ops.ExitCodeOf(err) != ops.ExitInterrupted {
		t.Fatalf("want an interruption, got %v", err)
	}
	if j, _ := ops.ReadJournal(c.node(c0)); j.Phase != ops.PhaseInterrupted {
		t.Errorf("journal %+v", j)
	}
	// Resume: the remaining VM and the pods go; nothing is done twice.
	rec2, _, err := run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, rec2.transcript(c.px))
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		vm, _ := c.world.ServerByName(name)
		if n := len(c.world.MigrationStatuses(vm.ID)); n != 1 || vm.Host == c0 {
			t.Errorf("%s migrated %d times, now on %s", name, n, vm.Host)
		}
	}
	for _, step := range []string{"step cordon           skipped", "step disable-compute  skipped"} {
		if !strings.Contains(rec2.transcript(c.px), step) {
			t.Errorf("resume repeated a finished step (want %q):\n%s", step, rec2.transcript(c.px))
		}
	}
}

func TestMigrationFaults(t *testing.T) {
	t.Run("Nova 500 on the first request is retried", func(t *testing.T) {
		c := newCluster(t, 100)
		c.world.InjectFault(sim.Fault{Method: "POST", Path: regexp.MustCompile(`/action$`), Status: 500, Times: 1})
		vm, _ := c.world.ServerByName("vm-b")
		_, rep, err := run(t, c.engine("t", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
		if err != nil || rep.VMs[0].Attempts != 2 || rep.VMs[0].Result != ops.MigCompleted {
			t.Fatalf("%v %+v", err, rep.VMs)
		}
		if after, _ := c.world.ServerByName("vm-b"); after.Host == vm.Host {
			t.Error("not moved")
		}
	})
	t.Run("Nova 500 every time fails with Nova's message", func(t *testing.T) {
		c := newCluster(t, 100)
		c.world.InjectFault(sim.Fault{Method: "POST", Path: regexp.MustCompile(`/action$`), Status: 500})
		_, _, err := run(t, c.engine("t", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
		if err == nil || !strings.Contains(err.Error(), "500 Unexpected API Error") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a migration that errors is reported with the instance action's message", func(t *testing.T) {
		c := newCluster(t, 100)
		c.world.ApplyFaultSpec("fail-migration=vm-b@preparing")
		rec, rep, err := run(t, c.engine("t", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
		if err == nil || !strings.Contains(err.Error(), "Error in pre_live_migration") || rep.VMs[0].Attempts != 2 {
			t.Fatalf("%v %+v", err, rep.VMs)
		}
		golden(t, "migrate-fails", rec.transcript(c.px))
	})
	t.Run("no valid host", func(t *testing.T) {
		c := newCluster(t, 100)
		c.world.SetNoValidHost(true)
		_, _, err := run(t, c.engine("t", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
		if err == nil || !strings.Contains(err.Error(), "No valid host was found") {
			t.Fatalf("%v", err)
		}
	})
	for _, policyName := range []string{ops.StallForceComplete, ops.StallAbort, ops.StallWait} {
		t.Run("never converges: "+policyName, func(t *testing.T) {
			c := newCluster(t, 20)
			c.world.ApplyFaultSpec("never-converge=vm-b")
			c.cfg.Timeouts.Migration = model.Duration(3 * time.Second)
			e := c.engine("t", func(o *ops.EngineOptions) {
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
			golden(t, "stall-"+policyName, rec.transcript(c.px))
		})
	}
}

func TestRollbackRestoresTheNode(t *testing.T) {
	c := newCluster(t, 10)
	c.world.ApplyFaultSpec("never-converge=vm-a")
	e := c.engine("tester@a", func(o *ops.EngineOptions) { o.OnStall = ops.StallWait })
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	c0 := c.name("c0")
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
	golden(t, "rollback", rec.transcript(c.px))
	vm, _ := c.world.ServerByName("vm-a")
	if vm.Host != c0 || vm.Status != "ACTIVE" {
		t.Errorf("vm-a after rollback: %+v", vm)
	}
	n := c.node(c0)
	if _, j := ops.ReadJournal(n); !n.Schedulable || hasTaint(n, c.cfg.Policy.TaintKey) || j {
		t.Errorf("node after rollback: %+v", n)
	}
	if h, _ := c.world.Host(c0); !h.Enabled {
		t.Errorf("compute after rollback: %+v", h)
	}
}

func hasTaint(n model.KubeNode, key string) bool {
	for _, t := range n.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// Kubernetes alone: no Nova at all. Pods are evacuated, the VM steps say there is nothing to
// move, and the node-level refusals still apply.
func TestKubernetesAlone(t *testing.T) {
	c := newCluster(t, 100)
	e := ops.NewEngine(c.kube, nil, c.cfg, ops.EngineOptions{Holder: "t", Poll: 5 * time.Millisecond, Backoff: 20 * time.Millisecond})
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c.name("c1"), ops.RunOptions{Policy: defaults()})
	if err != nil || plan.Steps[3].Detail != "no VMs to move: this node has no compute service" || plan.Host != "" {
		t.Errorf("plan without Nova: %+v %v", plan, err)
	}
	rec, rep, err := run(t, e, model.OpEvacuate, c.name("c1"), ops.RunOptions{Policy: defaults()})
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.transcript(c.px))
	}
	golden(t, "kubernetes-alone", rec.transcript(c.px))
	if len(rep.VMs) != 0 || len(rep.Pods) != 1 {
		t.Errorf("report %+v", rep)
	}
	_, _, err = run(t, e, model.OpEvacuate, c.name("cp"), ops.RunOptions{Policy: defaults()})
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || refused.Reasons[0].Code != model.ControlPlane {
		t.Errorf("control plane without Nova: %v", err)
	}
}

// With Nova configured, a worker that has no compute service is evacuated of its pods and
// says there were no VMs to move.
func TestNodeWithoutComputeService(t *testing.T) {
	c := newCluster(t, 100)
	w9 := c.name("w9")
	kubetest.Node(t, c.cs, w9)
	rs, uid := kubetest.ReplicaSet(t, c.cs, c.ns, "batch", 1)
	kubetest.Pod(t, c.cs, c.ns, "batch-0", w9, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Grace(1))
	e := c.engine("t", nil)
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
	if pods := c.kube.PodsOn(w9); len(pods) != 0 {
		t.Errorf("left %v", pods)
	}
}

// With migrations_per_destination = 1 and two migrations allowed per source, the two VMs go
// to two different hosts at once; with one destination left, they go one after the other.
func TestPerDestinationCap(t *testing.T) {
	c := newCluster(t, 50)
	c.cfg.Concurrency.MigrationsPerSource, c.cfg.Concurrency.MigrationsPerDestination = 4, 1
	e := c.engine("t", nil)
	ro := ops.RunOptions{Policy: defaults(), VMsOnly: true}
	if _, _, err := run(t, e, model.OpEvacuate, c.name("c0"), ro); err != nil {
		t.Fatal(err)
	}
	a, _ := c.world.ServerByName("vm-a")
	b, _ := c.world.ServerByName("vm-b")
	if a.Host == b.Host {
		t.Errorf("both VMs went to %s despite a cap of 1 per destination", a.Host)
	}
	// Back to c0, then only c1 can take them: one at a time.
	c.world.Update(func(h map[string]*sim.Host, s map[string]*sim.VM) {
		s[a.ID].Host, s[b.ID].Host = c.name("c0"), c.name("c0")
		h[c.name("c2")].Enabled = false
	})
	rec, _, err := run(t, e, model.OpEvacuate, c.name("c0"), ro)
	if err != nil {
		t.Fatal(err)
	}
	inFlight, most := 0, 0
	for _, ev := range rec.events {
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
	ma, mb := c.world.MigrationStatuses(a.ID), c.world.MigrationStatuses(b.ID)
	if len(ma) != 2 || len(mb) != 2 {
		t.Fatalf("migrations: %v %v", ma, mb)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.world.ServerByName(name); vm.Host != c.name("c1") {
			t.Errorf("%s on %s", name, vm.Host)
		}
	}
}

// A Kubernetes change is seen by re-joining with the last Nova read: no Nova request.
func TestRejoinSeesKubernetesWithoutCallingNova(t *testing.T) {
	c := newCluster(t, 100)
	inv := c.engine("t", nil).Inventory()
	if _, err := inv.Read(kubetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	before := c.world.Stats().Requests
	c.setUnschedulable(c.name("c2"), true)
	kubetest.Eventually(t, 10*time.Second, "the cordon in a re-join", func() bool {
		got, err := inv.Rejoin(kubetest.Ctx(t))
		n, _ := got.Node(c.name("c2"))
		return err == nil && n.Kube != nil && !n.Kube.Schedulable && n.Compute != nil
	})
	if after := c.world.Stats().Requests; after != before {
		t.Errorf("re-joins made %d Nova requests", after-before)
	}
}

// Recommend re-ranks incrementally as the cluster changes (a pod in Kubernetes, a service
// in Nova), and what it returns is what a full ranking of the same inventory says.
func TestRecommendFollowsChanges(t *testing.T) {
	c := newCluster(t, 20)
	e := c.engine("rank@test", nil)
	ctx := kubetest.Ctx(t)
	w := policy.WeightsFromConfig(c.cfg.ScaleDown)
	c1, c2 := c.name("c1"), c.name("c2")
	if _, _, err := e.Recommend(ctx, defaults(), true); err != nil {
		t.Fatal(err)
	}
	kubetest.Pod(t, c.cs, c.ns, "shell-c1", c1, kubetest.Grace(1))
	c.world.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) {
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
