package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

	"github.com/drainctl/drainctl/internal/notify/notifytest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// rollCluster: the auto cluster with its workers c0..c2 labelled rack=PX-r1, and c3 outside
// the rack, where the ReplicaSet controller puts replacements; the web budget keeps two of
// its three pods.
type rollCluster struct {
	*autoCluster
	cs kubernetes.Interface
}

func newRollCluster(t *testing.T) *rollCluster {
	px := kubetest.Prefix(t)
	c := newAutoClusterWith(t, autoOptions{seed: 5, workerLabel: [2]string{"rack", px + "-r1"}, spare: true, pdbMin: 2})
	return &rollCluster{autoCluster: c, cs: kubetest.Client(t)}
}

// campaign reads the campaign's record from the cluster.
func (c *rollCluster) campaign(t *testing.T, name string) model.Campaign {
	t.Helper()
	cm, err := c.cs.CoreV1().ConfigMaps(kube.LeaseNamespace).Get(kubetest.Ctx(t), kube.RecordName("campaign-"+name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rec model.Campaign
	if err := json.Unmarshal([]byte(cm.Data["record.json"]), &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// watchPDB fails the test if the budget's healthy pods ever fall below what it desires.
func (c *rollCluster) watchPDB(t *testing.T) (stop func()) {
	// The pods are created, then made Ready: the budget is only kept once they all are.
	kubetest.Eventually(t, 10*time.Second, "the budget sees three healthy pods", func() bool {
		p, err := c.cs.PolicyV1().PodDisruptionBudgets(c.ns).Get(kubetest.Ctx(t), "web-pdb", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 3
	})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			p, err := c.cs.PolicyV1().PodDisruptionBudgets(c.ns).Get(kubetest.Ctx(t), "web-pdb", metav1.GetOptions{})
			if err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy < p.Status.DesiredHealthy {
				var pods []string
				if list, err := c.cs.CoreV1().Pods(c.ns).List(kubetest.Ctx(t), metav1.ListOptions{}); err == nil {
					for _, pod := range list.Items {
						pods = append(pods, fmt.Sprintf("%s@%s %s terminating=%v %v", pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.DeletionTimestamp != nil, pod.Status.Conditions))
					}
				}
				t.Errorf("PDB violated: %d healthy, %d desired, %d expected; pods now:\n%s", p.Status.CurrentHealthy, p.Status.DesiredHealthy,
					p.Status.ExpectedPods, strings.Join(pods, "\n"))
				return
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// reboot plays a machine's reboot: the node NotReady and its nova-compute down, then back.
func (c *rollCluster) reboot(t *testing.T, node string) {
	setReady := func(ready corev1.ConditionStatus, boot string) {
		n, err := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), node, metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status = ready
			}
		}
		n.Status.NodeInfo.BootID = boot
		if _, err := c.cs.CoreV1().Nodes().UpdateStatus(kubetest.Ctx(t), n, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
	setUp := func(up bool) {
		c.world.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) { h[node].Up = up })
	}
	setReady(corev1.ConditionFalse, "")
	setUp(false)
	time.Sleep(200 * time.Millisecond)
	setReady(corev1.ConditionTrue, "boot-2")
	time.Sleep(200 * time.Millisecond) // the kubelet is back before nova-compute reports in
	setUp(true)
}

// ndjson parses stdout: every line must be one JSON object.
func ndjson(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", sc.Text(), err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// A campaign over a rack of three compute nodes, one at a time, each rebooted by "someone
// else" (the test) while empty: every node comes back, no PDB is violated, no VM is lost,
// and each node is back before the next one is touched.
func TestRollCampaign(t *testing.T) {
	c := newRollCluster(t)
	stopWatch := c.watchPDB(t)
	marker := filepath.Join(t.TempDir(), "patched")
	p := c.startProcess(t, "--auto", "roll", "--selector", "rack="+c.px+"-r1", "--wait-ready",
		"--exec", "echo patched {node} >> "+marker, "-o", "json")
	var wg sync.WaitGroup
	for range 3 {
		// The operator's reboot: when the campaign waits for it, the node goes down and comes back.
		p.waitFor(t, "waiting for the node to reboot")
		node := ""
		for _, l := range strings.Split(p.out(), "\n") {
			if strings.Contains(l, "waiting for the node to reboot") {
				for _, f := range strings.Fields(l) {
					if strings.HasPrefix(f, c.px+"-c") {
						node = f
					}
				}
			}
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.reboot(t, node) }()
	}
	code := p.wait(t)
	wg.Wait()
	stopWatch()
	if code != 0 || t.Failed() {
		t.Fatalf("roll: exit %d\n%s", code, p.out())
	}
	name := strings.Fields(p.out()[strings.Index(p.out(), "campaign "):])[1]
	rec := c.campaign(t, strings.TrimSuffix(name, ":"))
	if rec.State != model.CampaignDone || len(rec.Nodes) != 3 {
		t.Fatalf("record: %+v", rec)
	}
	for i, n := range rec.Nodes {
		if n.Phase != model.PhaseDone || n.Name != fmt.Sprintf("%s-c%d", c.px, i) {
			t.Errorf("node %d: %+v", i, n)
		}
		if i > 0 && n.Started.Before(rec.Nodes[i-1].Finished) {
			t.Errorf("%s started before %s was back", n.Name, rec.Nodes[i-1].Name)
		}
		k, _ := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), n.Name, metav1.GetOptions{})
		h, _ := c.world.Host(n.Name)
		if k.Spec.Unschedulable || len(k.Spec.Taints) != 0 || !h.Enabled || !h.Up {
			t.Errorf("%s not returned: %+v, compute %+v", n.Name, k.Spec, h)
		}
	}
	patched, _ := os.ReadFile(marker)
	if got := strings.Count(string(patched), "patched "+c.px+"-c"); got != 3 {
		t.Errorf("--exec ran %d times:\n%s", got, patched)
	}
	vms := 0
	for _, name := range []string{"db-1", "db-2", "app-1"} {
		if vm, ok := c.world.ServerByName(name); ok && vm.Status == "ACTIVE" {
			vms++
		}
	}
	if vms != 3 {
		t.Errorf("%d of 3 VMs ACTIVE after the campaign", vms)
	}
	phases := 0
	for _, ev := range ndjson(t, p.stdoutText()) {
		if ev["type"] == "campaign" && ev["phase"] != nil {
			phases++
		}
	}
	if phases < 15 { // five phases for each of three nodes
		t.Errorf("%d campaign phase events on stdout", phases)
	}
}

// Killed mid-campaign (SIGKILL, no chance to clean up) while the second node's step runs, a
// rerun of the same command resumes at that node: the first is not touched again.
func TestRollResumesAfterKill(t *testing.T) {
	c := newRollCluster(t)
	c1 := c.px + "-c1"
	gate := filepath.Join(t.TempDir(), "gate")
	// The step waits on c1 until the gate file exists.
	step := fmt.Sprintf(`if [ {node} = %s ]; then while [ ! -e %s ]; do sleep 0.05; done; fi; echo stepped {node}`, c1, gate)
	args := []string{"--auto", "roll", c.px + "-c0", c1, "--exec", step}
	p := c.startProcess(t, args...)
	p.waitFor(t, c1+" step")
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	os.WriteFile(gate, nil, 0o600)
	migrations := func() (n int) {
		for _, name := range []string{"db-1", "db-2", "app-1"} {
			vm, _ := c.world.ServerByName(name)
			n += len(c.world.MigrationStatuses(vm.ID))
		}
		return n
	}
	before := migrations()

	r := c.drainctl(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "resuming, 2 node(s), 1 done") {
		t.Errorf("the rerun did not say it resumes:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, c.px+"-c0 evacuating") || !strings.Contains(r.stderr, c1+" step") {
		t.Errorf("the rerun did not resume at %s:\n%s", c1, r.stderr)
	}
	if after := migrations(); after != before {
		t.Errorf("the rerun migrated %d VM(s) again", after-before)
	}
	k, _ := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c1, metav1.GetOptions{})
	if k.Spec.Unschedulable {
		t.Errorf("%s still cordoned", c1)
	}
}

// A capacity check that finds no room for the next node's VMs refuses it before anything
// changes on it: exit 3, the node untouched, the record stopped.
func TestRollRefusesWhatTheRestCannotAbsorb(t *testing.T) {
	c := newRollCluster(t)
	c.world.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) {
		for _, n := range []string{"c1", "c2"} {
			h[c.px+"-"+n].MemoryMB = 4096 // db-1 (8 GiB) fits nowhere else
		}
	})
	r := c.drainctl(t, nil, "--auto", "roll", c.px+"-c0", c.px+"-c1")
	if r.code != 3 || !strings.Contains(r.stderr, "no room for 1 VM(s): db-1") {
		t.Fatalf("roll: exit %d\n%s", r.code, r.stderr)
	}
	k, _ := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c.px+"-c0", metav1.GetOptions{})
	h, _ := c.world.Host(c.px + "-c0")
	if k.Spec.Unschedulable || !h.Enabled || c.world.Stats().Mutations != 0 {
		t.Errorf("something changed: node %+v, compute %+v, %d Nova mutations", k.Spec, h, c.world.Stats().Mutations)
	}
	name := strings.Fields(r.stderr[strings.Index(r.stderr, "campaign "):])[1]
	if rec := c.campaign(t, strings.TrimSuffix(name, ":")); rec.State != model.CampaignStopped || rec.Nodes[0].Phase != model.PhasePending {
		t.Errorf("record: %+v", rec)
	}
}

