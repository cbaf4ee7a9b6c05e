package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

// A host dies mid-life, both layers at once. recover is refused while the machine is not
// proven off, and changes nothing; with --fence-cmd it rebuilds every VM elsewhere (a
// kill -9 during the rebuilds and a rerun rebuild none twice), the node's pods go, the
// taint is set and the service forced down. The machine comes back, and uncordon returns
// the node: it waits for Nova to allow the force-up, then service up, enabled, taint gone,
// schedulable.
func TestRecoverADeadHost(t *testing.T) {
	// Life speed for the simulator: a rebuild takes 3 s, long enough to be killed during it.
	c := newAutoClusterWith(t, autoOptions{seed: 11, spare: true, pdbMin: 1, scale: 1})
	cs := kubetest.Client(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	c.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) {
		for _, vm := range s {
			if vm.Name == "db-2" {
				vm.VolumeBacked = true
			}
		}
	})
	c.world.Stop("db-2") // a stopped VM is rebuilt stopped

	node := func(name string) (schedulable, outOfService bool, journal string) {
		n, err := cs.CoreV1().Nodes().Get(kubetest.Ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, taint := range n.Spec.Taints {
			outOfService = outOfService || taint.Key == policy.OutOfService.Key
		}
		return !n.Spec.Unschedulable, outOfService, n.Annotations[ops.JournalAnnotation]
	}
	unchanged := func(when string) {
		t.Helper()
		sched, oos, journal := node(c0)
		h, _ := c.world.Host(c0)
		db1, _ := c.world.ServerByName("db-1")
		if !sched || oos || journal != "" || h.ForcedDown || !h.Enabled || db1.Host != c0 || len(c.world.MigrationStatuses(db1.ID)) != 0 {
			t.Fatalf("%s: something changed: schedulable %v, out-of-service %v, journal %q, service forced down %v enabled %v, db-1 on %s",
				when, sched, oos, journal, h.ForcedDown, h.Enabled, db1.Host)
		}
	}

	// A live node is not recovered.
	r := c.drainctl(t, nil, "--auto", "recover", c0, "--confirm-fenced")
	if r.code != 3 || !strings.Contains(r.stderr, "the node is Ready") {
		t.Fatalf("live node: exit %d\n%s", r.code, r.stderr)
	}
	// The machine dies: nova-compute stops reporting, the node goes NotReady.
	c.world.KillHost(c0)
	kubetest.SetReady(t, cs, c0, false, time.Now().Add(-5*time.Minute))
	// Not proven off: refused, exit 3, nothing changed, the override named.
	r = c.drainctl(t, nil, "--auto", "recover", c0)
	if r.code != 3 || !strings.Contains(r.stderr, "not proven off") || !strings.Contains(r.stderr, "--fence-cmd") {
		t.Fatalf("unfenced: exit %d\n%s", r.code, r.stderr)
	}
	// #53.12: the disk-loss blocker does not say "below" where the plan printed the loss above.
	if out := r.stdout + r.stderr; !strings.Contains(out, "each listed as lost in the plan") || strings.Contains(out, "LOST FOR GOOD below") ||
		strings.Index(out, "LOST ") > strings.Index(out, "would lose their local disk") {
		t.Errorf("the plan's disk loss:\n%s", out)
	}
	unchanged("refused without fencing")
	// A fence command that fails proves nothing: refused, nothing changed, its output shown.
	r = c.drainctl(t, nil, "--auto", "recover", c0, "--accept-disk-loss", "--fence-cmd", "echo BMC of {node} unreachable; exit 1")
	if r.code != 3 || !strings.Contains(r.stderr, "BMC of "+c0+" unreachable") || !strings.Contains(r.stderr, "not proven off") {
		t.Fatalf("failed fence: exit %d\n%s", r.code, r.stderr)
	}
	unchanged("refused after a failed fence command")
	// A node NotReady for a moment only is not dead yet ([recover] not_ready_for).
	c.world.KillHost(c1)
	kubetest.SetReady(t, cs, c1, false, time.Now())
	r = c.drainctl(t, nil, "--auto", "recover", c1, "--confirm-fenced")
	if r.code != 3 || !strings.Contains(r.stderr, "not_ready_for") {
		t.Fatalf("briefly NotReady: exit %d\n%s", r.code, r.stderr)
	}
	c.world.ReviveHost(c1)
	kubetest.SetReady(t, cs, c1, true, time.Now())

	// The plan says what becomes of each VM's disk.
	r = c.drainctl(t, nil, "--auto", "plan", "recover", c0, "--accept-disk-loss", "--fence-cmd", "true")
	if r.code != 0 || !strings.Contains(r.stdout, "rebuild db-2 (SHUTOFF, 2G): "+policy.DiskOnVolume) ||
		!strings.Contains(r.stdout, "LOST   db-1: "+policy.DiskLost) {
		t.Fatalf("plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Fenced by a command: killed (kill -9) while a VM is being rebuilt.
	p := c.startProcess(t, "--auto", "recover", c0, "--accept-disk-loss", "--fence-cmd", "echo powering off {node}")
	kubetest.Eventually(t, 60*time.Second, "a VM being rebuilt", func() bool { return rebuilding(c, "db-1", "db-2") })
	p.cmd.Process.Kill() // kill -9: no safe point
	p.wait(t)
	if !strings.Contains(p.out(), "fence-cmd: powering off "+c0) {
		t.Errorf("the fence command's output is not reported:\n%s", p.out())
	}
	r = c.drainctl(t, nil, "--auto", "recover", c0, "--accept-disk-loss") // the fence record proves this outage: no fence flag needed
	if r.code != 0 || !strings.Contains(r.stderr, "fence skipped") {
		t.Fatalf("rerun: exit %d\n%s\nfirst run:\n%s", r.code, r.stderr, p.out())
	}
	t.Logf("first run:\n%s\nrerun:\n%s", p.out(), r.stderr)
	for name, want := range map[string]string{"db-1": "ACTIVE", "db-2": "SHUTOFF"} {
		vm, _ := c.world.ServerByName(name)
		if st := c.world.MigrationStatuses(vm.ID); len(st) != 1 || vm.Host == c0 || vm.Status != want {
			t.Errorf("%s: %s on %s, evacuations %v; want one rebuild, %s elsewhere", name, vm.Status, vm.Host, st, want)
		}
	}
	if pods := podsOn(t, c, c0); len(pods) != 0 {
		t.Errorf("pods still on the dead node: %v", pods)
	}
	// A recovery by hand keeps its ledger too: a move per VM, where it went. (The API server
	// is shared: other tests' recoveries are listed too.)
	r = c.drainctl(t, nil, "--auto", "recoveries", "-o", "json")
	var mine string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, `"type":"recovery","node":"`+c0+`"`) {
			mine = l
		}
	}
	if r.code != 0 || !strings.Contains(mine, `"automatic":false`) || strings.Count(mine, `"status":"succeeded"`) != 2 {
		t.Errorf("--auto recoveries: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sched, oos, journal := node(c0)
	h, _ := c.world.Host(c0)
	var j ops.Journal
	json.Unmarshal([]byte(journal), &j)
	if sched || !oos || !h.ForcedDown || h.Enabled || j.Op != "recover" || j.Phase != ops.PhaseDone || !strings.Contains(j.Fenced, "the fence command exited 0") || !strings.Contains(j.Fenced, "for the outage that began") {
		t.Errorf("after recover: schedulable %v, out-of-service %v, forced down %v, enabled %v, journal %+v", sched, oos, h.ForcedDown, h.Enabled, j)
	}

	// The way back. While the machine is still off, Nova refuses the force-up: uncordon waits
	// and says why.
	p = c.startProcess(t, "--auto", "uncordon", c0)
	p.waitFor(t, "Nova refuses to force nova-compute on "+c0+" up until it has restarted")
	c.world.ReviveHost(c0)
	kubetest.SetReady(t, cs, c0, true, time.Now())
	if code := p.wait(t); code != 0 {
		t.Fatalf("uncordon: exit %d\n%s", code, p.out())
	}
	t.Logf("uncordon:\n%s", p.out())
	sched, oos, journal = node(c0)
	h, _ = c.world.Host(c0)
	if !sched || oos || journal != "" || h.ForcedDown || !h.Up || !h.Enabled {
		t.Errorf("after uncordon: schedulable %v, out-of-service %v, journal %q, forced down %v, up %v, enabled %v\n%s",
			sched, oos, journal, h.ForcedDown, h.Up, h.Enabled, p.out())
	}
}

func podsOn(t *testing.T, c *autoCluster, node string) []string {
	list, err := kubetest.Client(t).CoreV1().Pods(c.ns).List(kubetest.Ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.Spec.NodeName == node {
			out = append(out, p.Name)
		}
	}
	return out
}

// A node that turns Ready during a recovery stops it (exit 4) before another VM is rebuilt:
// a machine that answers is not dead. The journal says why.
func TestRecoverStopsWhenTheNodeComesBack(t *testing.T) {
	c := newAutoClusterWith(t, autoOptions{seed: 12, spare: true, pdbMin: 1, scale: 1})
	cs := kubetest.Client(t)
	c0 := c.px + "-c0"
	c.world.KillHost(c0)
	kubetest.SetReady(t, cs, c0, false, time.Now().Add(-5*time.Minute))
	p := c.startProcess(t, "--auto", "recover", c0, "--confirm-fenced", "--accept-disk-loss")
	kubetest.Eventually(t, 60*time.Second, "the first VM being rebuilt", func() bool { return rebuilding(c, "db-1", "db-2") })
	kubetest.SetReady(t, cs, c0, true, time.Now())
	if code := p.wait(t); code != 4 || !strings.Contains(p.out(), "the node turned Ready") {
		t.Fatalf("exit %d, want 4 and why:\n%s", code, p.out())
	}
	rebuilt := 0
	for _, name := range []string{"db-1", "db-2"} {
		vm, _ := c.world.ServerByName(name)
		rebuilt += len(c.world.MigrationStatuses(vm.ID))
	}
	if rebuilt != 1 {
		t.Errorf("%d VMs rebuilt, want only the one under way when the node came back\n%s", rebuilt, p.out())
	}
	n, err := cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if journal := n.Annotations[ops.JournalAnnotation]; !strings.Contains(journal, `"phase":"interrupted"`) || !strings.Contains(journal, "turned Ready") {
		t.Errorf("journal: %s", journal)
	}
}

// rebuilding reports whether one of the VMs is being rebuilt (Nova's evacuate under way).
func rebuilding(c *autoCluster, vms ...string) bool {
	for _, name := range vms {
		if vm, _ := c.world.ServerByName(name); vm.Status == "REBUILD" {
			return true
		}
	}
	return false
}

// Two controller replicas, as a Deployment of two runs them: one leads and recovers a dead node
// by itself; killed (kill -9) while a VM is being rebuilt, the other takes its leases over and
// finishes the same recovery. Each VM is rebuilt once, and the ledger holds both.
func TestTwoControllersRecoverADeadNodeOnce(t *testing.T) {
	c := newAutoClusterWith(t, autoOptions{seed: 11, spare: true, pdbMin: 1, scale: 1}) // a rebuild takes 3 s
	cs := kubetest.Client(t)
	for _, err := range kubetest.Apply(t, false, "deploy/namespace.yaml", "deploy/crd-nodemaintenance.yaml") {
		t.Fatal(err)
	}
	c0 := c.px + "-c0"
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("[timeouts]\npoll = \"100ms\"\n[concurrency]\nmigrations_per_source = 1\n"+
		"[recover]\nautomatic = true\nshared_storage = true\nnot_ready_for = \"30s\"\npods_gone_within = \"1s\"\n"+
		"fence_cmd = \"echo {node} >> "+dir+"/fenced\"\n"), 0o600)
	addrA, addrB := kubetest.FreeAddr(t), kubetest.FreeAddr(t)
	a := c.startProcess(t, "--controller", "--config", cfg, "--metrics-addr", addrA)
	b := c.startProcess(t, "--controller", "--config", cfg, "--metrics-addr", addrB)
	a.waitFor(t, "automatic recovery on")
	b.waitFor(t, "automatic recovery on")
	// The metrics say which leads: one 1, the other 0 (DrainctlNoLeader reads them); never two.
	kubetest.Eventually(t, 30*time.Second, "one replica's drainctl_leader 1, the other's 0", func() bool {
		la, lb := leading(t, addrA), leading(t, addrB)
		if la+lb == "11" {
			t.Fatalf("both replicas say they lead")
		}
		return la+lb == "10" || la+lb == "01"
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica a:\n%s\nreplica b:\n%s", a.out(), b.out())
		}
	})
	c.world.KillHost(c0)
	kubetest.SetReady(t, cs, c0, false, time.Now().Add(-5*time.Minute))
	kubetest.Eventually(t, 60*time.Second, "a VM being rebuilt", func() bool { return rebuilding(c, "db-1", "db-2") })
	leader, other := a, b
	if !strings.Contains(a.out(), "automatic recovery: "+c0+" dead since") {
		leader, other = b, a
	}
	if !strings.Contains(leader.out(), "automatic recovery: "+c0+" dead since") {
		t.Fatalf("neither replica said it recovers %s:\n%s\n---\n%s", c0, a.out(), b.out())
	}
	otherAddr := addrB
	if leader == b {
		otherAddr = addrA
	}
	if got := leading(t, otherAddr); got != "0" {
		t.Errorf("drainctl_leader of the replica that does not recover: %q; want 0", got)
	}
	leader.cmd.Process.Kill() // kill -9: no safe point
	leader.wait(t)
	kubetest.Eventually(t, 60*time.Second, "the other replica's drainctl_leader 1", func() bool { return leading(t, otherAddr) == "1" })
	kubetest.Eventually(t, 90*time.Second, "the other replica finishing the recovery", func() bool {
		return strings.Contains(other.out(), "automatic recovery of "+c0+": recovery of "+c0+" done")
	})
	for _, name := range []string{"db-1", "db-2"} {
		vm, _ := c.world.ServerByName(name)
		if st := c.world.MigrationStatuses(vm.ID); len(st) != 1 || vm.Host == c0 {
			t.Errorf("%s on %s, evacuations %v: want one rebuild elsewhere", name, vm.Host, st)
		}
	}
	r := c.drainctl(t, nil, "--auto", "recoveries", "-o", "json")
	var mine string // the API server is shared: other tests' recoveries are listed too
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, `"node":"`+c0+`"`) {
			mine = l
		}
	}
	if r.code != 0 || strings.Count(mine, `"status":"succeeded"`) != 2 || !strings.Contains(mine, `"automatic":true`) ||
		!strings.Contains(mine, `"outcome":"done"`) {
		t.Errorf("--auto recoveries: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("the leader:\n%s\nthe other:\n%s", leader.out(), other.out())
}

// leading is the process's drainctl_leader of the controller's election, as a scrape reads it
// ("" when it cannot be read).
func leading(t *testing.T, addr string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^drainctl_leader\{election="[^"]+"\} (\S+)$`).FindStringSubmatch(scrapeMetrics(t, addr))
	if m == nil {
		return ""
	}
	return m[1]
}

// scrapeMetrics is what Prometheus reads of the process's /metrics, with a token the API
// server lets read it ("" when it does not answer 200).
func scrapeMetrics(t *testing.T, addr string) string {
	t.Helper()
	metricsTokens.Lock()
	token := metricsTokens.by[t.Name()]
	if token == "" {
		token = kubetest.MetricsToken(t, true)
		metricsTokens.by[t.Name()] = token
	}
	metricsTokens.Unlock()
	code, body := kubetest.Scrape(addr, "/metrics", token)
	if code != 200 {
		return ""
	}
	return body
}

// metricsTokens are each test's scraper's token, asked once.
var metricsTokens = struct {
	sync.Mutex
	by map[string]string
}{by: map[string]string{}}
