package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/app"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// The drawing of the house, from its own imports: model <- ops <- (controllers, ui) <- app
// <- main. The UI and the model never reach the Kubernetes or OpenStack clients, even
// indirectly; only the composition root (and test helpers) know the simulator; the
// controllers use the engine, never the other way; the adapters and the simulator do not
// import the engine's internals (the simulator not even its ports).
func TestHouseDrawing(t *testing.T) {
	const mod = "github.com/drainctl/drainctl/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[strings.TrimPrefix(f[0], mod)] = f[1:]
	}
	under := func(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }
	for pkg, deps := range imports {
		for _, dep := range deps {
			d := strings.TrimPrefix(dep, mod)
			switch {
			case d == "ops/sim" && pkg != "internal/app" && pkg != "internal/simtest" && !under(pkg, "ops/sim") && !under(pkg, "hack"):
				t.Errorf("%s imports the simulator: only the composition roots (internal/app, the runners in hack/) and the tests' world (internal/simtest) may", pkg)
			case d == "internal/simtest": // go list's Imports leave tests out: only a test may
				t.Errorf("%s imports internal/simtest: it is a test's world, no product's", pkg)
			case under(pkg, "ops") && under(d, "internal"):
				t.Errorf("%s imports %s: the engine must not know the controllers or the root", pkg, d)
			case pkg == "ops/sim" && d == "ops":
				t.Errorf("the simulator imports the engine")
			case (under(pkg, "ui") || under(pkg, "model")) && under(d, "internal"):
				t.Errorf("%s imports %s", pkg, d)
			case (under(pkg, "internal/controllers") || under(pkg, "ops")) && under(d, "ui"):
				t.Errorf("%s imports %s: the controllers and the engine know no view (text/ formats for all)", pkg, d)
			case under(pkg, "internal/controllers") && d == "ops/campaign":
				t.Errorf("%s imports the campaign: the controllers empty nodes through Run alone", pkg)
			case pkg == "ops" && (dep == "os/exec" || dep == "net/http"):
				t.Errorf("the engine imports %s: commands and HTTP go behind its ports (ops/opcmd, ops/prom, the adapters)", dep)
			case under(pkg, "text") && (under(d, "ops") || under(d, "ui") || under(d, "internal")):
				t.Errorf("text/ imports %s: it formats model values, for every view and the controllers", d)
			}
		}
	}
	out, err = exec.Command("go", "list", "-deps", "./ui/...", "./model/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "k8s.io/client-go") || strings.Contains(dep, "gophercloud") {
			t.Errorf("ui/ or model/ depend on %s", dep)
		}
	}
}

