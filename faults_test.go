package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// The fault matrix: more than one actor on one node, each drainctl a process of its own
// (the binary) on one API server and one Nova. For each: no VM migrated twice, no step
// done by two holders, the node in a recorded state, and a rerun finishes or rolls back.
// (An API outage longer than the lease TTL, and a VM moved by hand mid-evacuation, are in
// ops/actors_test.go: they need the engine's transport and Nova's clock in hand.)
func TestFaultMatrix(t *testing.T) {
	t.Run("two evacuations of one node", func(t *testing.T) {
		c := newAutoCluster(t)
		c0 := c.px + "-c0"
		converge := c.slow("db-1")
		a := c.startProcess(t, "--auto", "evacuate", c0)
		a.waitFor(t, "vm db-1 running")
		r := c.drainctl(t, nil, "--auto", "evacuate", c0)
		if r.code != 3 || !strings.Contains(r.stderr, "is held by drainctl/") || !strings.Contains(r.stderr, " since ") {
			t.Fatalf("the second evacuation: exit %d\n%s", r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "cordon done") || strings.Contains(r.stderr, "vm db-2 requested") {
			t.Errorf("the second process did a step:\n%s", r.stderr)
		}
		converge()
		if code := a.wait(t); code != 0 {
			t.Fatalf("the first evacuation: exit %d\n%s", code, a.out())
		}
		c.migratedOnceOff(t, c0, "db-1", "db-2")
		if j := c.journal(t, c0); j.Phase != ops.PhaseDone {
			t.Errorf("journal %+v", j)
		}
	})

	t.Run("abort from a second process, then a rerun", func(t *testing.T) {
		c := newAutoCluster(t)
		c0 := c.px + "-c0"
		converge := c.slow("db-1")
		a := c.startProcess(t, "--auto", "evacuate", c0)
		a.waitFor(t, "vm db-1 running")
		if r := c.drainctl(t, nil, "--auto", "abort", c0); r.code != 0 {
			t.Fatalf("abort: exit %d\n%s", r.code, r.stderr)
		}
		if code := a.wait(t); code != 4 || !strings.Contains(a.out(), "abort requested by drainctl/") {
			t.Fatalf("the evacuation after the abort: exit %d\n%s", code, a.out())
		}
		if j := c.journal(t, c0); j.Phase != ops.PhaseAborted {
			t.Errorf("journal %+v", j)
		}
		db2, _ := c.world.ServerByName("db-2")
		if n := len(c.world.MigrationStatuses(db2.ID)); n != 0 {
			t.Errorf("db-2 was migrated %d times after the abort", n)
		}
		converge()
		if r := c.drainctl(t, nil, "--auto", "evacuate", c0); r.code != 0 {
			t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
		}
		db2, _ = c.world.ServerByName("db-2")
		if n := len(c.world.MigrationStatuses(db2.ID)); n != 1 || db2.Host == c0 {
			t.Errorf("db-2: %d migrations, on %s", n, db2.Host)
		}
	})

	t.Run("rollback from a second process", func(t *testing.T) {
		c := newAutoCluster(t)
		c0 := c.px + "-c0"
		c.slow("db-1")
		a := c.startProcess(t, "--auto", "evacuate", c0)
		a.waitFor(t, "vm db-1 running")
		if r := c.drainctl(t, nil, "--auto", "rollback", c0); r.code != 0 {
			t.Fatalf("rollback: exit %d\n%s", r.code, r.stderr)
		}
		if code := a.wait(t); code != 4 || !strings.Contains(a.out(), "rollback requested by drainctl/") {
			t.Fatalf("the evacuation after the rollback: exit %d\n%s", code, a.out())
		}
		n, _ := kubetest.Client(t).CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
		h, _ := c.world.Host(c0)
		if n.Spec.Unschedulable || len(n.Spec.Taints) != 0 || !h.Enabled || n.Annotations[ops.JournalAnnotation] != "" {
			t.Errorf("after the rollback: node %+v %v, compute %+v", n.Spec, n.Annotations, h)
		}
		for _, name := range []string{"db-1", "db-2"} {
			vm, _ := c.world.ServerByName(name)
			if vm.Host != c0 || vm.TaskState != "" {
				t.Errorf("%s on %s (%s): the rollback left it moved or moving", name, vm.Host, vm.TaskState)
			}
		}
	})

	t.Run("three processes under migrations_per_cluster = 1", func(t *testing.T) {
		c := newAutoCluster(t)
		cfg := filepath.Join(t.TempDir(), "config.toml")
		os.WriteFile(cfg, []byte("[timeouts]\npoll = \"100ms\"\n[concurrency]\nmigrations_per_cluster = 1\n"), 0o600)
		c1, c2 := c.px+"-c1", c.px+"-c2"
		c.world.AddServer("db-3", c2, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
		c.world.AddHost(c.px+"-spare", 64, 262144, 2000) // room for all: every worker is emptied
		kubetest.Node(t, kubetest.Client(t), c.px+"-c3") // a worker that stays
		var wg sync.WaitGroup
		procs := make([]*process, 3)
		for i, node := range []string{c.px + "-c0", c1, c2} {
			// The pods are not what is tested here: deleted, not evicted under their budget.
			procs[i] = c.startProcess(t, "--auto", "evacuate", node, "--force", "--disable-eviction", "--config", cfg)
		}
		for _, p := range procs {
			wg.Add(1)
			go func() { defer wg.Done(); p.wait(t) }()
		}
		wg.Wait()
		for i, p := range procs {
			if p.code != 0 {
				t.Errorf("process %d: exit %d\n%s", i, p.code, p.out())
			}
		}
		if got := c.world.Stats().MaxConcurrentMigrations; got != 1 {
			t.Errorf("%d live migrations ran at once under migrations_per_cluster = 1", got)
		}
		for _, name := range []string{"db-1", "db-2", "app-1", "db-3"} {
			vm, _ := c.world.ServerByName(name)
			if n := len(c.world.MigrationStatuses(vm.ID)); n != 1 {
				t.Errorf("%s migrated %d times", name, n)
			}
		}
	})
}

// slow makes the VM converge slowly until the returned func is called.
func (c *autoCluster) slow(name string) (converge func()) {
	vm, _ := c.world.ServerByName(name)
	c.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vm.ID].DirtyBytesPerSec = 2 << 30 })
	return func() {
		c.world.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vm.ID].DirtyBytesPerSec = 0 })
	}
}

