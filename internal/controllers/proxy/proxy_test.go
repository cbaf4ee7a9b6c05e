package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/drainctl/drainctl/internal/controllers/proxy"
	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// env is one test's world on the real API server and the simulators: workers w0..w2, each
// a Kubernetes node, a Nova compute host and a cloudpool machine (paired through the
// node's providerID), and the proxy in front of the pool.
//
//	w0: vm-a 8 GiB, web-0, api-0    w1: vm-b 4 GiB, web-1, api-1    w2: vm-c 2 GiB, web-2
//
// so w2 is the cheapest to empty.
type env struct {
	t     *testing.T
	cs    kubernetes.Interface
	ns    string
	px    string
	world *sim.World
	pool  *sim.CloudPool
	eng   *ops.Engine
	url   string // the proxy
	logs  *lines
	stop  context.CancelFunc
	proxy *proxy.Proxy
}

func (e *env) name(s string) string { return e.px + "-" + s }

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, cs: kubetest.Client(t), px: kubetest.Prefix(t), logs: &lines{}}
	e.ns = kubetest.Namespace(t, e.cs, e.px)
	e.world = sim.NewWorld(sim.Options{Scale: 20, Seed: 3})
	var machines []string
	for _, w := range []string{"w0", "w1", "w2"} {
		kubetest.Node(t, e.cs, e.name(w), kubetest.ProviderID("openstack:///"+e.name(w)))
		e.world.AddHost(e.name(w), 64, 262144, 2000)
		machines = append(machines, e.name(w))
	}
	e.world.AddServer("vm-a", e.name("w0"), sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	e.world.AddServer("vm-b", e.name("w1"), sim.Flavor{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40})
	e.world.AddServer("vm-c", e.name("w2"), sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	web, webUID := kubetest.ReplicaSet(t, e.cs, e.ns, "web", 3)
	api, apiUID := kubetest.ReplicaSet(t, e.cs, e.ns, "api", 2)
	for i, w := range []string{"w0", "w1", "w2"} {
		kubetest.Pod(t, e.cs, e.ns, fmt.Sprintf("web-%d", i), e.name(w), kubetest.Owned("ReplicaSet", web, webUID), kubetest.Labels("app", "web"), kubetest.Grace(1))
	}
	for i, w := range []string{"w0", "w1"} {
		kubetest.Pod(t, e.cs, e.ns, fmt.Sprintf("api-%d", i), e.name(w), kubetest.Owned("ReplicaSet", api, apiUID), kubetest.Labels("app", "api"), kubetest.Grace(1))
	}
	kubetest.PDB(t, e.cs, e.ns, "web-pdb", "web", 2)
	(&kubetest.Controllers{}).Run(t, e.cs, e.ns)
	kubetest.Eventually(t, 10*time.Second, "the disruption controller's first status", func() bool {
		p, err := e.cs.PolicyV1().PodDisruptionBudgets(e.ns).Get(kubetest.Ctx(t), "web-pdb", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 3
	})

	srv, err := sim.Serve(e.world, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	// The proxy's Nova user has exactly the rules deploy/README.md lists, no admin role.
	rules, _ := simtest.DeployRules(t, "../../../deploy/README.md")
	env := map[string]string{}
	for _, kv := range srv.AddUser(sim.User{Name: "operator", Password: "pw-operator", Domain: "Default", Project: "ops", Rules: rules}) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	creds, _ := nova.ResolveCredentials(nil, model.OpenStackConfig{}, func(k string) string { return env[k] })
	nc, err := nova.Connect(kubetest.Ctx(t), creds, nova.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The proxy runs with its ServiceAccount's permissions only (deploy/proxy-rbac.yaml).
	for _, err := range kubetest.Apply(t, false, "../../../deploy/namespace.yaml", "../../../deploy/leases-role.yaml", "../../../deploy/proxy-rbac.yaml") {
		t.Fatal(err)
	}
	restCfg := kube.Tune(kubetest.Config(t), kube.Options{QPS: 200, Burst: 400})
	restCfg.Impersonate.UserName = "system:serviceaccount:drainctl:drainctl-proxy"
	cfg := model.DefaultConfig()
	cfg.Timeouts.Eviction = model.Duration(20 * time.Second)
	e.eng = ops.NewEngine(kubetest.KubeClient(t, restCfg), nc, cfg, ops.EngineOptions{Holder: "proxy@test",
		Poll: 5 * time.Millisecond, StallAfter: time.Minute, Backoff: 20 * time.Millisecond})
	if e.pool, err = sim.ServeCloudPool(machines...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.pool.Close)
	e.start(e.pool.URL)
	return e
}

// start runs a proxy in front of backend.
func (e *env) start(backend string) { e.startWith(backend, proxy.Options{}) }

// restart stops the proxy and runs another in front of the same pool with o's limits.
func (e *env) restart(o proxy.Options) {
	e.stop()
	e.startWith(e.pool.URL, o)
}

func (e *env) startWith(backend string, o proxy.Options) {
	pol, _ := policy.FromConfig(model.DefaultConfig())
	ctx, cancel := context.WithCancel(context.Background())
	p, err := proxy.New(ctx, e.eng, proxy.Options{Backend: backend, BackendTimeout: 10 * time.Second,
		Run: ops.RunOptions{Policy: pol}, Logf: e.logs.add, MinSize: o.MinSize, MaxSize: o.MaxSize, Token: testToken,
		MaxScaleDown: o.MaxScaleDown, MaxScaleDownPerHour: o.MaxScaleDownPerHour})
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	e.url, e.stop, e.proxy = srv.URL, func() { cancel(); p.Wait(); srv.Close() }, p
	e.t.Cleanup(e.stop)
}

// lines collects the proxy's log lines.
type lines struct {
	mu sync.Mutex
	s  []string
}

func (l *lines) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s = append(l.s, fmt.Sprintf(format, a...))
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.s, "\n")
}

type response struct {
	status int
	header http.Header
	body   string
}

// apiError decodes the API's error shape, failing the test when the body is not one.
func (r response) apiError(t *testing.T) (message, detail string) {
	t.Helper()
	var e struct{ Message, Detail string }
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Message == "" {
		t.Fatalf("status %d: body is not {message, detail}: %q", r.status, r.body)
	}
	return e.Message, e.Detail
}

// testToken is the proxy's token in these tests; do sends it unless told another
// Authorization ("" : none).
const testToken = "proxy-test-token"

func do(t *testing.T, ctx context.Context, method, url, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (e *env) nodeExists(name string) bool {
	_, err := e.cs.CoreV1().Nodes().Get(kubetest.Ctx(e.t), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	return err == nil
}

func (e *env) terminations() []string {
	var out []string
	for _, r := range e.pool.Requests() {
		if strings.HasSuffix(r.Path, "/terminate") {
			out = append(out, r.Path+" "+r.Body)
		}
	}
	return out
}

// Every request that does not shrink the pool reaches the backend as the client sent it,
// and the backend's answer, errors included, reaches the client as the backend gave it.
func TestForwardsAsIs(t *testing.T) {
	e := newEnv(t)
	ctx := kubetest.Ctx(t)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/pool?verbose=true", ""},
		{"GET", "/pool/size", ""},
		{"GET", "/pool/metadata", ""},
		{"GET", "/status", ""},
		{"POST", "/config", `{"name": "workers", "scaleOutConfig": {"size": "m1.xlarge"}}`},
		{"GET", "/config", ""},
		{"POST", "/pool/" + e.name("w1") + "/serviceState", `{"serviceState": "OUT_OF_SERVICE"}`},
		{"POST", "/pool/" + e.name("w1") + "/membershipStatus", `{"membershipStatus": {"active": true, "evictable": true}}`},
		{"POST", "/pool/nope/detach", `{"decrementDesiredSize": false}`},                   // the backend's 404
		{"POST", "/pool/" + e.name("w0") + "/serviceState", `{"serviceState": "ON_FIRE"}`}, // the backend's 400
		{"POST", "/pool/size", `{"desiredSize": 5}`},                                       // a scale-up
		{"POST", "/pool/size", `{"desiredSize": 3}`},                                       // no change
	} {
		n := len(e.pool.Requests())
		viaProxy := do(t, ctx, tc.method, e.url+tc.path, tc.body, "X-Request-Id", "r-42", "Content-Type", "application/json")
		seen := e.pool.Requests()[n:]
		last := seen[len(seen)-1]
		path, query, _ := strings.Cut(tc.path, "?")
		if last.Method != tc.method || last.Path != path || last.Query != query || last.Body != tc.body ||
			last.Header.Get("X-Request-Id") != "r-42" || last.Header.Get("Content-Type") != "application/json" ||
			last.Header.Get("Authorization") != "" { // the proxy's token is not the backend's
			t.Errorf("%s %s reached the backend as %+v", tc.method, tc.path, last)
		}
		direct := do(t, ctx, tc.method, e.pool.URL+tc.path, tc.body, "Content-Type", "application/json")
		if tc.method == "GET" && tc.path != "/pool?verbose=true" && (viaProxy.status != direct.status || viaProxy.body != direct.body) {
			t.Errorf("%s %s: proxy answered %d %q, the backend %d %q", tc.method, tc.path, viaProxy.status, viaProxy.body, direct.status, direct.body)
		}
		if viaProxy.status != direct.status {
			t.Errorf("%s %s: proxy answered %d, the backend %d", tc.method, tc.path, viaProxy.status, direct.status)
		}
	}
	if e.pool.Desired() != 3 {
		t.Errorf("desired size %d after the forwarded 5 then 3", e.pool.Desired())
	}
	// The backend in trouble: its status and its error body, unchanged.
	e.pool.FailNext("/pool", 500, "cloud API rate-limited")
	r := do(t, ctx, "GET", e.url+"/pool", "")
	if msg, detail := r.apiError(t); r.status != 500 || msg != "cloud API rate-limited" || detail != "injected by the simulator" {
		t.Errorf("backend error: %d %q", r.status, r.body)
	}
	// The backend in trouble during a scale-down's first read: passed through too.
	e.pool.FailNext("/pool", 503, "maintenance")
	r = do(t, ctx, "POST", e.url+"/pool/size", `{"desiredSize": 1}`)
	if msg, _ := r.apiError(t); r.status != 503 || msg != "maintenance" {
		t.Errorf("backend error in a scale-down: %d %q", r.status, r.body)
	}
	// Bad input never reaches the backend.
	n := len(e.pool.Requests())
	for _, body := range []string{`nope`, `{}`, `{"desiredSize": -1}`, `{"desiredSize": "two"}`} {
		r := do(t, ctx, "POST", e.url+"/pool/size", body)
		if _, detail := r.apiError(t); r.status != 400 || !strings.Contains(detail, "desiredSize") {
			t.Errorf("%s: %d %q", body, r.status, r.body)
		}
	}
	if r := do(t, ctx, "POST", e.url+"/pool/"+e.name("w2")+"/terminate", `{"decrementDesiredSize": "yes"}`); r.status != 400 {
		t.Errorf("malformed terminate: %d %q", r.status, r.body)
	}
	if len(e.pool.Requests()) != n {
		t.Error("bad input was sent on to the backend")
	}
	// No backend at all: 502 in the API's shape.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	e.start(dead)
	for _, req := range [][2]string{{"GET", "/pool"}, {"POST", "/pool/size"}} {
		r := do(t, ctx, req[0], e.url+req[1], `{"desiredSize": 1}`)
		if msg, _ := r.apiError(t); r.status != 502 || !strings.Contains(msg, "did not answer") {
			t.Errorf("%s %s with the backend down: %d %q", req[0], req[1], r.status, r.body)
		}
	}
}

// Every caller presents the proxy's token: a scale-down with none, a wrong one or one
// padded is refused (401) before anything moves, and the backend never hears of it; a
// request outside the API's documented ones is refused (404), never forwarded, token or not.
func TestCallersAuthenticated(t *testing.T) {
	e := newEnv(t)
	ctx := kubetest.Ctx(t)
	n := len(e.pool.Requests())
	for _, auth := range []string{"", "Bearer", "Bearer wrong", "Bearer " + testToken + "x", "Basic " + testToken, "bearer " + testToken} {
		r := do(t, ctx, "POST", e.url+"/pool/size", `{"desiredSize": 1}`, "Authorization", auth)
		if msg, _ := r.apiError(t); r.status != 401 || msg != "not authenticated" || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: %d %q", auth, r.status, r.body)
		}
		if r := do(t, ctx, "GET", e.url+"/pool", "", "Authorization", auth); r.status != 401 {
			t.Errorf("GET /pool with Authorization %q: %d", auth, r.status)
		}
	}
	for _, req := range [][2]string{{"DELETE", "/pool"}, {"PUT", "/pool/size"}, {"GET", "/admin"}, {"POST", "/pool/x/reboot"}} {
		if r := do(t, ctx, req[0], e.url+req[1], ""); r.status != 404 {
			t.Errorf("%s %s: %d %q; want 404", req[0], req[1], r.status, r.body)
		}
	}
	if seen := e.pool.Requests()[n:]; len(seen) != 0 {
		t.Errorf("refused requests reached the backend: %+v", seen)
	}
	if e.pool.Desired() != 3 || !e.nodeExists(e.name("w2")) || len(e.terminations()) != 0 {
		t.Errorf("after refused requests: desired %d, terminations %v", e.pool.Desired(), e.terminations())
	}
	if !strings.Contains(e.logs.String(), "no valid bearer token") || strings.Contains(e.logs.String(), testToken) {
		t.Errorf("the refusals are not logged, or the token is:\n%s", e.logs)
	}
	if r := do(t, ctx, "GET", e.url+"/pool/size", ""); r.status != 200 {
		t.Errorf("with the token: %d %q", r.status, r.body)
	}
}

// desiredSize below the active machines: the cheapest node is emptied (its VM migrated, its
// pods evicted), its Node deleted, then its machine terminated with decrementDesiredSize.
func TestScaleDownEndToEnd(t *testing.T) {
	e := newEnv(t)
	r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 2}`)
	if r.status != 200 {
		t.Fatalf("scale-down: %d %q\n%s", r.status, r.body, e.logs)
	}
	w2 := e.name("w2")
	if e.nodeExists(w2) {
		t.Error("the Node is still there")
	}
	if got := e.terminations(); len(got) != 1 || got[0] != "/pool/"+w2+"/terminate "+`{"decrementDesiredSize":true}` {
		t.Errorf("terminations: %q", got)
	}
	if e.pool.State(w2) != "TERMINATED" || e.pool.Desired() != 2 {
		t.Errorf("pool: %s, desired %d", e.pool.State(w2), e.pool.Desired())
	}
	if vm, _ := e.world.ServerByName("vm-c"); vm.Host == w2 || vm.Status != "ACTIVE" {
		t.Errorf("vm-c: %s on %s", vm.Status, vm.Host)
	}
	if _, err := e.cs.CoreV1().Pods(e.ns).Get(kubetest.Ctx(t), "web-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-2 was not evicted: %v", err)
	}
	for _, w := range []string{"w0", "w1"} {
		if n, _ := e.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), e.name(w), metav1.GetOptions{}); n.Spec.Unschedulable {
			t.Errorf("%s was touched", w)
		}
	}
	// Asked again, nothing more to do: the size is now what was asked.
	if r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 2}`); r.status != 200 || len(e.terminations()) != 1 {
		t.Errorf("the same size again: %d %q, %d terminations", r.status, r.body, len(e.terminations()))
	}
}