// The controllers (the daemon, the NodeMaintenance controller, the cloudpool proxy) empty
// nodes through one engine entry, Run (ScaleDown is Run with a node deletion after it), where
// every emptying step first takes a node slot: they call no other engine method that moves
// VMs or pods (RunBatch, campaign.New, ForceComplete, Cancel), so concurrency.nodes bounds them.
func TestControllersEmptyNodesThroughRunAlone(t *testing.T) {
	reads := map[string]bool{"Holder": true, "Now": true, "Plan": true, "Recommend": true, "Inventory": true,
		"KubeNode": true, "KubeNodeNames": true, "PodsOn": true, "Subscribe": true, "FirstRanking": true,
		"NovaConfigured": true, "HoldLease": true, "ReleaseLease": true, "RecoverConfig": true,
		"HoldKey": true, "ReleaseKey": true, // the recovery lease: one recovery at a time
		"KubeNodes":     true,
		"RecoveryPause": true, // a person's pause of automatic recovery
		"ForgetFences":  true, // not a read, but it empties nothing: it deletes fence records of nodes seen Ready
		// The recovery's and the storm guard's records: safety state kept on the cluster.
		"Recovery": true, "SaveRecovery": true, "Storm": true, "SaveStorm": true,
		"KubeletHeartbeats": true, "WatchKubeletHeartbeats": true, "ComputeServices": true, // reads: the machines' heartbeats
		// [proactive]: its configuration, its records, and its triggers read again as it acts.
		"Config": true, "Proactives": true, "SaveProactive": true, "ProactiveNow": true,
		// [recover] reserve_label: the reserve's services held disabled (no VM moves).
		"HoldReserve": true,
		// [proactive]'s storm guard reads the room a quarantine would leave; automatic recovery
		// pins the machines' identities it may fence (records, no move).
		"QuarantineRoom": true, "PinMachines": true,
		"NodeHolder": true} // a person's recovery under way is not called stopped
	empties := map[string]bool{"Run": true, "ScaleDown": true}
	calls := map[string]int{}
	err := filepath.WalkDir("internal/controllers", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			recv, ok := sel.X.(*ast.SelectorExpr) // d.Engine.X, p.engine.X
			if !ok || (recv.Sel.Name != "Engine" && recv.Sel.Name != "engine") {
				return true
			}
			switch m := sel.Sel.Name; {
			case empties[m]:
				calls[m]++
			case !reads[m]:
				t.Errorf("%s calls the engine's %s: the controllers empty nodes through Run alone", path, m)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls["Run"] < 2 || calls["ScaleDown"] < 1 { // the daemon and the controller; the proxy
		t.Errorf("found %v: is the search broken?", calls)
	}
	// ScaleDown runs its plan through Run, and Run's step loop takes the slot.
	for file, want := range map[string]string{"ops/engine.go": "e.Run(ctx, plan, ro, evacuation)", "ops/run.go": "r.takeSlot(ctx, stop)"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), want) {
			t.Errorf("%s no longer says %q", file, want)
		}
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func drainctl(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut, func(k string) string { return env[k] })
	return result{code, out.String(), errOut.String()}
}

func simEnv(srv *sim.Server) map[string]string {
	env := map[string]string{}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

func TestAutoListJoinsKubernetesAndNova(t *testing.T) {
	cs := kubetest.Client(t)
	px := kubetest.Prefix(t)
	ns := kubetest.Namespace(t, cs, px)
	kubeconfig := kubetest.Kubeconfig(t)
	c0, c1, cp := px+"-compute-0", px+"-compute-1", px+"-cp"
	kubetest.Node(t, cs, cp, kubetest.Role("control-plane"))
	kubetest.Node(t, cs, c0)
	kubetest.Node(t, cs, c1, kubetest.Cordoned())
	kubetest.Pod(t, cs, ns, "libvirt-a", c0)
	kubetest.Pod(t, cs, ns, "web-a", c0)

	w := sim.NewWorld(sim.Options{})
	w.AddHost(c0, 64, 262144, 2000)
	w.AddHost(c1, 64, 262144, 2000)
	w.AddHost(px+"-orphan", 64, 262144, 2000)
	w.AddServer("db-1", c0, sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	w.AddServer("db-2", c0, sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := simEnv(srv)

	r := drainctl(t, env, "--auto", "list", "--kubeconfig", kubeconfig)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	want := map[string][]string{
		// Placement's figures: 64 vCPUs × 4, 256 GiB less the 512 MiB reserved.
		c0:             {"<none>", "Ready", "enabled/up", "8/256", "16G/256G", " 2 ", " 2 "},
		c1:             {"Ready,SchedulingDisabled", "enabled/up", "0/256", "cordoned but nova-compute on " + c1 + " is enabled"},
		cp:             {"control-plane", "Ready", " - "},
		px + "-orphan": {"no node", "compute host " + px + "-orphan has no Kubernetes node"},
	}
	for node, parts := range want {
		row, ok := rows[node]
		if !ok {
			t.Errorf("no row for %s in\n%s", node, r.stdout)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(row, p) {
				t.Errorf("row for %s lacks %q:\n%s", node, p, row)
			}
		}
	}

	r = drainctl(t, env, "--auto", "list", "-o", "json", "--kubeconfig", kubeconfig)
	type nodeLine struct {
		Type           string `json:"type"`
		NovaConfigured bool   `json:"novaConfigured"`
		Name           string `json:"name"`
		VMs            []struct {
			Name string `json:"name"`
		} `json:"vms"`
		Pods []struct {
			Name string `json:"name"`
		} `json:"pods"`
		Hypervisor *struct {
			Capacity *model.Capacity `json:"capacity"`
		} `json:"hypervisor"`
	}
	var doc struct {
		NovaConfigured bool
		Nodes          []nodeLine
	}
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") { // NDJSON: one node per line
		var n nodeLine
		if err := json.Unmarshal([]byte(line), &n); err != nil {
			t.Fatalf("not one JSON object per line: %v\n%s", err, line)
		}
		if n.Type == "node" {
			doc.Nodes = append(doc.Nodes, n)
			doc.NovaConfigured = n.NovaConfigured
		}
	}
	seen := false
	for _, n := range doc.Nodes {
		seen = seen || n.Name == c0
	}
	if !seen {
		t.Errorf("no line for %s:\n%s", c0, r.stdout)
	}
	for _, n := range doc.Nodes {
		if n.Name == c0 && (len(n.VMs) != 2 || len(n.Pods) != 2) {
			t.Errorf("%s in JSON: %+v", c0, n)
		}
		if n.Name == c0 {
			c := n.Hypervisor.Capacity
			if c == nil || c.Source != model.CapacityPlacement || c.VCPU.Capacity != 256 || c.VCPU.Used != 8 ||
				c.MemoryMB.Capacity != 261632 || c.MemoryMB.Used != 16384 || c.DiskGB.Capacity != 2000 || c.DiskGB.Used != 160 {
				t.Errorf("%s's capacity in JSON: %+v", c0, c)
			}
		}
	}
	if !doc.NovaConfigured {
		t.Error("novaConfigured false")
	}
	for _, out := range []string{r.stdout, r.stderr} {
		if strings.Contains(out, env["OS_PASSWORD"]) {
			t.Error("the password appears in the output")
		}
	}
}

// Without Placement in the catalog, drainctl says so once and takes os-hypervisors' figures.
func TestAutoListWithoutPlacement(t *testing.T) {
	cs := kubetest.Client(t)
	px := kubetest.Prefix(t)
	kubetest.Node(t, cs, px+"-c0")
	w := sim.NewWorld(sim.Options{NoPlacement: true})
	w.AddHost(px+"-c0", 64, 262144, 2000)
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r := drainctl(t, simEnv(srv), "--auto", "list", "-o", "json", "--kubeconfig", kubetest.Kubeconfig(t))
	if r.code != 0 || strings.Count(r.stderr, "Placement is not in the Keystone catalog") != 1 ||
		!strings.Contains(r.stdout, `"source":"hypervisors"`) {
		t.Errorf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
}

func TestAutoListWithoutOpenStack(t *testing.T) {
	kubeconfig := kubetest.Kubeconfig(t)
	r := drainctl(t, map[string]string{}, "--auto", "list", "--kubeconfig", kubeconfig)
	if r.code != 0 || !strings.Contains(r.stderr, "OpenStack is not configured") || !strings.Contains(r.stdout, "n/a") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

func TestUnreachableOpenStackIsAnError(t *testing.T) {
	kubeconfig := kubetest.Kubeconfig(t)
	env := map[string]string{"OS_AUTH_URL": "http://127.0.0.1:1/v3", "OS_USERNAME": "u", "OS_PASSWORD": "pw-123456", "OS_PROJECT_NAME": "p"}
	r := drainctl(t, env, "--auto", "list", "--kubeconfig", kubeconfig)
	if r.code != 2 || !strings.Contains(r.stderr, "cannot reach OpenStack") || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "pw-123456") {
		t.Error("the password appears in the error")
	}
}

func TestUsageAndConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "config.toml")
	os.WriteFile(bad, []byte("[policy]\ngrace_perod = \"30s\"\n"), 0o600)
	legacy := filepath.Join(dir, "config.yaml")
	os.WriteFile(legacy, []byte("IdentityEndpoint: x\nTenant: y\n"), 0o600)
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--config", bad, "--auto", "list"}, 2, bad + `:2:1: unknown key "policy.grace_perod"; did you mean grace_period?`},
		{[]string{"--config", filepath.Join(dir, "none.toml"), "--auto", "list"}, 2, "cannot read the configuration file"},
		{[]string{"-config-path", legacy, "--auto", "list"}, 2, legacy + ":2: field Tenant is not a known key"},
		{[]string{"--auto", "frobnicate"}, 2, `unknown verb "frobnicate"`},
		{[]string{"--auto", "list", "-o", "yaml"}, 2, `unknown output format "yaml"`},
		{[]string{"--kubeconfig", filepath.Join(dir, "nokubeconfig"), "--auto", "list"}, 2, "Kubernetes configuration"},
		{[]string{"--daemon", "--proxy"}, 2, "one mode at a time: --daemon and --proxy were both given"},
		{[]string{"--auto", "--controller", "list"}, 2, "one mode at a time: --auto and --controller"},
		{[]string{"--skip-vm", "", "--auto", "list"}, 2, "--skip-vm needs a VM name or ID"},
	} {
		r := drainctl(t, map[string]string{}, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.stderr)
		}
	}
	if r := drainctl(t, nil, "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "drainctl dev") {
		t.Errorf("--version: %+v", r)
	}
}

