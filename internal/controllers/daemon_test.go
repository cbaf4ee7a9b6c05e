package controllers_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/internal/notify"
	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// cluster is the shared test world, with the controllers' own helpers.
type cluster struct {
	*simtest.Cluster
	hook *notify.Webhook // automatic recovery's webhook, when a test listens

	mu      sync.Mutex
	notices []model.Notice // what automatic recovery told the person on call
	paused  []time.Time    // since when automatic recovery said it is paused, pass by pass (zero: not)
	logs    []string       // what automatic recovery logged
	running int            // automatic recoveries running (startRecoverer, until stopped)
	// localDisks: the instances' disks are local (no [recover] shared_storage).
	localDisks bool
	resync     time.Duration // automatic recovery's resync (default 100 ms)
	leaseTTL   time.Duration // automatic recovery's node leases (default the engine's, 60 s)
}

// told are the kinds of the notices automatic recovery gave, in order.
func (c *cluster) told() []model.NoticeKind {
	c.mu.Lock()
	defer c.mu.Unlock()
	var kinds []model.NoticeKind
	for _, n := range c.notices {
		kinds = append(kinds, n.Kind)
	}
	return kinds
}

// notice is the last notice of the kind given.
func (c *cluster) notice(kind model.NoticeKind) (model.Notice, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.notices) - 1; i >= 0; i-- {
		if c.notices[i].Kind == kind {
			return c.notices[i], true
		}
	}
	return model.Notice{}, false
}

func newCluster(t *testing.T, scale float64) *cluster {
	c := &cluster{Cluster: simtest.NewCluster(t, scale)}
	// Automatic recovery counts an outage and the heartbeats on its own clock from its first
	// pass: a second keeps these tests quick (a test of the counts sets its own).
	c.Cfg.Recover.NotReadyFor, c.Cfg.Recover.HeartbeatTimeout = model.Duration(time.Second), model.Duration(time.Second)
	return c
}

func defaults() policy.Options { return simtest.Defaults() }