// When no node can go, the answer lists every node's reasons and nothing is touched.
func TestScaleDownRefusedWithEveryReason(t *testing.T) {
	e := newEnv(t)
	for _, w := range []string{"w1", "w2"} {
		kubetest.Pod(t, e.cs, e.ns, "shell-"+w, e.name(w), kubetest.Grace(1)) // no controller: nothing recreates it
	}
	e.pool.Bless(e.name("w0"))
	r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 2}`)
	msg, detail := r.apiError(t)
	if r.status != 500 || msg != "no node can be removed safely" {
		t.Fatalf("%d %q", r.status, r.body)
	}
	for _, want := range []string{
		e.name("w0") + " (machine " + e.name("w0") + "): " + e.name("w0") + ": machine " + e.name("w0") + " is not evictable",
		e.name("w1") + " (machine " + e.name("w1") + "): " + e.ns + "/shell-w1",
		e.name("w2") + " (machine " + e.name("w2") + "): " + e.ns + "/shell-w2",
	} {
		if !strings.Contains(detail, want) {
			t.Errorf("the detail does not say %q:\n%s", want, detail)
		}
	}
	if len(e.terminations()) != 0 || e.pool.Desired() != 3 {
		t.Error("the pool was changed")
	}
	for _, w := range []string{"w0", "w1", "w2"} {
		if n, _ := e.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), e.name(w), metav1.GetOptions{}); n.Spec.Unschedulable {
			t.Errorf("%s was cordoned", w)
		}
	}
}

// terminate: refused for a node that cannot go, carried out (node first) for one that can,
// and the backend's own answer for a machine it does not have.
func TestTerminate(t *testing.T) {
	e := newEnv(t)
	ctx := kubetest.Ctx(t)
	kubetest.Pod(t, e.cs, e.ns, "shell", e.name("w0"), kubetest.Grace(1))
	r := do(t, ctx, "POST", e.url+"/pool/"+e.name("w0")+"/terminate", `{"decrementDesiredSize": true}`)
	if msg, detail := r.apiError(t); r.status != 500 || !strings.Contains(msg, "cannot be terminated safely") || !strings.Contains(detail, e.ns+"/shell") {
		t.Errorf("unsafe terminate: %d %q", r.status, r.body)
	}
	if len(e.terminations()) != 0 {
		t.Fatal("an unsafe terminate reached the backend")
	}
	r = do(t, ctx, "POST", e.url+"/pool/"+e.name("w1")+"/terminate", `{"decrementDesiredSize": false}`)
	if r.status != 200 {
		t.Fatalf("terminate w1: %d %q\n%s", r.status, r.body, e.logs)
	}
	if e.nodeExists(e.name("w1")) || e.pool.State(e.name("w1")) != "TERMINATED" || e.pool.Desired() != 3 {
		t.Errorf("after terminate: node there %v, machine %s, desired %d (no decrement asked)",
			e.nodeExists(e.name("w1")), e.pool.State(e.name("w1")), e.pool.Desired())
	}
	if vm, _ := e.world.ServerByName("vm-b"); vm.Host == e.name("w1") {
		t.Error("vm-b went down with its machine")
	}
	r = do(t, ctx, "POST", e.url+"/pool/i-do-not-exist/terminate", `{"decrementDesiredSize": true}`)
	if msg, _ := r.apiError(t); r.status != 404 || msg != "not a member of the pool" {
		t.Errorf("unknown machine: %d %q", r.status, r.body)
	}
}

// A client that hangs up mid-scale-down does not leave a node half-done: the scale-down goes
// on to the end, and a request meanwhile is told what is in progress instead of racing it.
func TestClientGoneMidScaleDown(t *testing.T) {
	e := newEnv(t)
	vmC, _ := e.world.ServerByName("vm-c")
	e.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmC.ID].DirtyBytesPerSec = 0.95 * (1 << 30) })
	ctx, hangUp := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/pool/size", bytes.NewReader([]byte(`{"desiredSize": 2}`)))
		req.Header.Set("Authorization", "Bearer "+testToken)
		_, err := http.DefaultClient.Do(req)
		done <- err
	}()
	kubetest.Eventually(t, 20*time.Second, "vm-c migrating", func() bool {
		vm, _ := e.world.ServerByName("vm-c")
		return vm.TaskState == "migrating"
	})
	hangUp()
	if err := <-done; err == nil {
		t.Fatal("the client's request should have ended with its context")
	}
	r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/"+e.name("w0")+"/terminate", `{"decrementDesiredSize": true}`)
	if msg, detail := r.apiError(t); r.status != 503 || r.header.Get("Retry-After") == "" ||
		!strings.Contains(msg, "in progress") || !strings.Contains(detail, "removing node "+e.name("w2")) {
		t.Errorf("a request during the scale-down: %d %q", r.status, r.body)
	}
	e.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmC.ID].DirtyBytesPerSec = 0 })
	kubetest.Eventually(t, 30*time.Second, "the machine terminated", func() bool { return e.pool.State(e.name("w2")) == "TERMINATED" })
	if e.nodeExists(e.name("w2")) || e.pool.Desired() != 2 {
		t.Errorf("node there %v, desired %d", e.nodeExists(e.name("w2")), e.pool.Desired())
	}
	if !strings.Contains(e.logs.String(), "the client went away") {
		t.Errorf("logs:\n%s", e.logs)
	}
	kubetest.Eventually(t, 5*time.Second, "the proxy idle again", func() bool {
		return do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 2}`).status == 200
	})
}