// The release build sets the version with -X main.version; a wrong symbol path is silently
// ignored by the linker, so build the binary the way .goreleaser.yaml does and ask it.
func TestVersionIsInjectedByLinker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "drainctl")
	build := exec.Command("go", "build", "-trimpath", "-ldflags",
		"-s -w -X main.version=1.2.3 -X main.commit=abc1234 -X main.date=2026-11-21T00:00:00Z", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || string(out) != "drainctl 1.2.3 (commit abc1234, built 2026-11-21T00:00:00Z)\n" {
		t.Errorf("--version printed %q (%v)", out, err)
	}
}

func TestDemoList(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--demo", "--auto", "list")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"compute-5", "disabled/up", "hardware ticket #4411", "cp-0", "control-plane", "storage-0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo list lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := drainctl(t, map[string]string{}, "--demo", "--demo-fault", "explode", "--auto", "list"); r.code != 2 || !strings.Contains(r.stderr, `unknown fault "explode"`) {
		t.Errorf("bad fault: exit %d %s", r.code, r.stderr)
	}
	// -o json is one object per line: a plan (with its time), the ranking (a victim a line).
	for _, args := range [][]string{{"plan", "evacuate", "compute-4"}, {"recommend"}, {"list"}, {"doctor"}} {
		r := drainctl(t, map[string]string{}, append([]string{"--demo", "--auto", "-o", "json"}, args...)...)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		for _, l := range lines {
			var ev struct {
				Type string    `json:"type"`
				At   time.Time `json:"at"`
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Type == "" {
				t.Errorf("%v -o json: not an object with a type: %q (%v)", args, l, err)
			}
			if ev.Type == "plan" && ev.At.Year() < 2026 {
				t.Errorf("plan without a real time: %q", l)
			}
		}
		if len(lines) < 2 && args[0] != "plan" {
			t.Errorf("%v -o json: %d lines", args, len(lines))
		}
	}
	// Nova answering 503 before anything changed: a cluster that cannot be reached, exit 2.
	r = drainctl(t, map[string]string{}, "--demo", "--demo-fault", "services-503", "--auto", "evacuate", "compute-4")
	if r.code != 2 || !strings.Contains(r.stderr, "cannot reach Nova at http://") || !strings.Contains(r.stderr, "503") {
		t.Errorf("Nova 503 before any change: exit %d %s", r.code, r.stderr)
	}
}