// A campaign's --skip-vm or --override-vm-policy that names no VM on its nodes (a typo: the VM
// meant would be moved) is refused before anything, as an evacuation's is; nothing changes.
func TestRollRefusesAVMFlagNamingNoVM(t *testing.T) {
	c := newRollCluster(t)
	for _, flag := range []string{"--skip-vm", "--override-vm-policy"} {
		r := c.drainctl(t, nil, "--auto", "roll", c.px+"-c0", c.px+"-c1", flag, "db1")
		if r.code != 2 || !strings.Contains(r.stderr, flag+" db1 names no VM of the targets") {
			t.Errorf("%s db1: exit %d\n%s", flag, r.code, r.stderr)
		}
	}
	if n := c.world.Stats().Mutations; n != 0 {
		t.Errorf("%d Nova mutations", n)
	}
}

// A node refused at the campaign's check at the node (a bare pod; --on-failure skip, so that
// the check before the first node lets the campaign start) closes the plan it showed as
// refused: no view (the TUI's list and :ops, -o json) keeps an operation running on a node
// that nothing changed.
func TestRollRefusedNodeLeavesNoPhantom(t *testing.T) {
	c := newRollCluster(t)
	kubetest.Pod(t, c.cs, c.ns, "bare", c.px+"-c0")
	r := c.drainctl(t, nil, "--auto", "roll", c.px+"-c0", c.px+"-c1", "-o", "json", "--on-failure", "skip")
	if r.code != 1 || !strings.Contains(r.stderr, "bare") {
		t.Fatalf("roll: exit %d\n%s", r.code, r.stderr)
	}
	open, plans := map[string]bool{}, 0
	for _, ev := range ndjson(t, r.stdout) {
		switch ev["type"] {
		case "plan":
			open[ev["node"].(string)] = true
			plans++
		case "done":
			delete(open, ev["node"].(string))
			if rep, _ := ev["report"].(map[string]any); ev["node"] == c.px+"-c0" && rep["result"] != "refused" {
				t.Errorf("the refused node's report: %v", rep)
			}
		}
	}
	if plans == 0 || len(open) != 0 {
		t.Errorf("%d plan(s), never closed: %v\n%s", plans, open, r.stdout)
	}
}

