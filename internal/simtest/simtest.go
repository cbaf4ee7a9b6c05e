// Package simtest builds a test's world for the engine and the controllers: nodes and pods
// on the real API server (envtest, through kubetest) and compute hosts of the same names in
// the Nova simulator, reached through the real clients over HTTP. Test code only.
package simtest

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/answers"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

// Mutations counts the Kubernetes requests that change something, and plays the faults a
// real API server cannot be steered into: an outage (Down: every request refused, as a
// restarting API server does), and a number of 503s on evictions or node patches.
type Mutations struct {
	N               atomic.Int64
	Log             CallLog // every request, Kubernetes' and Nova's, in order
	Down            atomic.Bool
	FailEvictions   atomic.Int32
	FailNodePatches atomic.Int32
	Latency         atomic.Int64 // nanoseconds every request but a watch is held: a slow API server
	next            http.RoundTripper
}

func (m *Mutations) RoundTrip(r *http.Request) (*http.Response, error) {
	if m.Down.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	if r.Method != http.MethodGet {
		m.N.Add(1)
	}
	m.Log.add("kube", r)
	if d := time.Duration(m.Latency.Load()); d > 0 && r.URL.Query().Get("watch") != "true" {
		time.Sleep(d)
	}
	fail := func(n *atomic.Int32) bool {
		for {
			v := n.Load()
			if v <= 0 {
				return false
			}
			if n.CompareAndSwap(v, v-1) {
				return true
			}
		}
	}
	if (r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/eviction") && fail(&m.FailEvictions)) ||
		(r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/api/v1/nodes/") && fail(&m.FailNodePatches)) {
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server is currently unable " +
			"to handle the request","reason":"ServiceUnavailable","code":503}`
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	}
	return m.next.RoundTrip(r)
}

// CallLog records requests in order, "kube GET /apis/…/leases/x", "nova POST /servers/ID/action":
// a test counts what an engine step costs.
type CallLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *CallLog) add(api string, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, api+" "+r.Method+" "+r.URL.Path)
}

// Calls is every request so far.
func (l *CallLog) Calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Cluster is one test's world: a namespace and nodes on the real API server, compute hosts
// of the same names in the Nova simulator.
type Cluster struct {
	T     *testing.T
	CS    kubernetes.Interface
	NS    string
	Px    string
	World *sim.World
	Srv   *sim.Server
	Kube  *kube.Client
	Nova  *nova.Client
	Muts  *Mutations
	Cfg   model.Config
	Ctrl  *kubetest.Controllers
}

// Name is s with the test's prefix: every test's nodes are its own.
func (c *Cluster) Name(s string) string { return c.Px + "-" + s }

// NewCluster makes: a control-plane node, three workers c0..c2 (compute hosts too), on c0
// two VMs, two web pods under a PDB (minAvailable 1 of 3), a DaemonSet pod, a bare pod.
// scale is the simulator's simulated seconds per real second.
func NewCluster(t *testing.T, scale float64) *Cluster {
	t.Helper()
	return NewClusterWith(t, sim.Options{Scale: scale, Seed: 7})
}

// NewClusterWith is NewCluster with the simulator's options (e.g. two live migrations per
// source host).
func NewClusterWith(t *testing.T, opts sim.Options) *Cluster {
	t.Helper()
	c := &Cluster{T: t, CS: kubetest.Client(t), Px: kubetest.Prefix(t), Muts: &Mutations{}}
	c.NS = kubetest.Namespace(t, c.CS, c.Px)
	kubetest.Node(t, c.CS, c.Name("cp"), kubetest.Role("control-plane"))
	c.World = sim.NewWorld(opts)
	for _, n := range []string{"c0", "c1", "c2"} {
		kubetest.Node(t, c.CS, c.Name(n))
		c.World.AddHost(c.Name(n), 64, 262144, 2000)
	}
	c.World.AddServer("vm-a", c.Name("c0"), sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	c.World.AddServer("vm-b", c.Name("c0"), sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	rs, rsUID := kubetest.ReplicaSet(t, c.CS, c.NS, "web", 3)
	for i, n := range []string{"c0", "c0", "c1"} {
		kubetest.Pod(
			t,
			c.CS,
			c.NS,
			fmt.Sprintf("web-%d", i),
			c.Name(n),
			kubetest.Owned("ReplicaSet", rs, rsUID),
			kubetest.Labels("app", "web"),
			kubetest.Grace(1),
		)
	}
	kubetest.PDB(t, c.CS, c.NS, "web-pdb", "web", 1)
	dsUID := kubetest.DaemonSet(t, c.CS, c.NS, "libvirt")
	kubetest.Pod(
		t,
		c.CS,
		c.NS,
		"libvirt-x",
		c.Name("c0"),
		kubetest.Owned("DaemonSet", "libvirt", dsUID),
		kubetest.Labels("application", "libvirt"),
	)
	kubetest.Pod(t, c.CS, c.NS, "shell", c.Name("c0"), kubetest.Grace(1))
	c.Ctrl = &kubetest.Controllers{}
	c.Ctrl.Run(t, c.CS, c.NS)
	kubetest.Eventually(t, 10*time.Second, "the disruption controller's first status", func() bool {
		p, err := c.CS.PolicyV1().PodDisruptionBudgets(c.NS).Get(kubetest.Ctx(t), "web-pdb", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 3
	})

	var err error
	if c.Srv, err = sim.Serve(c.World, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Srv.Close() })
	env := map[string]string{}
	for _, kv := range c.Srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	creds, _ := nova.ResolveCredentials(nil, model.OpenStackConfig{}, func(k string) string { return env[k] })
	logged := roundTripper(func(r *http.Request) (*http.Response, error) {
		c.Muts.Log.add("nova", r)
		return http.DefaultTransport.RoundTrip(r)
	})
	if c.Nova, err = nova.Connect(kubetest.Ctx(t), creds, nova.Options{Transport: logged, MovesGap: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	c.Kube = c.KubeClient()
	c.Cfg = model.DefaultConfig()
	c.Cfg.Timeouts.Eviction = model.Duration(20 * time.Second)
	return c
}

// KubeClient is a client of the test's API server that counts its mutations in c.Muts.
func (c *Cluster) KubeClient() *kube.Client {
	heard := &answers.Listeners{}
	kc := c.KubeClientFor(
		kube.Tune(kubetest.Config(c.T), kube.Options{QPS: 200, Burst: 400, Answers: heard,
			WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
				c.Muts.next = rt
				return c.Muts
			}}),
	)
	kc.Answers = heard
	return kc
}

// KubeClientFor is a client (informers synced) with cfg: e.g. impersonating a ServiceAccount.
func (c *Cluster) KubeClientFor(cfg *rest.Config) *kube.Client { return kubetest.KubeClient(c.T, cfg) }

// Engine is an engine on c with fast test timings; mod may change them.
func (c *Cluster) Engine(holder string, mod func(*ops.EngineOptions)) *ops.Engine {
	o := ops.EngineOptions{Holder: holder, Poll: 5 * time.Millisecond, StallAfter: 300 * time.Millisecond, Backoff: 20 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	return ops.NewEngine(c.Kube, c.Nova, c.Cfg, o)
}

// Node reads the node from the API server (not a cache).
func (c *Cluster) Node(name string) model.KubeNode {
	n, err := c.CS.CoreV1().Nodes().Get(kubetest.Ctx(c.T), name, metav1.GetOptions{})
	if err != nil {
		c.T.Fatal(err)
	}
	out := model.KubeNode{Name: n.Name, Schedulable: !n.Spec.Unschedulable, Annotations: n.Annotations}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready, out.ReadySince = c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	for _, t := range n.Spec.Taints {
		out.Taints = append(out.Taints, model.Taint{Key: t.Key})
	}
	return out
}

// SetAnnotation sets an annotation on the node as kubectl annotate does (a journal planted
// by whoever may patch the Node).
func (c *Cluster) SetAnnotation(node, key, value string) {
	c.T.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if _, err := c.CS.CoreV1().Nodes().Patch(kubetest.Ctx(c.T), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		c.T.Fatal(err)
	}
}

// SetUnschedulable cordons or uncordons the node as kubectl does (no taint).
func (c *Cluster) SetUnschedulable(node string, on bool) {
	c.T.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := c.CS.CoreV1().Nodes().Patch(kubetest.Ctx(c.T), node, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{}); err != nil {
		c.T.Fatal(err)
	}
}

// Recorder keeps the events of a run.
type Recorder struct {
	mu     sync.Mutex
	events []ops.Event
}

// Emit is the engine's emit.
func (r *Recorder) Emit(e ops.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }

// Events is a copy of what was emitted so far.
func (r *Recorder) Events() []ops.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ops.Event(nil), r.events...)
}

// engineStates are the migration states the engine decides; Nova's own phases (accepted,
// queued, preparing, running, post-migrating) are seen or not depending on when a poll
// lands, so a stable transcript leaves them out.
var engineStates = map[ops.MigState]bool{ops.MigRequested: true, ops.MigRetrying: true, ops.MigStalled: true, ops.MigForced: true,
	ops.MigCompleted: true, ops.MigFailed: true, ops.MigAborted: true, ops.MigSkipped: true}

// Transcript normalizes the events into a stable text: the steps in order, then each pod's
// and each VM's sequence of states (no progress samples, no times), sorted by name. The
// node prefix px is replaced by "T".
func (r *Recorder) Transcript(px string) string {
	var steps []string
	objs := map[string][]string{}
	add := func(key, state string) {
		if s := objs[key]; len(s) == 0 || s[len(s)-1] != state {
			objs[key] = append(s, state)
		}
	}
	for _, e := range r.Events() {
		switch e := e.(type) {
		case ops.StepEvent:
			steps = append(steps, fmt.Sprintf("step %-16s %s", e.Step, e.State))
		case ops.PodEvent:
			add("pod "+e.Pod[strings.Index(e.Pod, "/")+1:], string(e.State))
		case ops.MigrationEvent:
			if engineStates[e.State] {
				add("vm  "+e.VM, string(e.State))
			}
		case ops.RunDone:
			for _, r := range e.Report.Reasons {
				steps = append(steps, fmt.Sprintf("reason %s %s %s", r.Code, r.Object, r.Override))
			}
			steps = append(steps, "done "+string(e.Report.Result))
		case ops.CampaignEvent:
			if e.Node != "" && e.Message == "" {
				steps = append(steps, "campaign "+e.Node+" "+string(e.Phase))
			}
		case ops.PlanReady, ops.NodeChanged:
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

// Golden compares got with testdata/NAME.golden; with -update (a flag the test package
// defines) it rewrites the file.
func Golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
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

// Run plans op on target and runs it, recording the events.
func Run(t *testing.T, e *ops.Engine, op model.OpKind, target string, ro ops.RunOptions) (*Recorder, ops.Report, error) {
	t.Helper()
	plan, err := e.Plan(kubetest.Ctx(t), op, target, ro)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	rec := &Recorder{}
	rep, err := e.Run(kubetest.Ctx(t), plan, ro, rec.Emit)
	return rec, rep, err
}

// Defaults is the policy of the default configuration.
func Defaults() policy.Options {
	o, _ := policy.FromConfig(model.DefaultConfig())
	return o
}

// DeployRules reads the Nova and Placement policy rules deploy/README.md (at path) says
// drainctl needs, and which of them it calls optional.
func DeployRules(t testing.TB, path string) (rules []string, optional map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	optional = map[string]bool{}
	rule := regexp.MustCompile("`((?:os_compute_api|placement):[a-z_:-]+)`")
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`os_compute_api:") && !strings.Contains(cells[1], "`placement:") {
			continue
		}
		for _, m := range rule.FindAllStringSubmatch(cells[1], -1) {
			rules = append(rules, m[1])
			if strings.Contains(cells[3], "(optional") {
				optional[m[1]] = true
			}
		}
	}
	if len(rules) < 15 {
		t.Fatalf("%s lists %d policy rules: the table was not read", path, len(rules))
	}
	return rules, optional
}

// AsOperator connects the cluster's Nova client as a user granted exactly rules (no admin
// role): what the engines built after it do, that user may do.
func (c *Cluster) AsOperator(name string, rules []string) {
	c.T.Helper()
	env := map[string]string{}
	for _, kv := range c.Srv.AddUser(sim.User{Name: name, Password: "pw-" + name, Domain: "Default", Project: "ops", Rules: rules}) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	creds, err := nova.ResolveCredentials(nil, model.OpenStackConfig{}, func(k string) string { return env[k] })
	if err != nil {
		c.T.Fatal(err)
	}
	if c.Nova, err = nova.Connect(kubetest.Ctx(c.T), creds, nova.Options{MovesGap: time.Millisecond}); err != nil {
		c.T.Fatal(err)
	}
}

// Buffer is output read while another goroutine or process writes it (a process's stderr, the
// simulator's write log).
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