// sim serve prints OS_* variables that gophercloud clients (drainctl's own here) can use.
func TestSimServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"sim", "serve", "--demo-nodes", "6"}, pw, io.Discard, os.Getenv)
		pw.Close()
	}()
	env := map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(env) < 9 && sc.Scan() {
		if kv, ok := strings.CutPrefix(sc.Text(), "export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	go io.Copy(io.Discard, pr)
	kubeconfig := kubetest.Kubeconfig(t)
	r := drainctl(t, env, "--auto", "list", "--kubeconfig", kubeconfig)
	if r.code != 0 || !strings.Contains(r.stdout, "compute-0") || !strings.Contains(r.stdout, "no Kubernetes node") {
		t.Errorf("list against sim serve: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("sim serve exit %d", code)
	}
}

// --proxy on the demo: the cloudpool API in front of the demo's simulated pool, a
// scale-down by one through it, and a clean stop on the signal.
func TestProxyDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--demo", "--demo-scale", "50", "--proxy", "--listen", addr}, io.Discard, pw, os.Getenv)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() && !strings.Contains(sc.Text(), "cloudpool proxy on "+addr) {
	}
	var log strings.Builder
	logged := make(chan struct{})
	go func() {
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
		close(logged)
	}()
	size := func() (s struct{ DesiredSize, Active int }) {
		resp, err := http.Get("http://" + addr + "/pool/size")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&s)
		return s
	}
	before := size()
	if before.Active < 2 {
		t.Fatalf("the demo pool: %+v", before)
	}
	body := fmt.Sprintf(`{"desiredSize": %d}`, before.Active-1)
	resp, err := http.Post("http://"+addr+"/pool/size", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if after := size(); resp.StatusCode != 200 || after.Active != before.Active-1 || after.DesiredSize != before.DesiredSize-1 {
		t.Errorf("scale-down by one: %d, pool %+v then %+v", resp.StatusCode, before, after)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("proxy exit %d", code)
	}
	<-logged
	if !strings.Contains(log.String(), "terminate done") {
		t.Errorf("progress lines:\n%s", log.String())
	}
	if r := drainctl(t, map[string]string{}, "--proxy", "--kubeconfig", "/nonexistent"); r.code != 2 || !strings.Contains(r.stderr, "[cloudpool] url") {
		t.Errorf("--proxy without a backend: exit %d %s", r.code, r.stderr)
	}
}