// --on-failure skip: a node whose step fails is rolled back (back in service, untouched by
// the campaign) and the campaign goes on; it ends done, but exit 1 names the skipped node.
func TestRollSkipsAFailedNode(t *testing.T) {
	c := newRollCluster(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	step := fmt.Sprintf(`if [ {node} = %s ]; then echo "firmware flash failed" >&2; exit 3; fi`, c0)
	r := c.drainctl(t, nil, "--auto", "roll", c0, c1, "--exec", step, "--on-failure", "skip")
	if r.code != 1 || !strings.Contains(r.stderr, "1 node(s) not worked: "+c0+" (failed, rolled back)") ||
		!strings.Contains(r.stderr, "firmware flash failed") {
		t.Fatalf("roll: exit %d\n%s", r.code, r.stderr)
	}
	name := strings.Fields(r.stderr[strings.Index(r.stderr, "campaign "):])[1]
	rec := c.campaign(t, strings.TrimSuffix(name, ":"))
	if rec.State != model.CampaignDone || rec.Nodes[0].Phase != model.PhaseSkipped || rec.Nodes[1].Phase != model.PhaseDone {
		t.Errorf("record: %+v", rec)
	}
	for _, n := range []string{c0, c1} {
		k, _ := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), n, metav1.GetOptions{})
		h, _ := c.world.Host(n)
		if k.Spec.Unschedulable || !h.Enabled {
			t.Errorf("%s not back in service: %+v, compute %+v", n, k.Spec, h)
		}
	}
}

