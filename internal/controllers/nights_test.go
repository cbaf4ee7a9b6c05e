package controllers_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// Simulated nights: a schedule of faults and actors drawn from a seed, played against the
// real code (automatic recovery as the controller's ServiceAccount, a person's evacuations,
// uncordons and aborts from an engine of their own, a colleague moving VMs by hand) on the
// real kube-apiserver and the simulator, with drainctl's promises checked against what the
// simulator and the API server show, never against what drainctl says: after every event,
// continuously for the caps, and once the night is over.
//
// A night prints its schedule when a promise breaks (and with -v); DRAINCTL_NIGHT_SEEDS=SEED[,SEED…]
// replays those seeds, DRAINCTL_NIGHTS=N plays N fresh ones.

// nightEvent is one event of a schedule.
type nightEvent struct {
	Kind string
	Node string // power-off, kubelet-dies, nova-compute-dies, storm (it and the next), comes-back, evacuate, uncordon, abort
	VM   string // hand-move
	N    int    // nova-500: the requests it fails; wait: milliseconds
}

func (e nightEvent) String() string {
	switch {
	case e.Node != "":
		return e.Kind + " " + e.Node
	case e.VM != "":
		return e.Kind + " " + e.VM
	}
	return e.Kind + " " + strconv.Itoa(e.N)
}

// nightKinds are the events a schedule draws from, each with its weight.
var nightKinds = []struct {
	kind   string
	weight int
}{
	{"power-off", 3}, {"kubelet-dies", 2}, {"nova-compute-dies", 1}, {"storm", 1}, {"comes-back", 4},
	{"evacuate", 3}, {"uncordon", 2}, {"abort", 1}, {"hand-move", 2}, {"nova-500", 1}, {"wait", 3},
}

// drawNight draws a schedule of n events over the nodes and VMs.
func drawNight(seed int64, n int, nodes, vms []string) []nightEvent {
	rng := rand.New(rand.NewSource(seed))
	total := 0
	for _, k := range nightKinds {
		total += k.weight
	}
	var out []nightEvent
	for range n {
		pick := rng.Intn(total)
		kind := ""
		for _, k := range nightKinds {
			if pick -= k.weight; pick < 0 {
				kind = k.kind
				break
			}
		}
		ev := nightEvent{Kind: kind}
		switch kind {
		case "hand-move":
			ev.VM = vms[rng.Intn(len(vms))]
		case "nova-500":
			ev.N = 1 + rng.Intn(5)
		case "wait":
			ev.N = 200 + rng.Intn(1500)
		default:
			ev.Node = nodes[rng.Intn(len(nodes))]
		}
		out = append(out, ev)
	}
	return out
}

// nightSeeds are the seeds to run: DRAINCTL_NIGHT_SEEDS's (a replay), DRAINCTL_NIGHTS fresh
// ones, or the fixed ones and one fresh.
func nightSeeds(t *testing.T) []int64 {
	fresh := func(k int) []int64 {
		var out []int64
		for i := range k {
			out = append(out, time.Now().UnixNano()%1_000_000+int64(i))
		}
		return out
	}
	if v := os.Getenv("DRAINCTL_NIGHT_SEEDS"); v != "" {
		var out []int64
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				t.Fatalf("DRAINCTL_NIGHT_SEEDS=%q: the seeds to replay, e.g. 17,4711", v)
			}
			out = append(out, n)
		}
		return out
	}
	if v := os.Getenv("DRAINCTL_NIGHTS"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			t.Fatalf("DRAINCTL_NIGHTS=%q: how many fresh nights, e.g. 20", v)
		}
		return fresh(k)
	}
	return append([]int64{3, 4, 5, 6}, fresh(1)...) // together they catch each planted fault (docs/testing.md)
}

func TestSimulatedNights(t *testing.T) {
	for _, seed := range nightSeeds(t) {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { playNight(t, seed, 24) })
	}
}

// machine is what the schedule did to a node's machine: its heartbeats now, and each change.
type machine struct {
	kubelet, nova bool   // alive
	beats         func() // stops its kubelet's heartbeat
	changes       []heartbeats
}

// heartbeats are a machine's heartbeats from a moment on.
type heartbeats struct {
	at            time.Time
	kubelet, nova bool
}

// at is the machine's heartbeats at t, and the index of that change.
func (m *machine) at(t time.Time) (heartbeats, int) {
	i := len(m.changes) - 1
	for i > 0 && m.changes[i].at.After(t) {
		i--
	}
	return m.changes[i], i
}

// night is one night's world, its actors and its witness.
type night struct {
	*cluster
	seed     int64
	schedule []nightEvent
	nodes    []string
	marks    string // the fence command's marks: one line per fence, "NODE UNIXNANO"

	mu       sync.Mutex
	machines map[string]*machine
	history  []string        // the schedule as played, with what each event did
	handMove map[int64]bool  // the colleague's migration records
	broken   []string        // the promises broken, with when
	seen     map[string]int  // how often each broken promise was seen
	checks   int             // the promises checked
	fences   int             // the fences the command made
	busiest  int             // the most moves under way at once (a dead host's rebuilds too)
	injected map[string]bool // the servers the schedule broke (none yet)
}