// The proxy authenticates its callers: without a token file it serves a loopback address
// only, and a token file that cannot be read or holds no token is refused before it serves.
func TestProxyRefusesToServeUnauthenticated(t *testing.T) {
	dir := t.TempDir()
	empty, secret := filepath.Join(dir, "empty"), filepath.Join(dir, "token")
	os.WriteFile(empty, []byte("\n"), 0o600)
	os.WriteFile(secret, []byte("s3cret-token-value\n"), 0o600)
	for _, tc := range []struct {
		listen, tokenFile, want string
	}{
		{":8080", "", "would serve :8080 without authentication"},
		{"0.0.0.0:8080", "", "would serve 0.0.0.0:8080 without authentication"},
		{"10.0.0.5:8080", "", "proxy_token_file"},
		{"127.0.0.1:0", filepath.Join(dir, "missing"), "[cloudpool] proxy_token_file: open"},
		{"127.0.0.1:0", empty, "holds no token"},
	} {
		cfg := filepath.Join(dir, "config.toml")
		text := "[cloudpool]\nurl = \"http://127.0.0.1:1\"\n"
		if tc.tokenFile != "" {
			text += "proxy_token_file = \"" + tc.tokenFile + "\"\n"
		}
		os.WriteFile(cfg, []byte(text), 0o600)
		r := drainctl(t, map[string]string{}, "--proxy", "--listen", tc.listen, "--config", cfg, "--kubeconfig", "/nonexistent")
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "s3cret") {
			t.Errorf("--listen %s, token file %q: exit %d %s", tc.listen, tc.tokenFile, r.code, r.stderr)
		}
	}
}

// --controller on a cluster without the CRD says what to install, exit 2.
func TestControllerWithoutCRD(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--controller", "--kubeconfig", kubetest.Kubeconfig(t))
	if r.code != 2 || !strings.Contains(r.stderr, "kubectl apply -f deploy/crd-nodemaintenance.yaml") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// `drainctl version` is --version; `completion bash` completes verbs and flags in a real bash.
func TestVersionAndCompletion(t *testing.T) {
	if r := drainctl(t, nil, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "drainctl dev") {
		t.Errorf("version: %+v", r)
	}
	r := drainctl(t, nil, "completion", "bash")
	if r.code != 0 {
		t.Fatalf("completion bash: %+v", r)
	}
	script := filepath.Join(t.TempDir(), "drainctl.bash")
	os.WriteFile(script, []byte(r.stdout), 0o600)
	for word, want := range map[string]string{"ev": "evacuate", "--wait": "--wait-ready", "sc": "scale-down"} {
		out, err := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=(drainctl "$2"); COMP_CWORD=1; _drainctl; echo "${COMPREPLY[@]}"`, "_", script, word).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("completing %q: %q (%v), want %q", word, out, err, want)
		}
	}
	for _, shell := range []string{"zsh", "fish"} {
		if r := drainctl(t, nil, "completion", shell); r.code != 0 || !strings.Contains(r.stdout, "evacuate") || !strings.Contains(r.stdout, "wait-ready") {
			t.Errorf("completion %s: %+v", shell, r)
		}
	}
	if r := drainctl(t, nil, "completion", "tcsh"); r.code != 2 || !strings.Contains(r.stderr, "use bash, zsh or fish") {
		t.Errorf("completion tcsh: %+v", r)
	}
}

// A kubeconfig whose server is a closed port: exit 2 at once, naming the server (the
// informers would otherwise retry silently until their sync deadline).
func TestClosedPortKubeconfigFailsNamingTheServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // now closed: connections are refused
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://`+addr+`"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: t0ken-secret}}]
`), 0o600)
	for _, args := range [][]string{{"--auto", "list"}, {"--auto", "evacuate", "n1"}} {
		r := drainctl(t, map[string]string{}, append(args, "--kubeconfig", kubeconfig)...)
		if r.code != 2 || !strings.Contains(r.stderr, "cannot reach Kubernetes at https://"+addr) || !strings.Contains(r.stderr, "connection refused") {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "t0ken-secret") {
			t.Error("the token appears in the error")
		}
	}
}

