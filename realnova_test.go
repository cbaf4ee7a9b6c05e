package main

// Every path end to end on a real OpenStack Nova (hack/nova.sh: Zed, the fake virt driver,
// compute-0..2) and the real kube-apiserver: the real binary, and what Nova and Kubernetes
// show afterwards, not what drainctl prints. Without a real Nova these skip (CI fails them).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/internal/notify/notifytest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// hostLabel joins a test's nodes to the real Nova's hosts ([mapping] mode = "label"): the
// hosts are the machine's, the nodes the test's.
const hostLabel = "drainctl.test/compute-host"

// realCluster: nodes px-c0..c2 on the real API server, each labelled with its compute host
// compute-0..2 of the real Nova, and px-c3, a worker with no compute host where the
// ReplicaSet's replacements go; web pods under a PDB on c0 and c1, a DaemonSet pod on c0.
// extraConfig is appended to the config file.
func newRealCluster(t *testing.T, extraConfig string) (*autoCluster, *novatest.Cloud) {
	t.Helper()
	nova := novatest.Real(t)
	return newClusterOn(t, nova, extraConfig), nova
}

// newClusterOn is newRealCluster on either Nova (novatest.Each: one body, both clouds).
func newClusterOn(t *testing.T, nova *novatest.Cloud, extraConfig string) *autoCluster {
	t.Helper()
	cs := kubetest.Client(t)
	c := &autoCluster{px: kubetest.Prefix(t), kubeconfig: kubetest.Kubeconfig(t), secret: nova.Getenv("OS_PASSWORD")}
	if nova.Guests() { // a real guest's move, stall and abort under QEMU's TCG take minutes
		c.limit = 4 * time.Minute
	}
	c.ns = kubetest.Namespace(t, cs, c.px)
	nodes := []string{c.px + "-cp", c.px + "-c3"}
	kubetest.Node(t, cs, c.px+"-cp", kubetest.Role("control-plane"))
	kubetest.Node(t, cs, c.px+"-c3")
	for i := range novatest.Hosts {
		name := fmt.Sprintf("%s-c%d", c.px, i)
		kubetest.Node(t, cs, name, kubetest.Label(hostLabel, novatest.Hosts[i]))
		nodes = append(nodes, name)
	}
	// The hosts outlive the test: its nodes go, so the next test's are the only ones joined.
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = cs.CoreV1().Nodes().Delete(kubetest.Ctx(t), n, metav1.DeleteOptions{})
		}
	})
	rs, uid := kubetest.ReplicaSet(t, cs, c.ns, "web", 3)
	for i, n := range []string{"c0", "c0", "c1"} {
		kubetest.Pod(t, cs, c.ns, fmt.Sprintf("web-%d", i), c.px+"-"+n, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels("app", "web"), kubetest.Grace(1))
	}
	kubetest.PDB(t, cs, c.ns, "web-pdb", "web", 1)
	ds := kubetest.DaemonSet(t, cs, c.ns, "agent")
	kubetest.Pod(t, cs, c.ns, "agent-x", c.px+"-c0", kubetest.Owned("DaemonSet", "agent", ds))
	ctrl := &kubetest.Controllers{DeleteAfter: 200 * time.Millisecond, ReplaceOn: c.px + "-c3", ReadyAfter: 300 * time.Millisecond}
	ctrl.Run(t, cs, c.ns)

	c.home = t.TempDir()
	dir := filepath.Join(c.home, ".config", "drainctl")
	os.MkdirAll(dir, 0o755)
	cfg := "[mapping]\nmode = \"label\"\nlabel = \"" + hostLabel + "\"\n[timeouts]\npoll = \"250ms\"\n" + extraConfig
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c.env = append(append([]string{}, nova.Env...), "KUBECONFIG="+c.kubeconfig, "HOME="+c.home, "XDG_CONFIG_HOME=", "PATH="+os.Getenv("PATH"))
	return c
}