// startDaemon runs the daemon with its ServiceAccount's permissions only
// (deploy/daemon-rbac.yaml): what it does proves that RBAC is enough.
func (c *cluster) startDaemon(node string) (stop func()) {
	for _, err := range kubetest.Apply(c.T, false, "../../deploy/namespace.yaml", "../../deploy/leases-role.yaml", "../../deploy/daemon-rbac.yaml",
		"../../deploy/daemon-policy.yaml") {
		c.T.Fatal(err)
	}
	cfg := kube.Tune(kubetest.Config(c.T), kube.Options{QPS: 200, Burst: 400})
	// As the DaemonSet's pod on that node: its token names the node (daemon-policy.yaml).
	cfg.Impersonate.UserName = "system:serviceaccount:drainctl:drainctl-daemon"
	cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/node-name": {node}}
	kc := c.KubeClientFor(cfg)
	eng := ops.NewEngine(kc, c.Nova, c.Cfg, ops.EngineOptions{Holder: "daemon@" + node, Poll: 5 * time.Millisecond,
		StallAfter: 300 * time.Millisecond, Backoff: 20 * time.Millisecond})
	d := &controllers.Daemon{Engine: eng, Node: node, Run: ops.RunOptions{Policy: defaults()},
		Resync: 200 * time.Millisecond, Events: kc}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Serve(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func TestDaemonFollowsCordonAndUncordon(t *testing.T) {
	c := newCluster(t, 20)
	c0 := c.Name("c0")
	vmA, _ := c.World.ServerByName("vm-a")
	// vm-a converges slowly, so the daemon can be restarted while it migrates.
	c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0.9 * (1 << 30) })
	stop := c.startDaemon(c0)

	c.SetUnschedulable(c0, true) // as kubectl cordon does
	kubetest.Eventually(t, 20*time.Second, "vm-a migrating", func() bool {
		vm, _ := c.World.ServerByName("vm-a")
		return vm.TaskState == "migrating"
	})
	stop() // the daemon restarts mid-migration
	if j, _ := ops.ReadJournal(c.Node(c0)); j.Phase != ops.PhaseInterrupted {
		t.Errorf("journal after the stop: %+v", j)
	}
	c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0 })
	stop = c.startDaemon(c0)
	defer func() { stop() }()
	kubetest.Eventually(t, 30*time.Second, "both VMs off "+c0, func() bool {
		a, _ := c.World.ServerByName("vm-a")
		b, _ := c.World.ServerByName("vm-b")
		return a.Host != c0 && b.Host != c0 && a.Status == "ACTIVE" && b.Status == "ACTIVE"
	})
	for _, name := range []string{"vm-a", "vm-b"} {
		vm, _ := c.World.ServerByName(name)
		if n := len(c.World.MigrationStatuses(vm.ID)); n != 1 {
			t.Errorf("%s migrated %d times", name, n)
		}
	}
	h, _ := c.World.Host(c0)
	if h.Enabled || !strings.HasPrefix(h.DisabledReason, "drainctl: evacuate by daemon@") {
		t.Errorf("compute: %+v", h)
	}
	if pods := c.Kube.PodsOn(c0); len(pods) != 4 {
		t.Errorf("the daemon must leave the pods to whoever cordoned: %d left", len(pods))
	}
	// The restarted daemon reports what it moved: vm-b, and vm-a unless its migration (left
	// running in Nova by the stop) ended before the new daemon looked. Either way one Done
	// whose count matches its VMMigrated Events, and nova-compute disabled once.
	deadline := time.Now().Add(30 * time.Second)
	for {
		events, _ := c.CS.CoreV1().Events("default").List(kubetest.Ctx(t), metav1.ListOptions{})
		seen, moved, all := map[string]int{}, -1, []string(nil)
		for _, e := range events.Items {
			if e.InvolvedObject.Name != c0 {
				continue
			}
			all = append(all, fmt.Sprintf("%s x%d: %s", e.Reason, e.Count, e.Message))
			seen[e.Reason]++
			if e.Reason == "DrainctlDone" {
				fmt.Sscanf(e.Message, "evacuate: %d VM(s) migrated", &moved)
			}
		}
		if seen["DrainctlDone"] == 1 && moved >= 1 && seen["DrainctlDisableCompute"] == 1 && seen["DrainctlVMMigrated"] == moved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no DrainctlDone whose count matches its DrainctlVMMigrated Events, or not one DrainctlDisableCompute, after 30 s; the node's Events:\n%s", strings.Join(all, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}

	c.SetUnschedulable(c0, false) // kubectl uncordon
	kubetest.Eventually(t, 20*time.Second, "compute re-enabled", func() bool {
		h, _ := c.World.Host(c0)
		return h.Enabled
	})
	// The uncordon closes the journal: a node left at "done" would count as under
	// maintenance for the ranking and the proxy.
	kubetest.Eventually(t, 20*time.Second, "the journal closed", func() bool {
		_, journaled := ops.ReadJournal(c.Node(c0))
		return !journaled
	})
}

