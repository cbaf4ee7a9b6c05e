package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds drainctl once for the package's tests.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drainctl-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "drainctl")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// autoCluster: envtest nodes cp, c0..c2 (compute hosts in the simulator too), web pods
// under a PDB on c0 and c1, a DaemonSet pod on c0, VMs on c0 and c1.
type autoCluster struct {
	px, ns     string
	home       string
	env        []string
	world      *sim.World
	srv        *sim.Server
	kubeconfig string
	secret     string // the cloud's password, which no output may show ("" : the simulator's)
	// limit bounds one command (0: 90 s); real guests under QEMU's TCG take minutes to move.
	limit time.Duration
}

func newAutoCluster(t *testing.T) *autoCluster {
	return newAutoClusterWith(t, autoOptions{seed: 3, pdbMin: 1})
}

// autoOptions vary the world: the workers' labels, a spare worker outside the compute hosts
// where the ReplicaSet controller puts replacements, the budget.
type autoOptions struct {
	seed        int64
	workerLabel [2]string // a label on c0..c2, when set
	spare       bool      // c3: a worker, no compute host; replacements go there
	pdbMin      int
	scale       float64 // the simulator's speed (default 50 times life)
}

func newAutoClusterWith(t *testing.T, o autoOptions) *autoCluster {
	cs := kubetest.Client(t)
	c := &autoCluster{px: kubetest.Prefix(t)}
	c.ns = kubetest.Namespace(t, cs, c.px)
	c.kubeconfig = kubetest.Kubeconfig(t)
	kubetest.Node(t, cs, c.px+"-cp", kubetest.Role("control-plane"))
	if o.scale == 0 {
		o.scale = 50
	}
	c.world = sim.NewWorld(sim.Options{Scale: o.scale, Seed: o.seed})
	for _, n := range []string{"c0", "c1", "c2"} {
		var opts []kubetest.NodeOption
		if o.workerLabel[0] != "" {
			opts = append(opts, kubetest.Label(o.workerLabel[0], o.workerLabel[1]))
		}
		kubetest.Node(t, cs, c.px+"-"+n, opts...)
		c.world.AddHost(c.px+"-"+n, 64, 262144, 2000)
	}
	if o.spare {
		kubetest.Node(t, cs, c.px+"-c3")
	}
	c.world.AddServer("db-1", c.px+"-c0", sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	c.world.AddServer("db-2", c.px+"-c0", sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.world.AddServer("app-1", c.px+"-c1", sim.Flavor{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40})
	rs, uid := kubetest.ReplicaSet(t, cs, c.ns, "web", 3)
	for i, n := range []string{"c0", "c0", "c1"} {
		kubetest.Pod(t, cs, c.ns, fmt.Sprintf("web-%d", i), c.px+"-"+n, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels("app", "web"), kubetest.Grace(1))
	}
	kubetest.PDB(t, cs, c.ns, "web-pdb", "web", o.pdbMin)
	ds := kubetest.DaemonSet(t, cs, c.ns, "agent")
	kubetest.Pod(t, cs, c.ns, "agent-x", c.px+"-c0", kubetest.Owned("DaemonSet", "agent", ds))
	ctrl := &kubetest.Controllers{DeleteAfter: 200 * time.Millisecond}
	if o.spare {
		ctrl.ReplaceOn, ctrl.ReadyAfter = c.px+"-c3", 300*time.Millisecond
	}
	ctrl.Run(t, cs, c.ns)
	srv, err := sim.Serve(c.world, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c.srv = srv
	home := t.TempDir()
	c.home = home
	// A quicker poll than the default 2 s: the simulator runs 50 times faster than life.
	os.MkdirAll(filepath.Join(home, ".config", "drainctl"), 0o755)
	os.WriteFile(filepath.Join(home, ".config", "drainctl", "config.toml"), []byte("[timeouts]\npoll = \"100ms\"\n"), 0o600)
	c.env = append(srv.Env(), "KUBECONFIG="+c.kubeconfig, "HOME="+home, "XDG_CONFIG_HOME=", "PATH="+os.Getenv("PATH"))
	return c
}

type execResult struct {
	code           int
	stdout, stderr string
}

func (c *autoCluster) drainctl(t *testing.T, extraEnv []string, args ...string) execResult {
	t.Helper()
	bin := binary(t) // built once, outside the command's 90 s (a loaded machine builds slowly)
	limit := cmp.Or(c.limit, 90*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append([]string{}, c.env...), extraEnv...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r := execResult{code, out.String(), errOut.String()}
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish in %s:\n%s", args, limit, r.stderr)
	}
	secret := c.secret
	if secret == "" {
		secret = "secret" // the simulator's password
	}
	for _, s := range []string{r.stdout, r.stderr} {
		if strings.Contains(s, secret) {
			t.Errorf("output of %v shows the password:\n%s", args, s)
		}
	}
	return r
}

func TestAutoVerbsAndExitCodes(t *testing.T) {
	c := newAutoCluster(t)
	c0, c1, c2, cp := c.px+"-c0", c.px+"-c1", c.px+"-c2", c.px+"-cp"

	r := c.drainctl(t, nil, "--auto", "plan", "evacuate", c0)
	if r.code != 0 || !strings.Contains(r.stdout, "plan: evacuate "+c0+": 2 VMs, 2 pods") || !strings.Contains(r.stdout, "migrate-vms") {
		t.Fatalf("plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Refused by policy before anything changed: exit 3, the blocker with its override.
	r = c.drainctl(t, nil, "--auto", "evacuate", cp)
	if r.code != 3 || !strings.Contains(r.stderr, "is a control-plane node") || !strings.Contains(r.stderr, "--allow-control-plane") {
		t.Errorf("control plane: exit %d\n%s", r.code, r.stderr)
	}
	// Evacuate with JSON events.
	r = c.drainctl(t, nil, "--auto", "evacuate", c0, "-o", "json", "--reason", "disk swap")
	if r.code != 0 {
		t.Fatalf("evacuate: exit %d\n%s", r.code, r.stderr)
	}
	var last map[string]any
	types := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		types[ev["type"].(string)]++
		last = ev
	}
	if last["type"] != "done" || last["report"].(map[string]any)["result"] != "done" || types["migration"] == 0 || types["pod"] == 0 || types["step"] == 0 {
		t.Errorf("events %v, last %v", types, last)
	}
	// The report's bytes are what was copied: its total is the sum of the VMs', and each VM
	// copied at least its memory.
	rep := last["report"].(map[string]any)
	var sum float64
	for _, v := range rep["vms"].([]any) {
		vm := v.(map[string]any)
		sum += vm["bytes"].(float64)
		if min := map[string]float64{"db-1": 8 << 30, "db-2": 2 << 30}[vm["vm"].(string)]; vm["bytes"].(float64) < min {
			t.Errorf("%s copied %v bytes, less than its memory", vm["vm"], vm["bytes"])
		}
	}
	if total := rep["bytesCopied"].(float64); total != sum || total == 0 {
		t.Errorf("report bytesCopied %v, sum of the VMs' %v", total, sum)
	}
	if !strings.Contains(r.stderr, c0+" evacuate done") {
		t.Errorf("no summary line on stderr:\n%s", r.stderr)
	}
	// Kubernetes and Nova agree: the node is cordoned and its compute disabled.
	if r = c.drainctl(t, nil, "--auto", "doctor"); r.code != 0 || !strings.Contains(r.stdout, "agree") {
		t.Errorf("doctor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Cordon c1 by hand with kubectl's patch: doctor sees compute still enabled.
	cs := kubetest.Client(t)
	if _, err := cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), c1, "application/strategic-merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if r = c.drainctl(t, nil, "--auto", "doctor"); r.code != 5 || !strings.Contains(r.stdout, "CordonedButEnabled") {
		t.Errorf("doctor after a manual cordon: exit %d\n%s", r.code, r.stdout)
	}
	// -o json: one finding per line, then the summary.
	r = c.drainctl(t, nil, "--auto", "doctor", "-o", "json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var findings int
	for i, line := range lines {
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("doctor -o json: not one object per line: %q", line)
		}
		switch {
		case f["type"] == "finding" && f["code"] == "CordonedButEnabled" && f["object"] == c1:
			findings++
		case f["type"] == "summary" && i == len(lines)-1 && f["findings"] == float64(findings):
		default:
			t.Errorf("doctor -o json line %d: %v", i, f)
		}
	}
	if r.code != 5 || findings != 1 {
		t.Errorf("doctor -o json: exit %d, %d findings\n%s", r.code, findings, r.stdout)
	}
	if r = c.drainctl(t, nil, "--auto", "uncordon", c0, c1); r.code != 0 {
		t.Errorf("uncordon: exit %d\n%s", r.code, r.stderr)
	}
	if h, _ := c.world.Host(c0); !h.Enabled {
		t.Error("uncordon did not re-enable compute")
	}
	// migrate --to.
	if r = c.drainctl(t, nil, "--auto", "migrate", "app-1", "--to", c2); r.code != 0 {
		t.Errorf("migrate: exit %d\n%s", r.code, r.stderr)
	}
	if vm, _ := c.world.ServerByName("app-1"); vm.Host != c2 {
		t.Errorf("app-1 on %s", vm.Host)
	}
	// A failing migration: exit 1 with Nova's message.
	c.world.ApplyFaultSpec("fail-migration=db-2@running")
	if r = c.drainctl(t, nil, "--auto", "migrate", "db-2"); r.code != 1 || !strings.Contains(r.stderr, "libvirtError") {
		t.Errorf("failing migration: exit %d\n%s", r.code, r.stderr)
	}
	// Usage errors: exit 2.
	for _, args := range [][]string{{"--auto", "frobnicate"}, {"--auto", "evacuate"}, {"--auto", "migrate", "no-such-vm"}, {"--auto", "evacuate", "no-such-node"}} {
		if r = c.drainctl(t, nil, args...); r.code != 2 {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	// No verb: evacuate the node named by NODE_NAME (nova-kubernetes-drain's run-once mode).
	if r = c.drainctl(t, []string{"NODE_NAME=" + c2}, "--auto"); r.code != 0 || !strings.Contains(r.stderr, c2+" evacuate done") {
		t.Errorf("run-once: exit %d\n%s", r.code, r.stderr)
	}
}

// SIGINT stops at the next safe point with exit 4 and the journal says where; the same
// command resumes and finishes without migrating anything twice.
func TestAutoInterruptAndResume(t *testing.T) {
	c := newAutoCluster(t)
	c0 := c.px + "-c0"
	db1, _ := c.world.ServerByName("db-1")
	c.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[db1.ID].DirtyBytesPerSec = 2 << 30 })
	cmd := exec.Command(binary(t), "--auto", "evacuate", c0)
	cmd.Env = c.env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var seen strings.Builder
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "vm db-1 running") {
			cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("after SIGINT: %v\n%s", err, seen.String())
	}
	n, _ := kubetest.Client(t).CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
	if !strings.Contains(n.Annotations[ops.JournalAnnotation], `"phase":"interrupted"`) {
		t.Errorf("journal: %q", n.Annotations[ops.JournalAnnotation])
	}
	// The migration was left running in Nova; let it converge, and resume.
	c.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[db1.ID].DirtyBytesPerSec = 0 })
	r := c.drainctl(t, nil, "--auto", "evacuate", c0)
	if r.code != 0 || !strings.Contains(r.stderr, "cordon skipped") {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	for _, name := range []string{"db-1", "db-2"} {
		vm, _ := c.world.ServerByName(name)
		if runs := len(c.world.MigrationStatuses(vm.ID)); runs != 1 || vm.Host == c0 {
			t.Errorf("%s: %d migrations, on %s", name, runs, vm.Host)
		}
	}
}

// scale-down: the node is emptied, its Node deleted and its machine terminated in the
// cloudpool, which shrinks by one.
func TestAutoScaleDown(t *testing.T) {
	c := newAutoCluster(t)
	c1 := c.px + "-c1"
	pool, err := sim.ServeCloudPool(c.px+"-c0", c1, c.px+"-c2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cfg := filepath.Join(c.home, ".config", "drainctl", "config.toml")
	os.WriteFile(cfg, []byte("[timeouts]\npoll = \"100ms\"\n[cloudpool]\nurl = \""+pool.URL+"\"\n"), 0o600)
	r := c.drainctl(t, nil, "--auto", "scale-down", c1, "-o", "json")
	if r.code != 0 || !strings.Contains(r.stderr, "terminate done: machine "+c1+" terminated") {
		t.Fatalf("scale-down: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last struct {
		Type   string     `json:"type"`
		Report ops.Report `json:"report"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "done" ||
		last.Report.Op != model.OpScaleDown || last.Report.Result != ops.ResultDone || len(last.Report.VMs) != 1 {
		t.Errorf("scale-down's last event is not its report: %v\n%s", err, lines[len(lines)-1])
	}
	if n := strings.Count(r.stdout, `"type":"done"`); n != 1 { // the evacuation inside it is no second end
		t.Errorf("scale-down ended %d times:\n%s", n, r.stdout)
	}
	if _, err := kubetest.Client(t).CoreV1().Nodes().Get(kubetest.Ctx(t), c1, metav1.GetOptions{}); err == nil {
		t.Error("the Node is still there")
	}
	if pool.State(c1) != "TERMINATED" || pool.Desired() != 2 {
		t.Errorf("pool: %s, desired %d", pool.State(c1), pool.Desired())
	}
	if vm, _ := c.world.ServerByName("app-1"); vm.Host == c1 {
		t.Error("the VM was not moved before the node went")
	}
}

// concurrency.nodes across processes: a cluster-wide --daemon empties a node someone cordoned
// while an operator's --auto evacuate (another process) asks for a second node: the second
// waits for the slot, cordoned with nova-compute disabled, says so, and goes once the first
// is empty. Never two nodes at once.
func TestNodeCapAcrossProcesses(t *testing.T) {
	c := newAutoClusterWith(t, autoOptions{seed: 3, pdbMin: 1, spare: true})
	c0, c1, c3 := c.px+"-c0", c.px+"-c1", c.px+"-c3"
	c.world.AddHost(c3, 64, 262144, 2000) // the spare worker is a compute host too: where the VMs go
	converge := c.slow("db-1")
	defer converge()

	kubetest.Namespace(t, kubetest.Client(t), kube.LeaseNamespace) // deploy/namespace.yaml: the leader's lease lives there
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	daemon := exec.CommandContext(ctx, binary(t), "--daemon", "--node", "")
	daemon.Env = append(append([]string{}, c.env...), "NODE_NAME=")
	daemonOut := &simtest.Buffer{}
	daemon.Stdout, daemon.Stderr = daemonOut, daemonOut
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = daemon.Wait() }()

	cs := kubetest.Client(t)
	if _, err := cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), c0, "application/strategic-merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Log("daemon:\n" + daemonOut.String())
		}
	}()
	kubetest.Eventually(t, 30*time.Second, "the daemon migrating db-1 off "+c0, func() bool {
		vm, _ := c.world.ServerByName("db-1")
		return vm.TaskState == "migrating"
	})
	done := make(chan execResult, 1)
	go func() { done <- c.drainctl(t, nil, "--auto", "evacuate", c1) }()
	kubetest.Eventually(t, 20*time.Second, c1+" waiting for its slot with nova-compute disabled", func() bool {
		h, _ := c.world.Host(c1)
		return !h.Enabled
	})
	if vm, _ := c.world.ServerByName("app-1"); vm.Host != c1 || vm.TaskState != "" {
		t.Errorf("app-1 moved while %s was being emptied: %+v", c0, vm)
	}
	converge()
	r := <-done
	if r.code != 0 || !strings.Contains(r.stderr, c1+" slot queued: waiting for a node slot (concurrency.nodes = 1), being emptied: "+c0) {
		t.Errorf("evacuate %s: exit %d\n%s\ndaemon:\n%s", c1, r.code, r.stderr, daemonOut.String())
	}
	if got := c.world.Stats().MaxConcurrentSources; got != 1 {
		t.Errorf("%d nodes emptied at once by two processes under concurrency.nodes = 1", got)
	}
	for _, name := range []string{"db-1", "db-2", "app-1"} {
		if vm, _ := c.world.ServerByName(name); vm.Host == c0 || vm.Host == c1 {
			t.Errorf("%s still on %s", name, vm.Host)
		}
	}
}

// kill -9 between a cold migration and its confirm (the confirm failing, so the process is
// caught right there): the rerun, another process, confirms the VM it finds in VERIFY_RESIZE
// (the journal says the move is drainctl's) instead of moving it again; it stays SHUTOFF.
func TestAutoKilledBeforeTheConfirm(t *testing.T) {
	c := newAutoCluster(t)
	c0 := c.px + "-c0"
	c.world.AddServer("batch-off", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.world.Stop("batch-off")
	c.world.InjectFault(sim.Fault{Method: "POST", Path: regexp.MustCompile(`^/servers/[^/]+/action$`), Action: "confirmResize", Status: 503, Message: "Service Unavailable"})
	cmd := exec.Command(binary(t), "--auto", "evacuate", c0, "--force")
	cmd.Env = c.env
	out := &simtest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "batch-off waiting in VERIFY_RESIZE, its confirm refused", func() bool {
		vm, _ := c.world.ServerByName("batch-off")
		return vm.Status == "VERIFY_RESIZE" && strings.Contains(out.String(), "poll failed")
	})
	cmd.Process.Kill() // kill -9: no safe point, no journal written on the way out
	cmd.Wait()
	c.world.ClearFaults()
	r := c.drainctl(t, nil, "--auto", "evacuate", c0, "--force")
	if r.code != 0 || !strings.Contains(r.stderr, "confirmed now") {
		t.Fatalf("rerun: exit %d\n%s\nfirst run:\n%s", r.code, r.stderr, out.String())
	}
	vm, _ := c.world.ServerByName("batch-off")
	st := c.world.MigrationStatuses(vm.ID)
	if vm.Status != "SHUTOFF" || vm.Host == c0 || len(st) != 1 || st[0][len(st[0])-1] != "confirmed" {
		t.Errorf("batch-off: %s on %s, migrations %v; want one cold move, confirmed, SHUTOFF", vm.Status, vm.Host, st)
	}
}