// node reads a node of the test.
func (c *autoCluster) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := kubetest.Client(t).CoreV1().Nodes().Get(kubetest.Ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// serverOn is a server as the real Nova shows it.
func serverOn(t *testing.T, nova *novatest.Cloud, id string) novatest.Server {
	t.Helper()
	s, ok := nova.Server(id)
	if !ok {
		t.Fatalf("server %s is gone", id)
	}
	return s
}

// The acceptance path on a real Nova: one host carries a VM in every state and of every
// policy, and evacuate empties it of all of them but the one its owner asked to restart
// where it is: running, paused and locked ones move live (paused stays paused, locked stays
// locked), the stopped one cold (confirmed, still stopped), the stop-start one cold (running
// again elsewhere), the one asking to stay by the operator's named override; the restart one
// is stopped in place. Nova's records show no move left unconfirmed and the host's provider
// holds only the VM left on purpose. uncordon starts that VM where it is and enables the host.
func TestRealNovaEvacuatesEveryVMState(t *testing.T) {
	c, nova := newRealCluster(t, "")
	c0 := c.px + "-c0"
	ids := map[string]string{}
	for _, name := range []string{"vm-run", "vm-pause", "vm-stop", "vm-lock", "vm-ss", "vm-rip", "vm-stay"} {
		ids[name] = nova.Boot(name, "compute-0")
	}
	nova.MustAction(ids["vm-pause"], map[string]any{"pause": nil})
	nova.WaitServer(ids["vm-pause"], 30*time.Second, "PAUSED", func(s novatest.Server) bool { return s.Status == "PAUSED" })
	nova.Stop(ids["vm-stop"])
	nova.MustAction(ids["vm-lock"], map[string]any{"lock": map[string]any{"locked_reason": "owner says hands off"}})
	for name, policy := range map[string]string{"vm-ss": "stop-start", "vm-rip": "restart-in-place", "vm-stay": "stays"} {
		nova.API.Must("POST", "compute", "/servers/"+ids[name]+"/metadata", map[string]any{"metadata": map[string]string{model.VMPolicyKey: policy}}, nil, 200)
	}

	// Done as asked, the node not empty on purpose (exit 6): vm-rip waits for its return.
	r := c.drainctl(t, nil, "--auto", "evacuate", c0, "--force", "--override-vm-policy", "vm-stay")
	if r.code != 6 || !strings.Contains(r.stderr, "vm-rip: stopped for restart-in-place") {
		t.Fatalf("evacuate: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("evacuate:\n%s", r.stderr)
	want := map[string]string{"vm-run": "ACTIVE", "vm-pause": "PAUSED", "vm-stop": "SHUTOFF", "vm-lock": "ACTIVE", "vm-ss": "ACTIVE", "vm-stay": "ACTIVE"}
	for name, status := range want {
		s := serverOn(t, nova, ids[name])
		if s.Host == "compute-0" || s.Status != status || s.Task() != "" {
			t.Errorf("%s: %s (task %q) on %s; want %s elsewhere", name, s.Status, s.Task(), s.Host, status)
		}
		for _, m := range nova.Migrations(ids[name]) {
			if m.Type == model.MigrationTypeCold && m.Status != "confirmed" {
				t.Errorf("%s: cold migration %s left %s", name, m.UUID, m.Status)
			}
		}
	}
	if s := serverOn(t, nova, ids["vm-lock"]); !s.Locked {
		t.Errorf("vm-lock is no longer locked: %+v", s)
	}
	if rip := serverOn(t, nova, ids["vm-rip"]); rip.Host != "compute-0" || rip.Status != "SHUTOFF" {
		t.Errorf("vm-rip: %s on %s; want SHUTOFF where it was", rip.Status, rip.Host)
	}
	if got := nova.Consumers("compute-0"); !slices.Equal(got, []string{ids["vm-rip"]}) {
		t.Errorf("compute-0's provider holds %v; want vm-rip alone (%s)", got, ids["vm-rip"])
	}
	if svc := nova.Service("compute-0"); svc.Status != "disabled" {
		t.Errorf("nova-compute on compute-0: %+v", svc)
	}
	if n := c.node(t, c0); !n.Spec.Unschedulable {
		t.Errorf("%s is schedulable after its evacuation", c0)
	}
	if pods := podsOn(t, c, c0); len(pods) != 0 && !(len(pods) == 1 && pods[0] == "agent-x") {
		t.Errorf("pods left on %s: %v", c0, pods)
	}

	r = c.drainctl(t, nil, "--auto", "uncordon", c0)
	if r.code != 0 {
		t.Fatalf("uncordon: exit %d\n%s", r.code, r.stderr)
	}
	if rip := serverOn(t, nova, ids["vm-rip"]); rip.Host != "compute-0" || rip.Status != "ACTIVE" {
		t.Errorf("vm-rip after uncordon: %s on %s; want ACTIVE where it was", rip.Status, rip.Host)
	}
	if svc := nova.Service("compute-0"); svc.Status != "enabled" {
		t.Errorf("nova-compute on compute-0 after uncordon: %+v", svc)
	}
	if n := c.node(t, c0); n.Spec.Unschedulable || hasTaint(n, "drainctl.io/maintenance") {
		t.Errorf("%s after uncordon: unschedulable %v, taints %v", c0, n.Spec.Unschedulable, n.Spec.Taints)
	}
}

// A stopped VM's cold move left for the operator (confirm_cold = false) waits in
// VERIFY_RESIZE on the real Nova; abort reverts it, proven drainctl's by Nova's own record of
// it: the VM back on its host, stopped, and the record reverted. (The simulator's twin, with a
// poll slower than the move: TestAbortRevertsAnUnconfirmedColdMigration.)
func TestRealNovaAbortRevertsAColdMoveLeftForTheOperator(t *testing.T) {
	c, nova := newRealCluster(t, "[policy]\nconfirm_cold = false\n")
	c0 := c.px + "-c0"
	off := nova.Boot("wait-off", "compute-0")
	nova.Stop(off)
	// A colleague's cold move off compute-0, waiting for them to confirm it: a journal forged
	// to name it (its UUID, a made-up request) must not make abort revert it.
	theirs := nova.Boot("their-off", "compute-0")
	nova.Stop(theirs)
	nova.MustAction(theirs, map[string]any{"migrate": nil})
	nova.WaitServer(theirs, 60*time.Second, "their-off waiting in VERIFY_RESIZE", func(s novatest.Server) bool {
		return s.Status == "VERIFY_RESIZE" && s.Task() == ""
	})
	if r := c.drainctl(t, nil, "--auto", "evacuate", c0, "--force"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "confirm_cold = false") {
		t.Fatalf("evacuate: exit %d, the move left for the operator unsaid\n%s%s", r.code, r.stdout, r.stderr)
	}
	if s := serverOn(t, nova, off); s.Status != "VERIFY_RESIZE" || s.Host == "compute-0" {
		t.Fatalf("after the evacuation: %s on %s; want VERIFY_RESIZE elsewhere", s.Status, s.Host)
	}
	cs := kubetest.Client(t)
	n, err := cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := ops.ReadJournal(model.KubeNode{Annotations: n.Annotations})
	if len(j.ColdMoves) != 1 || !strings.HasPrefix(j.ColdMoves[0].Request, "req-") {
		t.Fatalf("the journal's cold moves: %+v; want wait-off's with Nova's request ID", j.ColdMoves)
	}
	j.ColdMoves = append(j.ColdMoves, ops.ColdMove{VM: theirs, Migration: nova.Migrations(theirs)[0].UUID, Requested: time.Now(),
		Source: "compute-0", Request: "req-00000000-0000-0000-0000-000000000000"})
	raw, _ := json.Marshal(j)
	n.Annotations[ops.JournalAnnotation] = string(raw)
	if _, err := cs.CoreV1().Nodes().Update(kubetest.Ctx(t), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := c.drainctl(t, nil, "--auto", "abort", c0)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "their-off left in VERIFY_RESIZE") {
		t.Fatalf("abort: exit %d, their-off's move left unsaid\n%s%s", r.code, r.stdout, r.stderr)
	}
	nova.WaitServer(off, 60*time.Second, "SHUTOFF back on compute-0", func(s novatest.Server) bool {
		return s.Status == "SHUTOFF" && s.Host == "compute-0" && s.Task() == ""
	})
	if ms := nova.Migrations(off); len(ms) != 1 || ms[0].Status != "reverted" {
		t.Errorf("wait-off's records: %+v", ms)
	}
	time.Sleep(3 * time.Second) // a revert asked of Nova would show by now (its task, then compute-0)
	if s := serverOn(t, nova, theirs); s.Status != "VERIFY_RESIZE" || s.Host == "compute-0" || s.Task() != "" {
		t.Errorf("their-off: %s on %s (task %q): a colleague's cold move was touched on a forged journal's word", s.Status, s.Host, s.Task())
	}
	if ms := nova.Migrations(theirs); len(ms) != 1 || ms[0].Status != "finished" {
		t.Errorf("their-off's records: %+v; want its one move waiting (finished)", ms)
	}
	// A stale record: wait-off's entry keeps drainctl's earlier request, genuine; a colleague
	// has cold-moved wait-off since, and the entry is made to name that move.
	nova.MustAction(off, map[string]any{"migrate": nil})
	nova.WaitServer(off, 60*time.Second, "wait-off waiting in VERIFY_RESIZE, the colleague's move", func(s novatest.Server) bool {
		return s.Status == "VERIFY_RESIZE" && s.Task() == ""
	})
	if n, err = cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := j
	stale.ColdMoves = []ops.ColdMove{j.ColdMoves[0]}
	stale.ColdMoves[0].Migration = nova.Migrations(off)[0].UUID // newest first: the colleague's
	raw, _ = json.Marshal(stale)
	n.Annotations[ops.JournalAnnotation] = string(raw)
	if _, err := cs.CoreV1().Nodes().Update(kubetest.Ctx(t), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := c.drainctl(t, nil, "--auto", "abort", c0); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "wait-off left in VERIFY_RESIZE") {
		t.Fatalf("abort on a stale record: exit %d, wait-off's move left unsaid\n%s%s", r.code, r.stdout, r.stderr)
	}
	time.Sleep(3 * time.Second)
	if s := serverOn(t, nova, off); s.Status != "VERIFY_RESIZE" || s.Host == "compute-0" || s.Task() != "" {
		t.Errorf("wait-off: %s on %s (task %q): a colleague's cold move was touched on a stale record's request", s.Status, s.Host, s.Task())
	}
}

// migrate --to: a running VM moves live and a stopped one cold to the node asked for; Nova
// shows each there, the cold one confirmed and still stopped.
func TestRealNovaMigratesToATarget(t *testing.T) {
	c, nova := newRealCluster(t, "")
	run, off := nova.Boot("to-run", "compute-0"), nova.Boot("to-off", "compute-0")
	nova.Stop(off)
	for _, name := range []string{"to-run", "to-off"} {
		if r := c.drainctl(t, nil, "--auto", "migrate", name, "--to", c.px+"-c2"); r.code != 0 {
			t.Fatalf("migrate %s: exit %d\n%s", name, r.code, r.stderr)
		}
	}
	if s := serverOn(t, nova, run); s.Host != "compute-2" || s.Status != "ACTIVE" {
		t.Errorf("to-run: %s on %s", s.Status, s.Host)
	}
	if s := serverOn(t, nova, off); s.Host != "compute-2" || s.Status != "SHUTOFF" {
		t.Errorf("to-off: %s on %s", s.Status, s.Host)
	}
	if ms := nova.Migrations(off); len(ms) != 1 || ms[0].Status != "confirmed" || ms[0].DestCompute != "compute-2" {
		t.Errorf("to-off's records: %+v", ms)
	}
}

// abort from a second process while live migrations run in Nova: the evacuation stops
// (exit 4) and the migrations it left are aborted in Nova (cancelled: the VM ACTIVE where it
// was). Two per source are asked at once, so Nova queues the second behind the first: an
// abort within the two migrations' 10 s finds one to cancel on a loaded machine too. rollback
// then puts the node back as it was: schedulable, no taint, nova-compute enabled, no journal.
func TestRealNovaAbortAndRollback(t *testing.T) {
	c, nova := newRealCluster(t, "[concurrency]\nmigrations_per_source = 2\n")
	c0 := c.px + "-c0"
	vms := []string{nova.Boot("ab-a", "compute-0"), nova.Boot("ab-b", "compute-0")}
	p := c.startProcess(t, "--auto", "evacuate", c0, "--force")
	nova.Wait(60*time.Second, "a live migration running in Nova", func() bool {
		for _, id := range vms {
			if ms := nova.Migrations(id); len(ms) > 0 && ms[0].Status == "running" {
				return true
			}
		}
		return false
	})
	asked := time.Now()
	if r := c.drainctl(t, nil, "--auto", "abort", c0); r.code != 0 {
		t.Fatalf("abort: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("abort took %s from a migration seen running", time.Since(asked).Round(time.Millisecond))
	if code := p.wait(t); code != 4 || !strings.Contains(p.out(), "abort requested by drainctl/") {
		t.Fatalf("the evacuation after the abort: exit %d\n%s", code, p.out())
	}
	// Nova's abort is asked (202) and carried out by the source's compute a moment later.
	final := map[string]string{}
	nova.Wait(30*time.Second, "every migration ended", func() bool {
		for _, id := range vms {
			ms := nova.Migrations(id)
			if len(ms) == 0 {
				final[id] = "none"
				continue
			}
			if st := ms[0].Status; st == "completed" || st == "cancelled" || st == "error" {
				final[id] = st
				continue
			}
			return false
		}
		return true
	})
	cancelled := 0
	for _, id := range vms {
		s := serverOn(t, nova, id)
		switch final[id] {
		case "cancelled":
			cancelled++
			nova.WaitServer(id, 30*time.Second, "ACTIVE back on compute-0", func(s novatest.Server) bool {
				return s.Status == "ACTIVE" && s.Host == "compute-0" && s.Task() == ""
			})
		case "completed":
			if s.Host == "compute-0" {
				t.Errorf("%s completed its move but is on compute-0", s.Name)
			}
		default:
			t.Errorf("%s's migration ended %s", s.Name, final[id])
		}
	}
	if cancelled == 0 {
		t.Fatalf("no migration was aborted: %v\n%s", final, p.out())
	}
	if r := c.drainctl(t, nil, "--auto", "rollback", c0); r.code != 0 {
		t.Fatalf("rollback: exit %d\n%s", r.code, r.stderr)
	}
	n := c.node(t, c0)
	if n.Spec.Unschedulable || len(n.Spec.Taints) != 0 || n.Annotations[ops.JournalAnnotation] != "" {
		t.Errorf("after the rollback: %+v %v", n.Spec, n.Annotations)
	}
	if svc := nova.Service("compute-0"); svc.Status != "enabled" {
		t.Errorf("nova-compute on compute-0 after the rollback: %+v", svc)
	}
}

// A host dies (its nova-compute killed, its node NotReady for minutes). recover by hand
// rebuilds its VMs elsewhere (the stopped one stopped) and is done although Nova keeps their
// allocations on the dead host's provider until its nova-compute starts again: that is said,
// not failed. The host comes back: uncordon forces its service up once Nova allows it (the
// restart turned the evacuations completed), and only then finds the allocations gone; the
// taint goes, the node is schedulable.
func TestRealNovaRecoversAHostAndReturnsIt(t *testing.T) {
	c, nova := newRealCluster(t, "")
	cs := kubetest.Client(t)
	c1 := c.px + "-c1"
	run, off := nova.Boot("rec-run", "compute-1"), nova.Boot("rec-off", "compute-1")
	nova.Stop(off)
	nova.StopCompute("compute-1")
	kubetest.SetReady(t, cs, c1, false, time.Now().Add(-5*time.Minute))
	// drainctl refuses while Nova still sees the service up (the machine may still run).
	nova.Wait(60*time.Second, "Nova seeing nova-compute on compute-1 down", func() bool { return nova.Service("compute-1").State == "down" })

	r := c.drainctl(t, nil, "--auto", "recover", c1, "--confirm-fenced", "--accept-disk-loss")
	if r.code != 0 {
		t.Fatalf("recover: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("recover:\n%s", r.stderr)
	if !strings.Contains(r.stderr, "until compute-1's nova-compute starts again") {
		t.Errorf("recover does not say the dead host's allocations wait for its return:\n%s", r.stderr)
	}
	for id, status := range map[string]string{run: "ACTIVE", off: "SHUTOFF"} {
		s := serverOn(t, nova, id)
		ms := nova.Migrations(id)
		if s.Host == "compute-1" || s.Status != status || len(ms) != 1 || ms[0].Type != model.MigrationTypeEvacuation || ms[0].Status != "done" {
			t.Errorf("%s: %s on %s, records %+v; want %s elsewhere, one evacuation done", s.Name, s.Status, s.Host, ms, status)
		}
	}
	if held := nova.Consumers("compute-1"); len(held) != 2 {
		t.Errorf("the dead host's provider holds %v; want both rebuilt servers' allocations, as Nova keeps them", held)
	}
	if svc := nova.Service("compute-1"); !svc.ForcedDown {
		t.Errorf("nova-compute on compute-1 not forced down: %+v", svc)
	}
	if n := c.node(t, c1); !hasTaint(n, "node.kubernetes.io/out-of-service") {
		t.Errorf("%s has no out-of-service taint: %v", c1, n.Spec.Taints)
	}

	nova.StartCompute("compute-1")
	kubetest.SetReady(t, cs, c1, true, time.Now())
	r = c.drainctl(t, nil, "--auto", "uncordon", c1)
	if r.code != 0 {
		t.Fatalf("uncordon: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("uncordon:\n%s", r.stderr)
	if svc := nova.Service("compute-1"); svc.ForcedDown || svc.Status != "enabled" || svc.State != "up" {
		t.Errorf("nova-compute on compute-1 after uncordon: %+v", svc)
	}
	if held := nova.Consumers("compute-1"); len(held) != 0 {
		t.Errorf("compute-1's provider still holds %v after its return", held)
	}
	for _, id := range []string{run, off} {
		if ms := nova.Migrations(id); ms[0].Status != "completed" {
			t.Errorf("%s's evacuation after the host's return: %s", id, ms[0].Status)
		}
	}
	if n := c.node(t, c1); n.Spec.Unschedulable || len(n.Spec.Taints) != 0 {
		t.Errorf("%s after uncordon: unschedulable %v, taints %v", c1, n.Spec.Unschedulable, n.Spec.Taints)
	}
}

// uncordon --return-vms: the VMs an evacuation moved off come home once the node is back,
// live or cold as their state says (the stopped one stays stopped).
func TestRealNovaBringsTheVMsHome(t *testing.T) {
	c, nova := newRealCluster(t, "")
	c0 := c.px + "-c0"
	run, off := nova.Boot("home-run", "compute-0"), nova.Boot("home-off", "compute-0")
	nova.Stop(off)
	if r := c.drainctl(t, nil, "--auto", "evacuate", c0, "--force"); r.code != 0 {
		t.Fatalf("evacuate: exit %d\n%s", r.code, r.stderr)
	}
	for _, id := range []string{run, off} {
		if s := serverOn(t, nova, id); s.Host == "compute-0" {
			t.Fatalf("%s not moved off: %+v", s.Name, s)
		}
	}
	r := c.drainctl(t, nil, "--auto", "uncordon", c0, "--return-vms")
	if r.code != 0 {
		t.Fatalf("uncordon --return-vms: exit %d\n%s", r.code, r.stderr)
	}
	t.Logf("uncordon --return-vms:\n%s", r.stderr)
	for id, status := range map[string]string{run: "ACTIVE", off: "SHUTOFF"} {
		if s := serverOn(t, nova, id); s.Host != "compute-0" || s.Status != status || s.Task() != "" {
			t.Errorf("%s after its return: %s (task %q) on %s; want %s home", s.Name, s.Status, s.Task(), s.Host, status)
		}
	}
}

// A campaign's return (roll --return-vms) plans on home alone and on the VM as it read it
// just before (a server read says its flavor, a host's read its allocations): on both Novas
// the VMs come home, the running one live and ACTIVE, the stopped one cold and SHUTOFF.
func TestRealNovaCampaignBringsTheVMsHome(t *testing.T) {
	novatest.Each(t, func(t *testing.T, nova *novatest.Cloud) {
		c := newClusterOn(t, nova, "")
		c0 := c.px + "-c0"
		run, off := nova.Boot("back-run", "compute-0"), nova.Boot("back-off", "compute-0")
		nova.Stop(off)
		r := c.drainctl(t, nil, "--auto", "roll", c0, "--force", "--return-vms")
		if r.code != 0 {
			t.Fatalf("roll --return-vms: exit %d\n%s", r.code, r.stderr)
		}
		for id, status := range map[string]string{run: "ACTIVE", off: "SHUTOFF"} {
			s := serverOn(t, nova, id)
			if s.Host != "compute-0" || s.Status != status || s.Task() != "" {
				t.Errorf("%s after the campaign: %s (task %q) on %s; want %s home\n%s", s.Name, s.Status, s.Task(), s.Host, status, r.stderr)
			}
			if ms := nova.Migrations(id); len(ms) != 2 {
				t.Errorf("%s: %d migration records, want 2 (out and home): %+v", s.Name, len(ms), ms)
			}
		}
	})
}

// newRecoveryCluster is the real cluster with automatic recovery on, the fence a command that
// writes the node's name to dir/fenced, the notices posted to hook; the namespace and the CRD
// the controller needs applied.
func newRecoveryCluster(t *testing.T) (c *autoCluster, nova *novatest.Cloud, dir string, hook *notifytest.Webhook) {
	dir, hook = t.TempDir(), notifytest.Start(t, "t0ken")
	c, nova = newRealCluster(t, "[recover]\nautomatic = true\nshared_storage = true\nnot_ready_for = \"30s\"\npods_gone_within = \"1s\"\n"+
		"fence_cmd = \"echo {node} >> "+dir+"/fenced\"\n[notify]\nwebhook = \""+hook.URL+"\"\n")
	c.env = append(c.env, "DRAINCTL_WEBHOOK_TOKEN=t0ken")
	for _, err := range kubetest.Apply(t, false, "deploy/namespace.yaml", "deploy/crd-nodemaintenance.yaml") {
		t.Fatal(err)
	}
	// The API server is shared: a storm this test makes (its cooldown) is not the next one's.
	cs := kubetest.Client(t)
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps(kube.LeaseNamespace).Delete(context.Background(), kube.RecordName("storm"), metav1.DeleteOptions{})
	})
	return c, nova, dir, hook
}

// startController runs --controller until the test ends; its output is logged if it fails.
func startController(t *testing.T, c *autoCluster) {
	ctrl := c.startProcess(t, "--controller")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller:\n%s", ctrl.out())
		}
	})
	ctrl.waitFor(t, "automatic recovery on")
}

// fenced lists the nodes the fence command was run for.
func fenced(dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "fenced"))
	return strings.Fields(string(b))
}

// A host dies with no person about: the controller sees its node NotReady and its
// nova-compute down (Nova's own verdict, service_down_time), fences it once, rebuilds its VM
// elsewhere, keeps the ledger and posts recovery-done, although Nova keeps the VM's
// allocation on the dead host until it returns.
func TestRealNovaRecoversADeadHostByItself(t *testing.T) {
	c, nova, dir, hook := newRecoveryCluster(t)
	c1 := c.px + "-c1"
	vm := nova.Boot("auto-1", "compute-1")
	startController(t, c)
	nova.StopCompute("compute-1")
	kubetest.SetReady(t, kubetest.Client(t), c1, false, time.Now().Add(-5*time.Minute))

	nova.Wait(120*time.Second, "recovery-done posted", func() bool {
		return slices.Contains(hook.Kinds(func(n model.Notice) bool { return n.Node == c1 }), model.NoticeRecoveryDone)
	})
	if got := fenced(dir); !slices.Equal(got, []string{c1}) {
		t.Errorf("fenced %v; want %s once", got, c1)
	}
	s := serverOn(t, nova, vm)
	if ms := nova.Migrations(vm); s.Host == "compute-1" || s.Status != "ACTIVE" || len(ms) != 1 || ms[0].Type != model.MigrationTypeEvacuation {
		t.Errorf("auto-1: %s on %s, records %+v; want ACTIVE elsewhere, rebuilt once", s.Status, s.Host, ms)
	}
	if kinds := hook.Kinds(func(n model.Notice) bool { return n.Node == c1 }); slices.Contains(kinds, model.NoticeRecoveryFailed) {
		t.Errorf("the webhook heard %v", kinds)
	}
	r := c.drainctl(t, nil, "--auto", "recoveries", "-o", "json")
	var mine string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, `"node":"`+c1+`"`) {
			mine = l
		}
	}
	if !strings.Contains(mine, `"automatic":true`) || !strings.Contains(mine, `"outcome":"done"`) || !strings.Contains(mine, `"status":"succeeded"`) {
		t.Errorf("the ledger of %s: %s", c1, mine)
	}
}