// The proxy stopped mid-scale-down (a rollout, a crash) records where the node stands; the
// next scale-down finishes that node rather than starting on another.
func TestRestartResumesTheSameNode(t *testing.T) {
	e := newEnv(t)
	vmC, _ := e.world.ServerByName("vm-c")
	e.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmC.ID].DirtyBytesPerSec = 0.95 * (1 << 30) })
	go func() {
		req, _ := http.NewRequest("POST", e.url+"/pool/size", strings.NewReader(`{"desiredSize": 2}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	kubetest.Eventually(t, 20*time.Second, "vm-c migrating", func() bool {
		vm, _ := e.world.ServerByName("vm-c")
		return vm.TaskState == "migrating"
	})
	e.stop() // waits for the scale-down to stop at a safe point
	n, err := e.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), e.name("w2"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j, ok := ops.ReadJournal(model.KubeNode{Annotations: n.Annotations}); !ok || j.Phase != ops.PhaseInterrupted {
		t.Fatalf("journal after the stop: %+v", j)
	}
	e.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmC.ID].DirtyBytesPerSec = 0 })
	e.start(e.pool.URL)
	if r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 2}`); r.status != 200 {
		t.Fatalf("after the restart: %d %q\n%s", r.status, r.body, e.logs)
	}
	if got := e.terminations(); len(got) != 1 || !strings.Contains(got[0], e.name("w2")) {
		t.Errorf("terminations: %q", got)
	}
	if e.nodeExists(e.name("w2")) {
		t.Error("w2 is still there")
	}
}

// A machine still booting (no node yet) counts: asked to shrink by one, the proxy empties
// and removes a node it chose instead of letting the backend pick any machine.
func TestShrinkCountsMachinesWithoutANode(t *testing.T) {
	e := newEnv(t)
	e.pool.Boot(e.name("booting"))
	r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 3}`)
	if r.status != 200 {
		t.Fatalf("scale-down: %d %q\n%s", r.status, r.body, e.logs)
	}
	w2 := e.name("w2")
	if got := e.terminations(); len(got) != 1 || got[0] != "/pool/"+w2+"/terminate "+`{"decrementDesiredSize":true}` {
		t.Errorf("terminations: %q\n%s", got, e.logs)
	}
	if e.pool.State(e.name("booting")) != "PENDING" || e.pool.Desired() != 3 {
		t.Errorf("pool: booting %s, desired %d", e.pool.State(e.name("booting")), e.pool.Desired())
	}
	if vm, _ := e.world.ServerByName("vm-c"); vm.Host == w2 {
		t.Error("vm-c was left on the removed node")
	}
}

// Sizes outside the configured limits are the client's mistake: 400, nothing forwarded.
func TestDesiredSizeOutsideLimitsIs400(t *testing.T) {
	e := newEnv(t)
	e.restart(proxy.Options{MinSize: 2, MaxSize: 5})
	for _, size := range []string{"1", "6"} {
		r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": `+size+`}`)
		if msg, _ := r.apiError(t); r.status != 400 || !strings.Contains(msg, "outside the pool's limits") {
			t.Errorf("desiredSize %s: %d %q", size, r.status, r.body)
		}
	}
	if e.pool.Desired() != 3 || len(e.terminations()) != 0 {
		t.Errorf("the pool was changed: desired %d", e.pool.Desired())
	}
}