// The demo runs a campaign over a rack end to end; rack r1 holds a bare pod, which the
// first check refuses before anything changes.
func TestDemoRoll(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--demo", "--demo-scale", "50", "--auto", "roll", "--selector", "rack=r2")
	if r.code != 0 || !strings.Contains(r.stderr, "[4/4] done") || strings.Count(r.stderr, " verifying\n") != 4 {
		t.Errorf("demo roll rack=r2: exit %d\n%s", r.code, r.stderr)
	}
	r = drainctl(t, map[string]string{}, "--demo", "--auto", "roll", "--selector", "rack=r1")
	if r.code != 3 || !strings.Contains(r.stderr, "shop/debug-shell") || strings.Contains(r.stderr, "evacuating") {
		t.Errorf("demo roll rack=r1: exit %d\n%s", r.code, r.stderr)
	}
}

// The demo's hosts carry VMs in every state: the plan says how each moves and what stops
// it; leaving the broken one and moving the GPU one cold empties the rest, exit 6 (not
// empty, on purpose); -o json carries each VM's method.
// skipByID: a hint names a VM to leave by its ID (a tenant chose its name).
var skipByID = regexp.MustCompile(`\(use --skip-vm [0-9a-f]{8}-[0-9a-f-]{27} to override\)`)

func TestDemoVMStates(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--demo", "--auto", "plan", "evacuate", "compute-2")
	if r.code != 3 || !strings.Contains(r.stdout, "stays  build-old (ERROR") || !strings.Contains(r.stdout, "stays  ml-train-0 (ACTIVE") || !strings.Contains(r.stdout, "stays  ledger-db (ACTIVE") ||
		!skipByID.MatchString(r.stdout) || !strings.Contains(r.stdout, "--cold-migrate-running") {
		t.Errorf("plan evacuate compute-2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// ledger-db asks to stay (its owner's drainctl:maintenance): left too, knowingly.
	r = drainctl(t, map[string]string{}, "--demo", "--demo-scale", "50", "--auto", "evacuate", "compute-2", "--skip-vm", "build-old", "--skip-vm", "ledger-db", "--cold-migrate-running")
	if r.code != 6 || !strings.Contains(r.stderr, "vm ml-train-0 (cold) completed") || !strings.Contains(r.stderr, "verify done: NOT EMPTY: 2 VM(s)") ||
		!strings.Contains(r.stderr, "drainctl: done, not empty: ") || strings.Contains(r.stderr, "drainctl: error:") || !strings.Contains(r.stderr, "compute-2 is not empty") {
		t.Errorf("evacuate compute-2 --skip-vm build-old --cold-migrate-running: exit %d\n%s", r.code, r.stderr)
	}
	r = drainctl(t, map[string]string{}, "--demo", "--auto", "-o", "json", "plan", "evacuate", "compute-2", "--cold-migrate-running", "--skip-vm", "build-old", "--override-vm-policy", "ledger-db")
	var ev struct {
		Plan model.Plan `json:"plan"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &ev); err != nil {
		t.Fatalf("%v: %q", err, r.stdout)
	}
	for _, vm := range ev.Plan.VMs {
		want := map[string]model.MoveMethod{"reports-nightly": model.MoveCold, "ml-train-0": model.MoveCold, "build-old": model.MoveStays}[vm.Name]
		if want == "" {
			want = model.MoveLive
		}
		if vm.Method != want {
			t.Errorf("%s: method %q, want %q", vm.Name, vm.Method, want)
		}
	}
}

// --override-vm-policy takes a VM, project=ID or policy=P; one that names no VM of the
// targets is refused (exit 2), as --skip-vm is: a typo must not leave the run refused for
// what it was meant to lift.
func TestOverrideVMPolicyNamesWhatItMoves(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--demo", "--auto", "plan", "evacuate", "compute-2", "--override-vm-policy", "ledger-bd")
	if r.code != 2 || !strings.Contains(r.stderr, "--override-vm-policy ledger-bd names no VM of the targets") {
		t.Errorf("an override naming no VM: exit %d\n%s", r.code, r.stderr)
	}
	r = drainctl(t, map[string]string{}, "--demo", "--auto", "plan", "evacuate", "compute-2", "--override-vm-policy", "policy=stays", "--skip-vm", "build-old", "--cold-migrate-running")
	if r.code != 0 || strings.Contains(r.stdout, "stays  ledger-db") || !strings.Contains(r.stdout, "ledger-db") {
		t.Errorf("--override-vm-policy policy=stays: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A campaign's dry run with -o json is one JSON object a line: the forecast, then each node.
func TestRollDryRunJSONIsObjects(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--demo", "--auto", "-o", "json", "roll", "--selector", "rack=r2", "--dry-run")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) < 2 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	types := map[string]int{}
	for _, l := range lines {
		var obj map[string]any
		if err := json.Unmarshal([]byte(l), &obj); err != nil {
			t.Fatalf("not a JSON object: %q (%v)", l, err)
		}
		types[fmt.Sprint(obj["type"])]++
	}
	if types["forecast"] != 1 || types["node"] != len(lines)-1 {
		t.Errorf("objects by type %v", types)
	}
}

// A campaign under --force says what it would lose for good before its first node, as the
// node's own plan does (the bare pod shop/debug-shell on compute-0).
func TestRollSaysWhatItLoses(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--demo", "--auto", "roll", "compute-0", "--force", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "LOST FOR GOOD shop/debug-shell") {
		t.Errorf("roll compute-0 --force --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The engine speaks no command line: no string of ops/ names one of drainctl's flags. An
// override is a typed model.Override, an option at fault a typed ops.Option, and the views
// name them (text.Flag, internal/app's ErrorText and HintOf).
func TestTheEngineNamesNoFlag(t *testing.T) {
	var names []string
	app.FlagSet(new(app.Options)).VisitAll(func(f *flag.Flag) {
		if len(f.Name) > 1 {
			names = append(names, regexp.QuoteMeta(f.Name))
		}
	})
	if len(names) < 30 {
		t.Fatalf("%d flags: is the flag set read?", len(names))
	}
	named := regexp.MustCompile(`(^|[^\w-])--(` + strings.Join(names, "|") + `)\b`)
	found := 0
	err := filepath.WalkDir("ops", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				found++
				if m := named.FindString(lit.Value); m != "" {
					t.Errorf("%s: %s names the flag %s", fset.Position(lit.Pos()), lit.Value, strings.TrimSpace(m))
				}
			}
			return true
		})
		return nil
	})
	if err != nil || found < 500 {
		t.Fatalf("walked ops/: %v, %d strings", err, found)
	}
}

// With no kubeconfig anywhere and no cluster around, the error says so and how to give one,
// never client-go's advice to set KUBERNETES_MASTER (which nothing reads).
func TestNoKubeconfigSaysHowToGiveOne(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	r := drainctl(t, map[string]string{}, "--auto", "list")
	if r.code != 2 || !strings.Contains(r.stderr, "no kubeconfig found") || !strings.Contains(r.stderr, "hint: give a kubeconfig file, or set KUBECONFIG") || strings.Contains(r.stderr, "KUBERNETES_MASTER") {
		t.Errorf("exit %d:\n%s", r.code, r.stderr)
	}
}

// The demo has an owner who answered ahead (drainctl:move-now on a VM of compute-1): with
// [notify] owner_lead set, its evacuation moves that VM at once and says why, while the
// other VMs wait out the lead, each saying so.
func TestTheDemosOwnerAnsweredMoveNow(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "lead.toml")
	if err := os.WriteFile(cfg, []byte("[notify]\nowner_lead = \"10s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := drainctl(t, map[string]string{}, "--demo", "--demo-scale", "50", "--config", cfg, "--auto",
		"evacuate", "compute-1", "--force", "--delete-emptydir-data")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(r.stderr, "\n")
	now, firstOther, waited := -1, -1, 0
	for i, l := range lines {
		switch {
		case strings.Contains(l, " requested: ") && strings.Contains(l, "its owner asked it moved now (drainctl:move-now)"):
			now = i
		case strings.Contains(l, " requested: ") && firstOther < 0:
			firstOther = i
		case strings.Contains(l, " waiting: its owner told: due at "):
			waited++
		}
	}
	if now < 0 || firstOther < now || waited < 4 {
		t.Errorf("want the move-now VM requested first (line %d, the first other at %d) and the others waiting (%d):\n%s",
			now, firstOther, waited, r.stderr)
	}
}