func playNight(t *testing.T, seed int64, events int) {
	c := newCluster(t, 100)
	n := &night{cluster: c, seed: seed, machines: map[string]*machine{}, handMove: map[int64]bool{}, injected: map[string]bool{}, seen: map[string]int{},
		marks: filepath.Join(t.TempDir(), "fenced")}
	for _, s := range []string{"c3", "c4"} {
		kubetest.Node(t, c.CS, c.Name(s))
		c.World.AddHost(c.Name(s), 64, 262144, 2000)
	}
	// Two VMs a host (c0 has vm-a and vm-b), one of them large: an evacuation has moves to
	// keep under the caps, long enough for the witness to see them.
	small := sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20}
	large := sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80}
	vms := []string{"vm-a", "vm-b"}
	for i, s := range []string{"c1", "c1", "c2", "c2", "c3", "c3", "c4", "c4"} {
		name, f := fmt.Sprintf("vm-%c", 'c'+i), small
		if i%2 == 0 {
			f = large
		}
		c.World.AddServer(name, c.Name(s), f)
		vms = append(vms, name)
	}
	for _, s := range []string{"c0", "c1", "c2", "c3", "c4"} {
		node := c.Name(s)
		n.nodes = append(n.nodes, node)
		n.machines[node] = &machine{kubelet: true, nova: true, beats: c.kubeletBeats(node),
			changes: []heartbeats{{at: time.Now(), kubelet: true, nova: true}}}
	}
	t.Cleanup(func() { n.forget() })
	n.schedule = drawNight(seed, events, n.nodes, vms)
	c.Cfg.Recover.StormCooldown = model.Duration(3 * time.Second) // a night is seconds long
	before := len(c.World.Servers())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); n.watchCaps(ctx) }()
	stop := c.startRecoverer(fenceMarker(t, n.marks))
	person := c.Engine("alice@night", nil)
	var persons sync.WaitGroup
	for i, ev := range n.schedule {
		n.play(ctx, person, &persons, ev)
		n.checkServers(fmt.Sprintf("after event %d (%s)", i+1, ev), before)
		n.checkFences(fmt.Sprintf("after event %d (%s)", i+1, ev))
		time.Sleep(100 * time.Millisecond)
	}
	// The night ends: the person's operations end (or are bounded), the controller goes on
	// until they have, then stops at a safe point.
	waitBounded(&persons, 40*time.Second)
	time.Sleep(2 * time.Second)
	stop()
	cancel()
	wg.Wait()
	n.checkServers("at the end", before)
	n.checkFences("at the end")
	n.checkRecords()
	n.mu.Lock()
	defer n.mu.Unlock()
	t.Logf("seed %d: %d events, %d checks of the promises, %d fence(s), at most %d move(s) at once", seed, len(n.schedule),
		n.checks, n.fences, n.busiest)
	if testing.Verbose() {
		t.Logf("seed %d as played:\n  %s", seed, strings.Join(n.history, "\n  "))
	}
	if len(n.broken) > 0 {
		t.Errorf("seed %d broke %d promise(s):\n  %s\nthe night as played:\n  %s\nreplay: DRAINCTL_NIGHT_SEEDS=%d go test ./internal/controllers -run TestSimulatedNights",
			seed, len(n.broken), strings.Join(n.broken, "\n  "), strings.Join(n.history, "\n  "), seed)
	}
}

// fenceMarker is a fence command that appends the node and the moment to the marks file.
func fenceMarker(t *testing.T, marks string) string {
	script := filepath.Join(filepath.Dir(marks), "fence.sh")
	body := "#!/bin/sh\necho \"$1 $(date +%s%N)\" >> " + marks + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script + " {node}"
}