// A caller, authenticated, empties the pool no faster than the bounds: a request that would
// remove two nodes is refused whole ([cloudpool] max_scale_down 1), and once the hour's removal
// (max_scale_down_per_hour 1) is spent, the next is a 429 too; nothing is terminated by either.
func TestAScaleDownIsBoundedByRequestAndByHour(t *testing.T) {
	e := newEnv(t)
	e.restart(proxy.Options{MaxScaleDown: 1, MaxScaleDownPerHour: 1})
	r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 1}`)
	if _, detail := r.apiError(t); r.status != 429 || !strings.Contains(detail, "max_scale_down") || len(e.terminations()) != 0 {
		t.Fatalf("removing two nodes at once: %d %q, %d terminated", r.status, r.body, len(e.terminations()))
	}
	if r := do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 2}`); r.status != 200 || len(e.terminations()) != 1 {
		t.Fatalf("removing one: %d %q, %d terminated", r.status, r.body, len(e.terminations()))
	}
	r = do(t, kubetest.Ctx(t), "POST", e.url+"/pool/size", `{"desiredSize": 1}`)
	if _, detail := r.apiError(t); r.status != 429 || !strings.Contains(detail, "max_scale_down_per_hour") || len(e.terminations()) != 1 {
		t.Errorf("a second removal within the hour: %d %q, %d terminated", r.status, r.body, len(e.terminations()))
	}
}