// Two of the three hosts die at once (max_unhealthy = 1): a storm, a partition more likely
// than two dead machines. Nothing is fenced and nothing rebuilt; the storm is posted.
func TestRealNovaStormFencesNothing(t *testing.T) {
	c, nova, dir, hook := newRecoveryCluster(t)
	vms := []string{nova.Boot("storm-1", "compute-1"), nova.Boot("storm-2", "compute-2")}
	startController(t, c)
	for i, h := range []string{"compute-1", "compute-2"} {
		nova.StopCompute(h)
		kubetest.SetReady(t, kubetest.Client(t), fmt.Sprintf("%s-c%d", c.px, i+1), false, time.Now().Add(-5*time.Minute))
	}
	nova.Wait(120*time.Second, "the storm posted", func() bool {
		return slices.Contains(hook.Kinds(nil), model.NoticeStorm)
	})
	time.Sleep(3 * time.Second) // a pass after the storm: still nothing
	if got := fenced(dir); len(got) != 0 {
		t.Errorf("fenced %v in a storm", got)
	}
	for _, id := range vms {
		if ms := nova.Migrations(id); len(ms) != 0 {
			t.Errorf("%s was moved in a storm: %+v", id, ms)
		}
	}
}

// A two-node campaign with --exec: each node in turn emptied of its VMs (never onto the
// other node of the campaign while it waits), its command run, then returned (nova-compute
// enabled, schedulable); every VM ACTIVE at the end, moved once.
func TestRealNovaCampaignWithExec(t *testing.T) {
	c, nova := newRealCluster(t, "")
	c0, c1 := c.px+"-c0", c.px+"-c1"
	marker := filepath.Join(t.TempDir(), "patched")
	a, b := nova.Boot("roll-a", "compute-0"), nova.Boot("roll-b", "compute-1")
	r := c.drainctl(t, nil, "--auto", "roll", c0, c1, "--force", "--exec", "echo patched {node} >> "+marker)
	if r.code != 0 {
		t.Fatalf("roll: exit %d\n%s", r.code, r.stderr)
	}
	got, _ := os.ReadFile(marker)
	if want := "patched " + c0 + "\npatched " + c1 + "\n"; string(got) != want {
		t.Errorf("--exec ran %q; want %q", got, want)
	}
	for _, id := range []string{a, b} {
		s := serverOn(t, nova, id)
		if ms := nova.Migrations(id); s.Status != "ACTIVE" || len(ms) != 1 || ms[0].Status != "completed" || ms[0].DestCompute == "compute-0" && id == a {
			t.Errorf("%s: %s on %s, records %+v; want ACTIVE, moved once", s.Name, s.Status, s.Host, ms)
		}
	}
	if s := serverOn(t, nova, a); s.Host != "compute-2" {
		t.Errorf("roll-a went to %s: compute-1 was the campaign's next node", s.Host)
	}
	for i, h := range []string{"compute-0", "compute-1"} {
		if svc := nova.Service(h); svc.Status != "enabled" {
			t.Errorf("%s after the campaign: %+v", h, svc)
		}
		if n := c.node(t, fmt.Sprintf("%s-c%d", c.px, i)); n.Spec.Unschedulable {
			t.Errorf("%s unschedulable after the campaign", n.Name)
		}
	}
}

// The daemon (nova-kubernetes-drain) follows a cordon someone made: it disables the host's
// nova-compute and moves its VMs off; the uncordon enables it again.
func TestRealNovaDaemonFollowsACordon(t *testing.T) {
	c, nova := newRealCluster(t, "")
	cs := kubetest.Client(t)
	kubetest.Namespace(t, cs, kube.LeaseNamespace)
	c0 := c.px + "-c0"
	vm := nova.Boot("daemon-1", "compute-0")
	d := c.startProcess(t, "--daemon", "--node", "")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon:\n%s", d.out())
		}
	})
	cordon := func(on bool) {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
		if _, err := cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), c0, "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	nova.Wait(90*time.Second, "daemon-1 moved off compute-0, its service disabled", func() bool {
		s, _ := nova.Server(vm)
		return s.Host != "compute-0" && s.Status == "ACTIVE" && s.Task() == "" && nova.Service("compute-0").Status == "disabled"
	})
	cordon(false)
	nova.Wait(60*time.Second, "nova-compute on compute-0 enabled again", func() bool {
		return nova.Service("compute-0").Status == "enabled"
	})
}