func (c *autoCluster) journal(t *testing.T, node string) ops.Journal {
	n, err := kubetest.Client(t).CoreV1().Nodes().Get(kubetest.Ctx(t), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := ops.ReadJournal(model.KubeNode{Name: n.Name, Annotations: n.Annotations})
	return j
}

func (c *autoCluster) migratedOnceOff(t *testing.T, node string, names ...string) {
	for _, name := range names {
		vm, _ := c.world.ServerByName(name)
		if n := len(c.world.MigrationStatuses(vm.ID)); n != 1 || vm.Host == node {
			t.Errorf("%s: %d migrations, on %s", name, n, vm.Host)
		}
	}
}

// process is a drainctl running in the background, its stderr collected.
type process struct {
	cmd    *exec.Cmd
	stdout strings.Builder // read once the process has ended
	mu     sync.Mutex
	buf    strings.Builder
	line   chan string
	done   chan struct{}
	code   int
}

func (c *autoCluster) startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	return c.startProcessEnv(t, nil, args...)
}

// startProcessEnv is startProcess with more of the environment (a webhook's token).
func (c *autoCluster) startProcessEnv(t *testing.T, extraEnv []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary(t), args...), line: make(chan string, 1024), done: make(chan struct{})}
	p.cmd.Env = append(append([]string{}, c.env...), extraEnv...)
	p.cmd.Stdout = &p.stdout
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.buf.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.line <- sc.Text():
			default:
			}
		}
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	return p
}

// stdoutText is what the process printed on stdout (call after wait).
func (p *process) stdoutText() string { return p.stdout.String() }

func (p *process) out() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// waitFor returns once the process has printed a line containing s.
func (p *process) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l := <-p.line:
			if strings.Contains(l, s) {
				return
			}
		case <-p.done:
			t.Fatalf("the process ended before printing %q:\n%s", s, p.out())
		case <-deadline:
			t.Fatalf("no %q after 60 s:\n%s", s, p.out())
		}
	}
}

// wait returns the process's exit code (bounded).
func (p *process) wait(t *testing.T) int {
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		t.Errorf("the process did not end in 90 s:\n%s", p.out())
	}
	return p.code
}
