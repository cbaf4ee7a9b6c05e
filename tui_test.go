package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// tmux drives the real binary in a terminal: keys in, screens out.
type tmux struct {
	t       *testing.T
	session string
}

func startTmux(t *testing.T, width, height int, command string) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (.ci/run installs it)")
		}
		t.Skip("tmux not installed")
	}
	tm := &tmux{t: t, session: "drainctl-test-" + strings.ToLower(t.Name())}
	exec.Command("tmux", "kill-session", "-t", tm.session).Run()
	cmd := exec.Command("tmux", "new-session", "-d", "-s", tm.session, "-x", itoa(width), "-y", itoa(height), command)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "kill-session", "-t", tm.session).Run() })
	return tm
}

func itoa(n int) string { return strconv.Itoa(n) }

func (tm *tmux) keys(keys ...string) {
	args := append([]string{"send-keys", "-t", tm.session}, keys...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		tm.t.Fatalf("send-keys %v: %v\n%s", keys, err, out)
	}
}

func (tm *tmux) screen() string {
	out, _ := exec.Command("tmux", "capture-pane", "-p", "-t", tm.session).Output()
	return string(out)
}

// waitFor polls the screen until it shows every want.
func (tm *tmux) waitFor(timeout time.Duration, want ...string) string {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := tm.screen()
		ok := true
		for _, w := range want {
			if !strings.Contains(s, w) {
				ok = false
			}
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("after %v the screen lacks %q:\n%s", timeout, want, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (tm *tmux) alive() bool {
	return exec.Command("tmux", "has-session", "-t", tm.session).Run() == nil
}

// TestTUIEvacuateAndUncordon: select a node, evacuate it (the plan is refused until --force
// is toggled), watch the VM progress, see it finish, uncordon it, quit.
func TestTUIEvacuateAndUncordon(t *testing.T) {
	bin := binary(t)
	home := t.TempDir()
	tm := startTmux(t, 120, 40, "HOME="+home+" "+bin+" --demo --demo-scale 20")
	tm.waitFor(20*time.Second, "compute-0", "compute-5", "disabled/up", "hardware ticket #4411", "cp-0")

	tm.keys("j") // compute-1: it runs the slowly converging VM
	tm.keys("e")
	s := tm.waitFor(10*time.Second, "Evacuate compute-1:", "blocks", "shop/cache-0", "--delete-emptydir-data", "Refused until")
	if !strings.Contains(s, "migrate-vms") {
		t.Errorf("the plan lacks its steps:\n%s", s)
	}
	tm.keys("y") // refused while blocked: judged again, and still refused, naming what is left
	tm.waitFor(5*time.Second, "judged again: still refused by 2 blocker(s)")
	tm.keys("D") // --delete-emptydir-data; cache-0 is also a bare pod, which the plan now shows
	tm.waitFor(10*time.Second, "overrides: --delete-emptydir-data", "shop/cache-0: no controller", "--force")
	tm.keys("F")
	tm.waitFor(10*time.Second, "overrides: --force --delete-emptydir-data", "y run it")
	tm.keys("y")
	tm.waitFor(20*time.Second, "evacuate compute-1", "running", "% ", "eta")
	s = tm.waitFor(90*time.Second, "evacuate compute-1  done", "pods: ")
	if strings.Contains(s, "failed") {
		t.Errorf("evacuation screen shows a failure:\n%s", s)
	}
	tm.keys("Escape")
	tm.waitForRow(15*time.Second, "compute-1", ",SD", "disabled/up", " 0 ")
	tm.keys("u")
	tm.waitFor(10*time.Second, "Uncordon compute-1?")
	tm.keys("y")
	tm.waitFor(20*time.Second, "uncordon compute-1  (2 of 2 operations, space for the next)  done") // the evacuation stays listed
	tm.keys("Escape")
	tm.waitForRow(15*time.Second, "compute-1", "Ready ", "enabled/up")
	tm.keys("q")
	deadline := time.Now().Add(5 * time.Second)
	for tm.alive() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if tm.alive() {
		t.Errorf("q did not quit:\n%s", tm.screen())
	}
}

// waitForRow polls until the node's row shows every want.
func (tm *tmux) waitForRow(timeout time.Duration, node string, want ...string) {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		row := line(tm.screen(), node)
		ok := row != ""
		for _, w := range want {
			ok = ok && strings.Contains(row, w)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("after %v the row of %s is %q, want %q", timeout, node, row, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func line(screen, prefix string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " ●▸!"), prefix+" ") {
			return l
		}
	}
	return ""
}

// TestTUINodeMaintenance: on the demo (which runs the controller, as a cluster would), n
// creates a NodeMaintenance after showing what the controller will do; the row follows its
// status to "in maintenance"; N deletes it and the node comes back.
func TestTUINodeMaintenance(t *testing.T) {
	bin := binary(t)
	tm := startTmux(t, 140, 40, "HOME="+t.TempDir()+" "+bin+" --demo --demo-scale 20")
	tm.waitFor(20*time.Second, "compute-3", "cp-0")
	tm.keys("j", "j", "j") // compute-3: nothing on it blocks
	tm.keys("n")
	tm.waitFor(10*time.Second, "Create a NodeMaintenance for compute-3? The controller will:", "migrate-vms", "y run it")
	tm.keys("y")
	tm.waitFor(5*time.Second, "NodeMaintenance compute-3 created")
	tm.waitForRow(60*time.Second, "compute-3", ",SD", "disabled/up", "NM in maintenance")
	tm.keys("Enter")
	tm.waitFor(10*time.Second, "NodeMaintenance compute-3: in maintenance", "VMs 4/4 migrated")
	tm.keys("N")
	tm.waitFor(10*time.Second, "Delete NodeMaintenance compute-3? The controller will put compute-3 back:", "enable-compute")
	tm.keys("y")
	tm.keys("Escape")
	tm.waitForRow(30*time.Second, "compute-3", "Ready ", "enabled/up")
	if row := line(tm.screen(), "compute-3"); strings.Contains(row, "NM ") {
		t.Errorf("the row still shows a NodeMaintenance: %q", row)
	}
}

// TestTUIConsole drives k9s habits on a real API server and the simulated Nova: > sorts by
// VMs, d describes the node, :ctx switches the kube context (the header follows), and f
// force-completes a migration that would not converge, after asking.
func TestTUIConsole(t *testing.T) {
	c := newAutoCluster(t)
	c0 := c.px + "-c0"
	kubeconfig := twoContexts(t, c.kubeconfig)
	c.slow("db-1") // never converges by itself: only force-complete ends it
	var env []string
	for _, kv := range c.env {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, strconv.Quote(kv))
		}
	}
	tm := startTmux(t, 160, 45, "env "+strings.Join(env, " ")+" KUBECONFIG="+kubeconfig+" "+binary(t)+" --max-parallel 1")
	tm.waitFor(20*time.Second, "ctx alpha", "NAME")
	tm.keys("/", c.px, "Enter") // the API server holds other tests' nodes too
	tm.waitFor(10*time.Second, c0)

	tm.keys(">") // by VMs, the most first: c0 holds db-1 and db-2
	s := tm.waitFor(5*time.Second, "sorted by vms")
	if first := firstRow(s); !strings.HasPrefix(strings.TrimLeft(first, " ▸●!"), c0+" ") {
		t.Errorf("sorted by VMs, the first row is %q:\n%s", first, s)
	}
	tm.keys("d")
	tm.waitFor(5*time.Second, "describe node "+c0, "nova-compute on "+c0, "db-1")
	tm.keys("Escape")
	// The node list back before the next key: an escape followed at once by ':' reads as alt+:.
	tm.waitFor(5*time.Second, "NAME")

	tm.keys(":")
	tm.keys("ctx beta", "Enter")
	tm.waitFor(20*time.Second, "now on context beta", "ctx beta", "NAME")
	tm.keys("/", c.px, "Enter")
	tm.waitFor(10*time.Second, c0, "sorted by vms") // the sort stays across the switch
	tm.keys("e")                                    // on c0, first by VMs
	tm.waitFor(10*time.Second, "Evacuate "+c0+":", "y run it")
	tm.keys("y")
	tm.waitFor(30*time.Second, "evacuate "+c0, "db-1", "running", " left ") // copying: f acts on it
	tm.keys("f")
	tm.waitFor(5*time.Second, "Force-complete the live migration of db-1", "yes, do it")
	tm.keys("y")
	tm.waitFor(10*time.Second, "force-complete of db-1 accepted")
	tm.waitFor(60*time.Second, "evacuate "+c0+"  done")
	tm.keys("q")
}

// twoContexts writes a kubeconfig with two contexts, alpha (current) and beta, both on the
// test's API server.
func twoContexts(t *testing.T, path string) string {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	cfg.Contexts = map[string]*clientcmdapi.Context{"alpha": cur, "beta": cur.DeepCopy()}
	cfg.CurrentContext = "alpha"
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// firstRow is the first node row of the node list.
func firstRow(screen string) string {
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		if strings.Contains(l, "NAME") && strings.Contains(l, "K8S") && i+1 < len(lines) {
			return lines[i+1]
		}
	}
	return ""
}

// TestTUIDemoRecoversByItself: the demo runs automatic recovery as a controller would. A node
// killed is fenced and recovered by itself after not_ready_for, said on the status line, its
// ledger in :recoveries (the VM on a volume rebuilt, the others left with their reason). Two
// more killed while it is still dead: three of eight unhealthy, a storm, held and said, and
// nothing of theirs is touched.
func TestTUIDemoRecoversByItself(t *testing.T) {
	bin := binary(t)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[recover]\nnot_ready_for = \"30s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTmux(t, 160, 45, "HOME="+t.TempDir()+" "+bin+" --demo --demo-scale 20 --config "+cfg)
	tm.waitFor(20*time.Second, "compute-0", "cp-0")
	tm.keys(":", "kill compute-0", "Enter")
	tm.waitFor(5*time.Second, "compute-0 dead", "recovered by itself after not_ready_for and heartbeat_timeout")
	// Dead once NotReady for 30 s and nova-compute's report has stood still for 40 s (the
	// default heartbeat_timeout), both on drainctl's own clock.
	tm.waitFor(70*time.Second, "automatic recovery: compute-0 dead since", "1 VM(s) rebuilt elsewhere, 3 left")
	tm.waitFor(60*time.Second, "recovery of compute-0 done: 1 VM(s) rebuilt, 0 failed, 3 left")
	tm.keys(":", "recoveries", "Enter")
	s := tm.waitFor(10*time.Second, "Recoveries (the records on the cluster", "automatic")
	if row := line(s, "vm-0001"); !strings.Contains(row, "succeeded") || !strings.Contains(row, "now ACTIVE on") {
		t.Errorf("the VM on a volume in the ledger: %q\n%s", row, s)
	}
	if row := line(s, "vm-0000"); !strings.Contains(row, "left") || !strings.Contains(row, "stays on the dead host: a rebuild would lose") {
		t.Errorf("a VM with a local disk in the ledger: %q\n%s", row, s)
	}
	tm.keys("Escape")
	tm.waitFor(5*time.Second, "NAME") // the node list back: an escape followed at once by ':' reads as alt+:
	tm.keys(":", "kill compute-1", "Enter")
	tm.keys(":", "kill compute-2", "Enter")
	tm.waitFor(20*time.Second, "storm guard: no automatic recovery, nothing fenced: 2 of 8 compute nodes unhealthy (compute-1, compute-2)")
	// Said under the header until it ends, from the storm's record on the cluster.
	tm.waitFor(20*time.Second, "automatic recovery held: storm: ")
	time.Sleep(3 * time.Second) // passes go on meanwhile
	s = tm.screen()
	for _, node := range []string{"compute-1", "compute-2"} {
		// Touched, it would be cordoned (,SD) and its service disabled and forced down.
		if row := line(s, node); !strings.Contains(row, "NotReady ") || strings.Contains(row, "disabled") || strings.Contains(row, "forced-down") {
			t.Errorf("%s was touched in a storm: %q", node, row)
		}
	}
}