// --spread-by: the campaign walks the zones round-robin and never has two nodes of one zone
// in flight, though two nodes run at once; --parallel takes a share (67 % of 3 is 2).
func TestRollSpreadsOverFailureDomains(t *testing.T) {
	c := newRollCluster(t)
	c0, c1, c2 := c.px+"-c0", c.px+"-c1", c.px+"-c2"
	for node, zone := range map[string]string{c0: "z1", c1: "z1", c2: "z2"} {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"topology.kubernetes.io/zone":%q}}}`, zone)
		if _, err := c.cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), node, "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := c.drainctl(t, nil, "--auto", "roll", c0, c1, c2, "--spread-by", "topology.kubernetes.io/zone",
		"--parallel", "67%", "--max-parallel", "2", "--exec", "true", "--campaign", "zones")
	if r.code != 0 {
		t.Fatalf("roll: exit %d\n%s", r.code, r.stderr)
	}
	rec := c.campaign(t, "zones")
	var order []string
	for _, n := range rec.Nodes {
		order = append(order, n.Name)
	}
	if strings.Join(order, " ") != strings.Join([]string{c0, c2, c1}, " ") || rec.Parallel != 2 || rec.SpreadBy != "topology.kubernetes.io/zone" {
		t.Fatalf("record: order %v, parallel %d, spread by %q", order, rec.Parallel, rec.SpreadBy)
	}
	first, third := rec.Nodes[0], rec.Nodes[2] // c0 and c1: zone z1
	if first.Domain != "z1" || third.Domain != "z1" || third.Started.Before(first.Finished) {
		t.Errorf("two nodes of z1 in flight at once: %s %s-%s, %s %s-%s", first.Name, first.Started, first.Finished, third.Name, third.Started, third.Finished)
	}
	if second := rec.Nodes[1]; second.Started.After(first.Finished) {
		t.Errorf("the other zone's node did not run beside the first (parallel 2): %s started %s, %s finished %s", second.Name, second.Started, first.Name, first.Finished)
	}
}

// Health gates: no node starts while the gate command fails or a matching alert fires in
// Prometheus; the campaign says why it waits, and goes on by itself once both hold. An alert
// the regular expression does not match does not hold it.
func TestRollWaitsForItsHealthGates(t *testing.T) {
	c := newRollCluster(t)
	c0 := c.px + "-c0"
	marker := filepath.Join(t.TempDir(), "healthy")
	var firing atomic.Bool
	firing.Store(true)
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-123" { // the token comes from its file, never argv
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		alerts := `{"labels":{"alertname":"Watchdog"},"state":"firing"}`
		if firing.Load() {
			alerts += `,{"labels":{"alertname":"CephHealthWarning","severity":"warning"},"state":"firing"}`
		}
		fmt.Fprintf(w, `{"status":"success","data":{"alerts":[%s]}}`, alerts)
	}))
	defer prom.Close()
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte("tok-123\n"), 0o600)
	p := c.startProcess(t, "--auto", "roll", c0, "--exec", "true", "--gate-cmd", "test -f "+marker,
		"--gate-prometheus", prom.URL, "--gate-prometheus-token-file", token, "--gate-alerts", "^Ceph")
	schedulable := func() bool {
		k, err := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
		return err == nil && !k.Spec.Unschedulable
	}
	p.waitFor(t, "waiting: gate command")
	if !schedulable() {
		t.Fatal("the node was cordoned while its gate was closed")
	}
	os.WriteFile(marker, nil, 0o600)
	p.waitFor(t, "waiting: alert firing: CephHealthWarning")
	if !schedulable() {
		t.Fatal("the node was cordoned while an alert fired")
	}
	firing.Store(false)
	if code := p.wait(t); code != 0 || !strings.Contains(p.out(), "gates open: starting") {
		t.Fatalf("roll: exit %d\n%s", code, p.out())
	}
	if strings.Contains(p.out(), "tok-123") {
		t.Errorf("the token is printed:\n%s", p.out())
	}
}

// A gate command that hangs is killed at [roll] gate_timeout with every process it started,
// the campaign says so and holds; a line said it started before it ran.
func TestRollBoundsAHangingGate(t *testing.T) {
	c := newRollCluster(t)
	c0 := c.px + "-c0"
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[timeouts]\npoll = \"100ms\"\n[roll]\ngate_timeout = \"1s\"\n"), 0o600)
	left := filepath.Join(t.TempDir(), "left")
	p := c.startProcess(t, "--config", cfg, "--auto", "roll", c0, "--gate-cmd", "(sleep 3; touch "+left+") & sleep 300")
	p.waitFor(t, "gate command started (timeout 1s)")
	p.waitFor(t, "gate command timed out after 1s")
	time.Sleep(3500 * time.Millisecond)
	if _, err := os.Stat(left); err == nil {
		t.Error("the gate command's background child ran on after its timeout")
	}
	if k, err := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{}); err != nil || k.Spec.Unschedulable {
		t.Errorf("the node was cordoned behind a gate that never answered: %v", err)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t)
}

// --window: outside it no node starts; the campaign says until when and waits.
func TestRollWaitsForItsWindow(t *testing.T) {
	c := newRollCluster(t)
	c0 := c.px + "-c0"
	opens := time.Now().UTC().Add(2 * time.Hour)
	window := fmt.Sprintf("daily %s-%s UTC", opens.Format("15:04"), opens.Add(time.Hour).Format("15:04"))
	p := c.startProcess(t, "--auto", "roll", c0, "--exec", "true", "--window", window)
	p.waitFor(t, "waiting: outside the window "+window+": it opens "+opens.Format("Mon 2006-01-02 15:04")+" UTC")
	k, err := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
	if err != nil || k.Spec.Unschedulable {
		t.Fatalf("the node was cordoned outside the window: %v %+v", err, k.Spec)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 4 {
		t.Errorf("interrupted while it waited: exit %d\n%s", code, p.out())
	}
	if r := c.drainctl(t, nil, "--auto", "roll", c0, "--window", "Mon-Fri 25:00-06:00"); r.code != 2 || !strings.Contains(r.stderr, "HH:MM-HH:MM") {
		t.Errorf("a bad window: exit %d\n%s", r.code, r.stderr)
	}
}

// A fleet already hurting gets no node taken out: a node outside the campaign NotReady (and
// not cordoned: nobody's maintenance) holds it until it is Ready again.
func TestRollWaitsWhileTheFleetHurts(t *testing.T) {
	c := newRollCluster(t)
	c0, c2 := c.px+"-c0", c.px+"-c2"
	kubetest.SetReady(t, c.cs, c2, false, time.Now())
	p := c.startProcess(t, "--auto", "roll", c0, "--exec", "true")
	p.waitFor(t, "outside the campaign NotReady: "+c2)
	kubetest.SetReady(t, c.cs, c2, true, time.Now())
	if code := p.wait(t); code != 0 {
		t.Fatalf("roll: exit %d\n%s", code, p.out())
	}
}

// A node that will not drain does not hold the fleet hostage: past --node-deadline it is
// rolled back and quarantined (labelled, the blocking PDB named), and the campaign goes on.
// What held it is in the record while it holds.
func TestRollQuarantinesAnUndrainableNode(t *testing.T) {
	c := newRollCluster(t)
	c0, c2 := c.px+"-c0", c.px+"-c2"
	// Every web pod must stay: the budget never allows a disruption.
	patch := `{"spec":{"minAvailable":3}}`
	if _, err := c.cs.PolicyV1().PodDisruptionBudgets(c.ns).Patch(kubetest.Ctx(t), "web-pdb", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "the budget allowing nothing", func() bool {
		p, err := c.cs.PolicyV1().PodDisruptionBudgets(c.ns).Get(kubetest.Ctx(t), "web-pdb", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.DesiredHealthy == 3 && p.Status.DisruptionsAllowed == 0
	})
	// The person on call hears of it by the [notify] webhook: the start, the node past its
	// deadline, its quarantine, the end; posted before the run exits.
	hook := notifytest.Start(t, "t0ken")
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[timeouts]\npoll = \"100ms\"\n[notify]\nwebhook = \""+hook.URL+"\"\n"), 0o600)
	// The shortest deadline the flag takes (a shorter one is a typo: 3s for 3m).
	// Run as a Job would be, scraped: the metrics count the node past its deadline while the
	// campaign goes on (DrainctlCampaignNodePastDeadline reads them).
	addr := kubetest.FreeAddr(t)
	p := c.startProcessEnv(t, []string{"DRAINCTL_WEBHOOK_TOKEN=t0ken"}, "--config", cfg, "--auto", "roll", c0, c2, "--exec", "true",
		"--node-deadline", "1m", "--campaign", "stuck", "--metrics-addr", addr)
	pastDeadline := regexp.MustCompile(`(?m)^drainctl_notices_total\{kind="campaign-node-past-deadline"\} 1$`)
	kubetest.Eventually(t, 3*time.Minute, "the node past its deadline in the campaign's metrics", func() bool {
		return pastDeadline.MatchString(scrapeMetrics(t, addr))
	})
	if code := p.wait(t); code != 1 || !strings.Contains(p.out(), c0+" (quarantined)") || !strings.Contains(p.out(), "blocked: pod "+c.ns+"/web-") {
		t.Fatalf("roll: exit %d\n%s", code, p.out())
	}
	r := execResult{code: 1, stderr: p.out()}
	kinds := hook.Kinds(func(n model.Notice) bool { return n.Campaign == "stuck" && (n.Node == "" || n.Node == c0) })
	if want := []model.NoticeKind{model.NoticeCampaignStarted, model.NoticeNodePastDeadline, model.NoticeNodeQuarantined, model.NoticeCampaignFinished}; !slices.Equal(kinds, want) {
		t.Errorf("the webhook heard %v, want %v\n%s", kinds, want, r.stderr)
	}
	rec := c.campaign(t, "stuck")
	if rec.Nodes[0].Phase != model.PhaseQuarantined || !strings.Contains(rec.Nodes[0].Error, "PodDisruptionBudget") ||
		rec.Nodes[1].Phase != model.PhaseDone || rec.Undrainable != "quarantine" {
		t.Errorf("record: %+v", rec)
	}
	k, err := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
	if err != nil || k.Labels["drainctl.io/quarantined"] != "deadline" || !strings.Contains(k.Annotations["drainctl.io/quarantined-reason"], "PodDisruptionBudget web-pdb") || k.Spec.Unschedulable {
		t.Errorf("the quarantined node: labels %v, annotations %v, unschedulable %v", k.Labels, k.Annotations, k.Spec.Unschedulable)
	}
}

// Before its first node, a campaign says what it will cost: per node the VMs' memory and the
// pods, the time at the cloud's measured live-migration rate (the last completed migrations),
// the fleet's least free memory. Below [roll] min_headroom_percent it is refused (exit 3)
// with the node where it would fall short, and nothing changes.
func TestRollForecastsAndKeepsHeadroom(t *testing.T) {
	c := newRollCluster(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	r := c.drainctl(t, nil, "--auto", "roll", c0, c1, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stderr, "forecast: 14G of VM memory and 3 pod(s) to move") ||
		!strings.Contains(r.stderr, "configured: [roll] migration_rate_mib") || !strings.Contains(r.stdout, c0+": pending, 2 VM(s) (10G), 2 pod(s)") {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = c.drainctl(t, nil, "--auto", "migrate", "app-1"); r.code != 0 {
		t.Fatalf("migrate: exit %d\n%s", r.code, r.stderr)
	}
	if r = c.drainctl(t, nil, "--auto", "roll", c0, "--dry-run"); !strings.Contains(r.stderr, "measured across the fleet from its last 1 live migration(s)") {
		t.Errorf("the rate after a migration:\n%s", r.stderr)
	}
	cfg := filepath.Join(c.home, ".config", "drainctl", "config.toml")
	os.WriteFile(cfg, []byte("[timeouts]\npoll = \"100ms\"\n[roll]\nmin_headroom_percent = 99.99\n"), 0o600)
	r = c.drainctl(t, nil, "--auto", "roll", c0, c1, "--exec", "true")
	if r.code != 3 || !strings.Contains(r.stderr, "min_headroom_percent") || !strings.Contains(r.stderr, "while "+c0+" is out") {
		t.Fatalf("below the headroom: exit %d\n%s", r.code, r.stderr)
	}
	if k, _ := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{}); k.Spec.Unschedulable {
		t.Error("a refused campaign cordoned its first node")
	}
}

// A campaign checks every node before its first one: a node whose own plan is refused (a
// bare pod) refuses the dry run (exit 3, its blockers named), or, with --on-failure skip, is
// said to be skipped; the real run skips it untouched, works the next one, and exits 1
// naming it.
func TestRollChecksEveryNodeBeforeItStarts(t *testing.T) {
	c := newRollCluster(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	kubetest.Pod(t, c.cs, c.ns, "bare", c1)
	r := c.drainctl(t, nil, "--auto", "roll", c1, c0, "--dry-run")
	// Each blocker on a line of its own (not escaped into the node's line); nothing recorded.
	if r.code != 3 || !strings.Contains(r.stdout, c1+": pending") || !strings.Contains(r.stdout, "\n  blocks "+c.ns+"/bare") ||
		strings.Contains(r.stdout, `\x0a`) || !strings.Contains(r.stderr, "dry run, 2 node(s), 0 done, parallel 1; nothing recorded") {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = c.drainctl(t, nil, "--auto", "roll", c1, c0, "--dry-run", "--on-failure", "skip")
	// #53.4: the dry run exits as the run would (1), and its forecast leaves the skipped node out.
	if r.code != 1 || !strings.Contains(r.stdout, "would skip") || !strings.Contains(r.stdout, c1) || !strings.Contains(r.stderr, "would leave 1 node(s) untouched") {
		t.Fatalf("dry run, skip: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = c.drainctl(t, nil, "--auto", "roll", c1, c0, "--on-failure", "skip", "--campaign", "skips")
	if r.code != 1 || !strings.Contains(r.stderr, c1+" (refused at its check, left untouched)") || strings.Contains(r.stderr, "rolled back") {
		t.Fatalf("roll, skip: exit %d\n%s", r.code, r.stderr)
	}
	rec := c.campaign(t, "skips")
	if rec.Nodes[0].Phase != model.PhaseSkipped || !strings.Contains(rec.Nodes[0].Error, "bare") || rec.Nodes[1].Phase != model.PhaseDone {
		t.Errorf("record: %+v", rec.Nodes)
	}
	k, _ := c.cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c1, metav1.GetOptions{})
	if k.Spec.Unschedulable || k.Annotations["drainctl.io/operation"] != "" {
		t.Errorf("the skipped node was touched: %+v %v", k.Spec, k.Annotations)
	}
}

// A campaign's return is proven by a canary ([return] canary): a node whose canary fails is
// a failed node (--on-failure skip rolls it back), and its nova-compute stays disabled with
// the canary's reason; a node whose canary boots is enabled once the canary is deleted.
func TestRollReturnsANodeOnlyOnceItsCanaryBoots(t *testing.T) {
	c := newRollCluster(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	c.world.AddImage("img-canary")
	c.world.AddFlavor("c1.tiny", sim.Flavor{Name: "c1.tiny", RAMMB: 256, VCPUs: 1, DiskGB: 1})
	c.world.AddNetwork("net-canary")
	cfg := "[timeouts]\npoll = \"100ms\"\n[return]\ncanary = true\ncanary_timeout = \"30s\"\nimage = \"img-canary\"\nflavor = \"c1.tiny\"\nnetwork = \"net-canary\"\n"
	if err := os.WriteFile(filepath.Join(c.home, ".config", "drainctl", "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.world.ApplyFaultSpec("boot-error=" + c0); err != nil {
		t.Fatal(err)
	}
	r := c.drainctl(t, nil, "--auto", "roll", c0, c1, "--on-failure", "skip")
	if r.code != 1 || !strings.Contains(r.stderr, "1 node(s) not worked: "+c0+" (failed, rolled back)") || !strings.Contains(r.stderr, "Failed to allocate the network(s)") {
		t.Fatalf("roll: exit %d\n%s", r.code, r.stderr)
	}
	name := strings.Fields(r.stderr[strings.Index(r.stderr, "campaign "):])[1]
	rec := c.campaign(t, strings.TrimSuffix(name, ":"))
	if rec.Nodes[0].Phase != model.PhaseSkipped || !strings.Contains(rec.Nodes[0].Error, "not proven healthy") || rec.Nodes[1].Phase != model.PhaseDone {
		t.Errorf("record: %+v", rec.Nodes)
	}
	if h, _ := c.world.Host(c0); h.Enabled || !strings.HasPrefix(h.DisabledReason, "drainctl: canary failed") {
		t.Errorf("%s's nova-compute after its canary failed: enabled=%v %q", c0, h.Enabled, h.DisabledReason)
	}
	if h, _ := c.world.Host(c1); !h.Enabled {
		t.Errorf("%s's canary passed but its nova-compute is disabled: %q", c1, h.DisabledReason)
	}
	for _, s := range c.world.Booted() {
		if s.Status != "DELETED" {
			t.Errorf("canary %s on %s left %s", s.Name, s.Host, s.Status)
		}
	}
	if n := len(c.world.Booted()); n != 2 {
		t.Errorf("%d canaries booted, want one a node", n)
	}
}

// --return-vms: once each node is back and verified, the VMs that left it come home in the
// background; the record says, for each, home again; the summary says how many.
func TestRollBringsTheVMsHome(t *testing.T) {
	c := newRollCluster(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	before := map[string]string{}
	for _, name := range []string{"db-1", "db-2", "app-1"} {
		vm, _ := c.world.ServerByName(name)
		before[name] = vm.Host
	}
	r := c.drainctl(t, nil, "--auto", "roll", c0, c1, "--return-vms")
	if r.code != 0 || !strings.Contains(r.stderr, "3 of 3 VM(s) that left their node home again") {
		t.Fatalf("roll --return-vms: exit %d\n%s", r.code, r.stderr)
	}
	name := strings.Fields(r.stderr[strings.Index(r.stderr, "campaign "):])[1]
	rec := c.campaign(t, strings.TrimSuffix(name, ":"))
	for _, n := range rec.Nodes {
		if n.Phase != model.PhaseDone || len(n.Returns) == 0 {
			t.Errorf("%s: %s, returns %+v", n.Name, n.Phase, n.Returns)
		}
		for _, ret := range n.Returns {
			if !ret.Home || ret.Pending {
				t.Errorf("%s's %s: %+v", n.Name, ret.Name, ret)
			}
		}
	}
	for name, host := range before {
		if vm, _ := c.world.ServerByName(name); vm.Host != host {
			t.Errorf("%s is on %s, was on %s before the campaign", name, vm.Host, host)
		}
	}
}