// concurrency.nodes bounds the daemon as it bounds a batch: three nodes cordoned at once are
// emptied one after the other, each waiting cordoned with its nova-compute already disabled
// and saying so; a second engine (another process's, as the TUI beside the daemon) takes
// its node's slot from the same leases on the API server.
func TestNodeCapHoldsForTheDaemonAndAnotherEngine(t *testing.T) {
	c := newCluster(t, 20)
	c.Cfg.Concurrency.Nodes = 1
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	c.World.AddServer("vm-c", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.AddServer("vm-d", c2, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.AddServer("vm-e", c2, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.AddHost(c.Name("spare"), 64, 262144, 2000) // where they go: every node is emptied
	kubetest.Node(t, c.CS, c.Name("spare"))

	var mu sync.Mutex
	queued := map[string]bool{}
	var bad []string
	var log []string
	watch := func(ev ops.Event) {
		mu.Lock()
		log = append(log, fmt.Sprintf("%T %+v", ev, ev))
		mu.Unlock()
		s, ok := ev.(ops.StepEvent)
		if !ok || s.State != ops.StepQueued {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		queued[s.Node] = true
		// Waiting, it is already fenced for Nova: nothing new is scheduled onto it.
		if h, _ := c.World.Host(s.Node); h.Enabled {
			bad = append(bad, s.Node+" queued with nova-compute enabled")
		}
		if !strings.Contains(s.Detail, "concurrency.nodes = 1") {
			bad = append(bad, "queued without saying why: "+s.Detail)
		}
	}
	eng := c.Engine("daemon@cluster", nil)
	d := &controllers.Daemon{Engine: eng, Node: "", Run: ops.RunOptions{Policy: defaults()}, Resync: 200 * time.Millisecond, Emit: watch}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Serve(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// The daemon gets c0 and c1 (kubectl cordon); another engine evacuates c2 at the same time.
	c.SetUnschedulable(c0, true)
	c.SetUnschedulable(c1, true)
	other := c.Engine("tui@elsewhere", nil)
	ro := ops.RunOptions{Policy: defaults()}
	plan, err := other.Plan(kubetest.Ctx(t), model.OpEvacuate, c2, ro)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Run(kubetest.Ctx(t), plan, ro, watch); err != nil {
		t.Fatalf("the other engine's evacuation: %v", err)
	}
	defer func() {
		if t.Failed() {
			mu.Lock()
			t.Log(strings.Join(log, "\n"))
			mu.Unlock()
			for _, name := range []string{"vm-a", "vm-b", "vm-c", "vm-d", "vm-e"} {
				vm, _ := c.World.ServerByName(name)
				t.Log(name, vm.Host, vm.Status)
			}
		}
	}()
	kubetest.Eventually(t, 60*time.Second, "every VM off the three nodes", func() bool {
		for _, name := range []string{"vm-a", "vm-b", "vm-c", "vm-d", "vm-e"} {
			if vm, _ := c.World.ServerByName(name); vm.Host != c.Name("spare") || vm.Status != "ACTIVE" {
				return false
			}
		}
		return true
	})
	if got := c.World.Stats().MaxConcurrentSources; got != 1 {
		t.Errorf("%d nodes were emptied at once under concurrency.nodes = 1", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queued) < 2 {
		t.Errorf("two of the three nodes must have waited for a slot, saying so: %v", queued)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// The daemon's uncordon is the Nova half of a return: the host proven by a canary before its
// service is enabled, and a VM stopped for restart-in-place started again, before the
// journal is closed.
func TestDaemonReturnsTheHostProvenAndRestartsInPlace(t *testing.T) {
	c := newCluster(t, 20)
	c1 := c.Name("c1")
	c.World.AddImage("img-canary")
	c.World.AddFlavor("c1.tiny", sim.Flavor{Name: "c1.tiny", RAMMB: 256, VCPUs: 1, DiskGB: 1})
	c.World.AddNetwork("net-canary")
	c.Cfg.Return = model.ReturnConfig{Canary: true, CanaryTimeout: model.Duration(20 * time.Second), Image: "img-canary", Flavor: "c1.tiny", Network: "net-canary"}
	c.World.AddServer("vm-r", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.SetMetadata("vm-r", model.VMPolicyKey, "restart-in-place")
	stop := c.startDaemon(c1)
	defer stop()

	c.SetUnschedulable(c1, true)
	kubetest.Eventually(t, 20*time.Second, "vm-r stopped in place, nova-compute disabled", func() bool {
		r, _ := c.World.ServerByName("vm-r")
		h, _ := c.World.Host(c1)
		return r.Status == "SHUTOFF" && r.Host == c1 && !h.Enabled
	})
	c.SetUnschedulable(c1, false)
	kubetest.Eventually(t, 30*time.Second, "vm-r running again, nova-compute enabled, the journal closed", func() bool {
		r, _ := c.World.ServerByName("vm-r")
		h, _ := c.World.Host(c1)
		_, journaled := ops.ReadJournal(c.Node(c1))
		return r.Status == "ACTIVE" && r.Host == c1 && h.Enabled && !journaled
	})
	booted := c.World.Booted()
	if len(booted) != 1 || booted[0].Host != c1 || booted[0].Status != "DELETED" {
		t.Errorf("want one canary booted on %s and deleted before the service was enabled, got %+v", c1, booted)
	}
}