// play plays one event; a person's operation runs in the background, as a person's would.
func (n *night) play(ctx context.Context, person *ops.Engine, persons *sync.WaitGroup, ev nightEvent) {
	c := n.cluster
	said := ""
	n.say(ev.String())
	n.mu.Lock()
	m := n.machines[ev.Node]
	down := 0
	for _, mm := range n.machines {
		if !mm.kubelet || !mm.nova {
			down++
		}
	}
	n.mu.Unlock()
	switch ev.Kind {
	case "storm": // two machines at once: automatic recovery holds
		next := n.nodes[(slices.Index(n.nodes, ev.Node)+1)%len(n.nodes)]
		n.play(ctx, person, persons, nightEvent{Kind: "power-off", Node: ev.Node, N: 1})
		n.play(ctx, person, persons, nightEvent{Kind: "power-off", Node: next, N: 1})
	case "power-off", "kubelet-dies", "nova-compute-dies": // N 1: in a storm
		switch {
		case !m.kubelet && !m.nova:
			said = "already off"
		case down > 0 && m.kubelet && m.nova && ev.N == 0: // one machine at a time but in a storm
			said = "another machine is down: not this one (storms are their own event)"
		}
		if said != "" {
			break
		}
		if ev.Kind != "nova-compute-dies" && m.kubelet {
			m.beats()
			kubetest.SetReady(c.T, c.CS, ev.Node, false, time.Now())
			n.set(ev.Node, func(m *machine) { m.kubelet = false })
		}
		if ev.Kind != "kubelet-dies" && m.nova {
			c.World.KillHost(ev.Node)
			n.set(ev.Node, func(m *machine) { m.nova = false })
		}
		if ev.N == 0 { // a death is the night's main event: the controller has time to judge it
			time.Sleep(2500 * time.Millisecond)
		}
	case "comes-back":
		if m.kubelet && m.nova { // another that is down, if any: machines come back
			n.mu.Lock()
			for _, node := range n.nodes {
				if mm := n.machines[node]; !mm.kubelet || !mm.nova {
					ev.Node, m = node, mm
					break
				}
			}
			n.mu.Unlock()
			if m.kubelet && m.nova {
				said = "none is down"
				break
			}
			said = "up already; " + ev.Node + " comes back instead"
		}
		c.World.ReviveHost(ev.Node)
		if !m.kubelet {
			kubetest.SetReady(c.T, c.CS, ev.Node, true, time.Now())
		}
		n.set(ev.Node, func(m *machine) {
			if !m.kubelet {
				m.beats = c.kubeletBeats(ev.Node)
			}
			m.kubelet, m.nova = true, true
		})
	case "evacuate", "uncordon", "abort":
		op := map[string]model.OpKind{"evacuate": model.OpEvacuate, "uncordon": model.OpUncordon, "abort": model.OpAbort}[ev.Kind]
		ro := ops.RunOptions{Policy: defaults()}
		ro.Policy.Force = true // the bare pod: a person who knows
		plan, err := person.Plan(ctx, op, ev.Node, ro)
		if err != nil {
			said = "refused: " + firstLineOf(err.Error())
			break
		}
		if blockers := plan.Blockers(); len(blockers) > 0 {
			said = "refused: " + blockers[0].Message
			break
		}
		persons.Add(1)
		go func() {
			defer persons.Done()
			opCtx, cancel := context.WithTimeout(ctx, 30*time.Second) // a person who gives up: it records where
			defer cancel()
			rep, err := person.Run(opCtx, plan, ro, func(ops.Event) {})
			n.say(fmt.Sprintf("  … %s %s ended: %s %v", ev.Kind, ev.Node, rep.Result, err))
		}()
	case "hand-move":
		vm, _ := c.World.ServerByName(ev.VM)
		n.mu.Lock()
		hm := n.machines[vm.Host]
		movable := vm.Status == "ACTIVE" && vm.TaskState == "" && hm != nil && hm.nova
		n.mu.Unlock()
		if !movable {
			said = "not movable now"
			break
		}
		if err := c.Nova.LiveMigrate(ctx, vm.ID, ""); err != nil {
			said = "refused: " + firstLineOf(err.Error())
			break
		}
		if ids := c.World.MigrationIDs(vm.ID); len(ids) > 0 {
			n.mu.Lock()
			n.handMove[ids[len(ids)-1]] = true
			n.mu.Unlock()
		}
	case "nova-500":
		c.World.InjectFault(sim.Fault{Status: 500, Message: "the night's fault", Times: ev.N,
			Path: regexp.MustCompile(`^/(servers|os-)`)})
	case "wait":
		time.Sleep(time.Duration(ev.N) * time.Millisecond)
	}
	if said != "" {
		n.say("  → " + said)
	}
}

func (n *night) set(node string, f func(*machine)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := n.machines[node]
	f(m)
	m.changes = append(m.changes, heartbeats{at: time.Now(), kubelet: m.kubelet, nova: m.nova})
	n.history = append(n.history, fmt.Sprintf("  %s: kubelet %v, nova-compute %v", node, m.kubelet, m.nova))
}

func (n *night) say(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.history = append(n.history, time.Now().Format("15:04:05.000")+" "+s)
}

// breaks records a broken promise; one seen again under the same key is counted, not repeated
// (a cap broken for a second is sampled a hundred times).
func (n *night) breaks(key, promise string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen[key] > 0 {
		n.seen[key]++
		return
	}
	n.seen[key] = 1
	n.broken = append(n.broken, promise)
}

// forget deletes the night's nodes and records: the API server is shared with other tests.
func (n *night) forget() {
	ctx := context.Background()
	for _, node := range n.nodes {
		_ = n.CS.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
		for _, name := range []string{ops.RecoveryRecord(node), "fence-" + node} {
			_ = n.CS.CoreV1().ConfigMaps(kube.LeaseNamespace).Delete(ctx, kube.RecordName(name), metav1.DeleteOptions{})
		}
	}
}

func waitBounded(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
