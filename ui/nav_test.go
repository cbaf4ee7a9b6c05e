package ui

import (
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

// lines counts the non-blank lines of a view: a screen of a footer alone is a frozen screen.
func lines(view string) int {
	n := 0
	for _, l := range strings.Split(view, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// The target picker's way back: :vms, enter, m, t, esc, esc left a blank screen where esc,
// q, : and ? did nothing (the picker had made the confirmation its own way back).
func TestThePickersWayBack(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.keys(":", "v", "m", "s", "enter")
	if !on[*listPane](&l.m) || paneIn[*listPane](&l.m).kind != vmList {
		t.Fatalf(":vms: screen %v", screenOf(l.m))
	}
	l.keys("m")
	if !on[*confirmPane](&l.m) {
		t.Fatalf("m: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	l.keys("t")
	if !on[*listPane](&l.m) {
		t.Fatalf("t: screen %v", screenOf(l.m))
	}
	if v := l.m.View(); !strings.Contains(v, "enter pick") || strings.Contains(v, "enter details") {
		t.Errorf("the picker's footer does not say enter picks:\n%s", v)
	}
	l.keys("esc")
	if !on[*confirmPane](&l.m) || paneIn[*confirmPane](&l.m).pending == nil {
		t.Fatalf("esc from the picker: screen %v", screenOf(l.m))
	}
	l.keys("esc")
	if !on[*listPane](&l.m) || paneIn[*listPane](&l.m).kind != vmList || lines(l.m.View()) < 4 {
		t.Fatalf("esc from the confirmation: screen %v\n%s", screenOf(l.m), l.m.View())
	}
	// enter on a VM opens its node with the cursor on that VM: m there migrates it.
	l.keys("j")
	row, _ := paneIn[*listPane](&l.m).current()
	l.keys("enter")
	n, _ := l.m.s.inv.Node(paneIn[*detailPane](&l.m).node)
	if !on[*detailPane](&l.m) || paneIn[*detailPane](&l.m).cursor >= len(n.VMs) || n.VMs[paneIn[*detailPane](&l.m).cursor].ID != row.key {
		t.Errorf("enter on VM %s: the detail's cursor is on row %d of %s", row.key, paneIn[*detailPane](&l.m).cursor, n.Name)
	}
}

// A destructive plan starts on y alone: enter on a confirmation does nothing.
func TestEnterDoesNotConfirm(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.cursorTo(c.Name("c0"))
	l.keys("c")
	if !on[*confirmPane](&l.m) {
		t.Fatalf("c: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	l.keys("enter")
	if !on[*confirmPane](&l.m) || len(l.m.s.ops.order) != 0 {
		t.Fatalf("enter ran the plan: screen %v, operations %v", screenOf(l.m), l.m.s.ops.order)
	}
	if k := c.Node(c.Name("c0")); !k.Schedulable {
		t.Fatal("enter cordoned the node")
	}
}

// No sequence of keys leaves a screen without a way back: random walks, each key drawn from
// the bindings of the screen on show (y and ctrl+c aside: they run and quit) and the global
// keys, each walk followed by esc until the nodes. Every screen on the way shows more than a
// footer.
func TestEverySequenceHasAWayBack(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.cmdWait = 60 * time.Millisecond // a plan answers within it (ms here); a cursor blink (530 ms) is not waited for
	pool := [][]string{{"j"}, {"k"}, {"g"}, {"G"}, {"enter"}, {"esc"}, {"space"}, {"?"}, {"d"}, {"o"}, {"s"}, {"m"}, {"t"},
		{"c"}, {"e"}, {"u"}, {"x"}, {"R"}, {"X"}, {"C"}, {"n"}, {"N"}, {"F"}, {"D"}, {"K"}, {"A"}, {"M"}, {"q"}, {"w"}, {"/"},
		{"pgdown"}, {">"}, {":", "v", "m", "s", "enter"}, {":", "p", "o", "d", "s", "enter"}, {":", "o", "p", "s", "enter"},
		{":", "v", "i", "c", "t", "i", "m", "s", "enter"}, {":", "h", "e", "l", "p", "enter"}, {":", "enter"}}
	rng := rand.New(rand.NewSource(38))
	for walk := 0; walk < 100; walk++ {
		var typed []string
		for i := 0; i < 10; i++ {
			keys := pool[rng.Intn(len(pool))]
			if own := screenKeys(l.m); len(own) > 0 && rng.Intn(3) > 0 { // mostly the screen's own keys
				keys = []string{own[rng.Intn(len(own))]}
			}
			typed = append(typed, strings.Join(keys, ""))
			l.keys(keys...)
			if typing(l.m) {
				continue // a line being typed: esc ends it
			}
			if v := l.m.View(); lines(v) < 3 {
				t.Fatalf("walk %d %v: screen %v shows only:\n%s", walk, typed, screenOf(l.m), v)
			}
			// From here, esc leads home: probed on a copy, the walk goes on from here.
			probe := &live{t: t, m: l.m, cmdWait: l.cmdWait}
			for j := 0; !on[*nodesPane](&probe.m); j++ {
				if j == 12 || lines(probe.m.View()) < 3 {
					t.Fatalf("walk %d %v: no way back from screen %v:\n%s", walk, typed, screenOf(probe.m), probe.m.View())
				}
				probe.keys("esc")
			}
		}
		for i := 0; !on[*nodesPane](&l.m) || typing(l.m); i++ {
			if i == 12 {
				t.Fatalf("walk %d %v: no way back from screen %v:\n%s", walk, typed, screenOf(l.m), l.m.View())
			}
			l.keys("esc")
		}
		l.m.nodes().selected = map[string]bool{} // the next walk starts from no selection
	}
}

// typing: a line is being typed (a command, a filter, a reason): keys go to it.
func typing(m Model) bool {
	c, onConfirm := m.top().(*confirmPane)
	return m.typingLine() || onConfirm && c.why.typing() || m.s.campaign.input.typing()
}

// screenKeys are the keys the screen on show binds, y and ctrl+c aside.
func screenKeys(m Model) []string {
	var out []string
	for _, a := range m.top().bindings(&m.s) {
		for _, k := range a.key.Keys() {
			switch k {
			case "y", "ctrl+c":
			case "pgdown", "enter", "esc", "space": // the keys live.keys sends by name
				out = append(out, k)
			default:
				if len([]rune(k)) == 1 {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// A refusal that depends on time is judged again when y is pressed: X right after a node
// died refuses ("NotReady for 0s only"); a minute later y reads the world again, says what
// is left, and only a y after that runs it.
func TestYJudgesARefusalAgain(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0 := c.Name("c0")
	l := newLive(t, c, c.Engine("tui@test", nil))
	c.World.KillHost(c0)
	kubetest.SetReady(t, c.CS, c0, false, time.Now())
	kubetest.Eventually(t, 10*time.Second, "the view seeing the node NotReady", func() bool {
		k, ok := l.m.eng.KubeNode(c0)
		return ok && !k.Ready
	})
	l.send(l.m.load(true)()) // the view's next read
	for i, row := range l.m.nodes().rows {
		if l.m.s.inv.Nodes[row].Name == c0 {
			l.m.nodes().cursor = i
		}
	}
	l.keys("X", "K", "A")
	if !on[*confirmPane](&l.m) || !strings.Contains(l.m.View(), "NotReady for") {
		t.Fatalf("X on a node just dead: screen %v\n%s", screenOf(l.m), l.m.View())
	}
	l.keys("y") // still too early: judged again, still refused, nothing runs
	if len(l.m.s.ops.order) != 0 || !strings.Contains(l.m.status, "still refused") || !strings.Contains(l.m.status, "NotReady for") {
		t.Fatalf("y on a refusal: operations %v, status %q", l.m.s.ops.order, l.m.status)
	}
	// Time passes (the node has been NotReady for five minutes by now).
	kubetest.SetReady(t, c.CS, c0, false, time.Now().Add(-5*time.Minute))
	kubetest.Eventually(t, 10*time.Second, "the view seeing the older outage", func() bool {
		k, _ := l.m.eng.KubeNode(c0)
		return time.Since(k.ReadySince) > time.Minute
	})
	l.keys("y")
	if len(l.m.s.ops.order) != 0 || !on[*confirmPane](&l.m) || !strings.Contains(l.m.status, "nothing refuses it now") {
		t.Fatalf("y judged again: operations %v, status %q\n%s", l.m.s.ops.order, l.m.status, l.m.View())
	}
}

// The node list marks a disagreement by doctor's rule: a storage node with no compute
// service is no hypervisor, and no disagreement; a node that runs the hypervisor pods but
// matches no compute service is one.
func TestRowsMarkDisagreementsAsDoctorDoes(t *testing.T) {
	m := newModel(t, 3, 160, 45)
	inv := m.s.inv
	inv.Nodes = append(inv.Nodes, model.Node{Name: "compute-x", Kube: &model.KubeNode{Name: "compute-x", Ready: true, Schedulable: true},
		Pods: []model.Pod{
			{
				Namespace: "openstack",
				Name:      "libvirt-x",
				Phase:     "Running",
				OwnerKind: "DaemonSet",
				Labels:    map[string]string{"application": "libvirt"},
			},
		}})
	next, _ := m.Update(inventoryMsg{inv: inv, victims: policy.Rank(inv, m.s.opts.Policy, policy.DefaultWeights())})
	v := next.(Model).View()
	if strings.Contains(v, "!storage-0") || strings.Contains(v, "no compute service") {
		t.Errorf("storage-0 marked as a disagreement:\n%s", v)
	}
	if !strings.Contains(v, "!compute-x") || !strings.Contains(v, "no Nova host") {
		t.Errorf("compute-x (hypervisor pods, no compute service) not marked:\n%s", v)
	}
}

// The target picker offers the hosts an evacuation would choose from, no other: not one
// holding a member of the VM's hard anti-affinity group, not a disabled one.
func TestThePickerOffersLegalHostsOnly(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c1, c2 := c.Name("c1"), c.Name("c2")
	c.World.AddServer("vm-c", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.AddServerGroup("db", "anti-affinity", "vm-a", "vm-c")
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.keys(":", "v", "m", "s", "enter")
	for i, r := range paneIn[*listPane](&l.m).rows {
		if strings.Contains(strings.Join(r.cells, " "), "vm-a") {
			paneIn[*listPane](&l.m).cursor = i
		}
	}
	l.keys("m", "t")
	if !on[*listPane](&l.m) || paneIn[*listPane](&l.m).kind != hostPicker {
		t.Fatalf("m, t: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	hosts := map[string]bool{}
	for _, r := range paneIn[*listPane](&l.m).rows {
		hosts[r.key] = true
	}
	if hosts[c1] || !hosts[c2] {
		t.Errorf("offered %v: %s holds vm-a's anti-affinity partner", hosts, c1)
	}
	// Disabled meanwhile: not offered either.
	c.World.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) { h[c2].Enabled = false })
	l.keys("esc", "esc")
	l.send(l.m.load(true)())
	for i, r := range paneIn[*listPane](&l.m).rows {
		if strings.Contains(strings.Join(r.cells, " "), "vm-a") {
			paneIn[*listPane](&l.m).cursor = i
		}
	}
	l.keys("m", "t")
	for _, r := range paneIn[*listPane](&l.m).rows {
		if r.key == c2 {
			t.Errorf("the disabled %s is offered", c2)
		}
	}
}

// A blocker line too long for the screen wraps, its reason and its remedy whole: the flag
// (with the VM's ID) is what the operator acts on, and the reason is why.
func TestABlockerKeepsItsRemedy(t *testing.T) {
	for _, width := range []int{160, 80} {
		m := newModel(t, 3, width, 45)
		long := model.Reason{
			Code:     model.NotMoved,
			Severity: model.Blocks,
			Object:   "build-old",
			ObjectID: "fc256408-54c1-4dfc-acaa-8a2cecce5a3a",
			Message:  "ERROR: Failed to allocate the network(s), not rescheduling. (drainctl never resets a broken server: repair or delete it)",
			Override: model.OverrideSkipVM,
		}
		p := pending{op: model.OpEvacuate, targets: []string{"compute-0"},
			batch: ops.Batch{Plans: []model.Plan{{Op: model.OpEvacuate, Node: "compute-0", Reasons: []model.Reason{long}}}}}
		next, _ := m.Update(planMsg(p))
		v := next.(Model).View()
		if flat := strings.Join(strings.Fields(v), " "); !strings.Contains(
			flat,
			long.Message+" (use --skip-vm fc256408-54c1-4dfc-acaa-8a2cecce5a3a to override)",
		) {
			t.Errorf("at %d columns the remedy is cut:\n%s", width, v)
		}
	}
}

// S leaves each VM that blocks where it is, by ID, as --skip-vm does, without --force's
// pod rules: the VM's blocker goes, the bare pod's stays.
func TestSLeavesTheBlockingVMs(t *testing.T) {
	c, l := brokenVMPlan(t)
	l.keys("S")
	vmb, _ := c.World.ServerByName("vm-b")
	pd := paneIn[*confirmPane](&l.m).pending
	if len(pd.ro.Policy.SkipVMs) != 1 || pd.ro.Policy.SkipVMs[0] != vmb.ID || pd.ro.Policy.Force {
		t.Fatalf("S: policy %+v", pd.ro.Policy)
	}
	for _, r := range pd.batch.Blockers() {
		if r.Object == "vm-b" {
			t.Errorf("vm-b still blocks: %s", r.Text())
		}
	}
	if !strings.Contains(l.m.View(), "shell") {
		t.Errorf("the bare pod's blocker went too (S is not --force):\n%s", l.m.View())
	}
}

// S leaves every VM that blocks, whatever override its blocker names: a VM pinned to its
// host's hardware (whose blocker offers a cold move) is left too, beside those S left before;
// with no VM blocking any more, S leaves none again.
func TestSLeavesEveryVMThatBlocksThenNone(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.World.Break("vm-b", "disk /dev/sdb vanished")
	gpu := c.World.AddServer("vm-gpu", c.Name("c0"), sim.Flavor{Name: "g1.a100", RAMMB: 4096, VCPUs: 2, DiskGB: 20,
		ExtraSpecs: map[string]string{"pci_passthrough:alias": "a100:1"}}).ID
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.send(l.m.load(true)())
	l.cursorTo(c.Name("c0"))
	l.keys("e")
	vmb, _ := c.World.ServerByName("vm-b")
	l.keys("S")
	pd := paneIn[*confirmPane](&l.m).pending
	if !slices.Contains(pd.ro.Policy.SkipVMs, vmb.ID) || !slices.Contains(pd.ro.Policy.SkipVMs, gpu) {
		t.Fatalf("S: skip %v; want vm-b's and vm-gpu's IDs", pd.ro.Policy.SkipVMs)
	}
	for _, r := range pd.batch.Blockers() {
		if r.Object == "vm-b" || r.Object == "vm-gpu" {
			t.Errorf("%s still blocks: %s", r.Object, r.Text())
		}
	}
	l.keys("S")
	if o := paneIn[*confirmPane](&l.m).pending.ro.Policy; len(o.SkipVMs) != 0 {
		t.Errorf("S with no VM blocking: skip %v; want none", o.SkipVMs)
	}
}

// Two toggles typed before the first one's plan arrives both count, whatever order the plans
// arrive in: the second builds on the first, and the older plan is dropped.
func TestTogglesTypedQuicklyAreNotLost(t *testing.T) {
	_, l := brokenVMPlan(t)
	key := func(r rune) tea.Cmd {
		next, cmd := l.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
		l.m = next.(Model)
		return cmd
	}
	first, second := key('S'), key('F')
	l.send(second()) // the newer plan arrives first
	l.send(first())  // the older one after it: dropped
	o := paneIn[*confirmPane](&l.m).pending.ro.Policy
	if len(o.SkipVMs) != 1 || !o.Force {
		t.Errorf("after S and F typed quickly: skip %v, force %v", o.SkipVMs, o.Force)
	}
}

// A plan's footer offers the toggles that apply to its operation, no other: uncordon has
// --force (re-enable a service someone else disabled), not the evacuation's pod overrides.
func TestAPlanOffersItsOwnToggles(t *testing.T) {
	for op, want := range map[model.OpKind][2][]string{
		model.OpUncordon: {{"F toggle --force"}, {"D toggle", "E toggle", "L toggle"}},
		model.OpAbort:    {{"y run it"}, {"F toggle", "D toggle"}},
		model.OpEvacuate: {{"F toggle", "D toggle", "E toggle", "L toggle"}, nil},
	} {
		m := newModel(t, 3, 160, 45)
		next, _ := m.Update(
			planMsg(pending{op: op, targets: []string{"compute-0"}, batch: ops.Batch{Plans: []model.Plan{{Op: op, Node: "compute-0"}}}}),
		)
		v := next.(Model).View()
		for _, s := range want[0] {
			if !strings.Contains(v, s) {
				t.Errorf("%s: the footer lacks %q:\n%s", op, s, v)
			}
		}
		for _, s := range want[1] {
			if strings.Contains(v, s) {
				t.Errorf("%s: the footer offers %q, which does not apply", op, s)
			}
		}
	}
}

// PgDn scrolls a tall plan, as its footer says.
func TestPgDnScrollsATallPlan(t *testing.T) {
	m := newModel(t, 3, 80, 24)
	pl := model.Plan{Op: model.OpEvacuate, Node: "compute-0"}
	for i := 0; i < 30; i++ {
		pl.VMs = append(pl.VMs, model.VM{Name: fmt.Sprintf("vm-%02d", i), Phase: model.PhaseRunning, Status: "ACTIVE", Method: model.MoveCold, RAMMB: 1024})
	}
	next, _ := m.Update(planMsg(pending{op: model.OpEvacuate, targets: []string{"compute-0"}, batch: ops.Batch{Plans: []model.Plan{pl}}}))
	m = next.(Model)
	if !strings.Contains(m.View(), "lines 1-") {
		t.Fatalf("not a tall plan:\n%s", m.View())
	}
	next, _ = m.Update(tea.KeyMsg{Type: tea.KeyPgDown})
	if v := next.(Model).View(); strings.Contains(v, "lines 1-") || !strings.Contains(v, "vm-29") {
		t.Errorf("PgDn did not scroll:\n%s", v)
	}
}

// A plan advises no flag already given, and no remedy for what does not block: with F, an
// ERROR VM left on the node (a note) is not told to take --skip-vm.
func TestAPlanAdvisesOnlyWhatHelps(t *testing.T) {
	m := newModel(t, 3, 160, 45)
	ro := ops.RunOptions{}
	ro.Policy.Force = true
	pl := model.Plan{Op: model.OpEvacuate, Node: "compute-0", Reasons: []model.Reason{
		{
			Code:     model.NotMoved,
			Severity: model.Notes,
			Object:   "build-old",
			ObjectID: "fc256408-54c1-4dfc-acaa-8a2cecce5a3a",
			Message:  "ERROR: left on the node",
			Override: model.OverrideSkipVM,
		},
		{Code: model.NoHostWithRoom, Severity: model.Blocks, Object: "compute-0", Message: "no room", Override: model.OverrideForce},
	}}
	next, _ := m.Update(
		planMsg(pending{op: model.OpEvacuate, targets: []string{"compute-0"}, ro: ro, batch: ops.Batch{Plans: []model.Plan{pl}}}),
	)
	v := next.(Model).View()
	if strings.Contains(v, "(use --skip-vm") || strings.Contains(v, "(use --force") {
		t.Errorf("advice that does not help:\n%s", v)
	}
}

// r says "refreshing…" until the read it asked for has arrived, not longer.
func TestRefreshingClearsWhenTheReadEnds(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.keys("r")
	if l.m.status != "" {
		t.Errorf("after r and its read: status %q", l.m.status)
	}
}

// cursorTo puts the node list's cursor on the node (the API server holds other tests' nodes).
func (l *live) cursorTo(node string) {
	l.t.Helper()
	for i, row := range l.m.nodes().rows {
		if l.m.s.inv.Nodes[row].Name == node {
			l.m.nodes().cursor = i
			return
		}
	}
	l.t.Fatalf("no row for %s", node)
}

// At 160 columns a dead node's whole state is on its row: NotReady,SD and disabled/forced-down.
func TestADeadNodesStateIsNotCut(t *testing.T) {
	m := newModel(t, 3, 160, 45)
	inv := m.s.inv
	k := *inv.Nodes[0].Kube
	k.Ready, k.Schedulable = false, false
	c := *inv.Nodes[0].Compute
	c.Enabled, c.Up, c.ForcedDown = false, false, true
	inv.Nodes[0].Kube, inv.Nodes[0].Compute = &k, &c
	next, _ := m.Update(inventoryMsg{inv: inv, victims: policy.Rank(inv, m.s.opts.Policy, policy.DefaultWeights())})
	if v := next.(Model).View(); !strings.Contains(v, "NotReady,SD") || !strings.Contains(v, "disabled/forced-down") {
		t.Errorf("the dead node's state is cut:\n%s", v)
	}
}

// describe wraps at spaces only: a flag is never broken at its hyphens, at any width, and
// nothing is lost.
func TestWrapKeepsFlagsWhole(t *testing.T) {
	l := "blocks ml-train-0: cannot live-migrate: flavor g1.a100 has pci_passthrough:alias=a100:1 (use --cold-migrate-running to override)"
	for w := 20; w < 140; w++ {
		out := wrap(l, w)
		joined := strings.Join(out, "\n")
		if w >= 30 && !strings.Contains(joined, "--cold-migrate-running") { // narrower, a continued line is shorter than the flag
			t.Errorf("w=%d: the flag is broken: %q", w, out)
		}
		for _, line := range out {
			if len([]rune(line)) > w {
				t.Errorf("w=%d: a line of %d: %q", w, len([]rune(line)), line)
			}
		}
		if got := strings.Join(strings.Fields(joined), ""); got != strings.ReplaceAll(l, " ", "") {
			t.Errorf("w=%d: text changed: %q", w, got)
		}
	}
}

// brokenVMPlan is the view on a cluster whose c0 holds a broken VM (vm-b, ERROR) and a bare
// pod, showing c0's evacuation plan.
func brokenVMPlan(t *testing.T) (*simtest.Cluster, *live) {
	c := simtest.NewCluster(t, 100)
	c.World.Break("vm-b", "disk /dev/sdb vanished")
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.send(l.m.load(true)())
	l.cursorTo(c.Name("c0"))
	l.keys("e")
	// The refusal names the key that leaves the VM, wrapped, since the footer cannot list it at 80 columns.
	if v := l.m.View(); !on[*confirmPane](&l.m) || !strings.Contains(v, "vm-b") || !strings.Contains(v, "S leaves the VMs that block") {
		t.Fatalf("e: screen %v\n%s", screenOf(l.m), v)
	}
	return c, l
}

// At 80x24 the VM on the move is on screen however many VMs come before it: until the
// operator moves the cursor, it follows the first VM under way.
func TestTheMigratingVMIsOnScreen(t *testing.T) {
	m := newModel(t, 3, 80, 24)
	var vms []model.VM
	for i := 0; i < 12; i++ {
		vms = append(vms, model.VM{ID: fmt.Sprintf("id-%02d", i), Name: fmt.Sprintf("vm-%02d", i), Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: 1024})
	}
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-0", Host: "compute-0", VMs: vms}
	m.s.ops.add("compute-0", plan, t0, func() {})
	m.s.shownOp = "compute-0"
	m.push(&opPane{})
	last := vms[11]
	m = feed(
		m,
		"compute-0",
		ops.NewPlanReady(t0, plan),
		ops.NewMigrationEvent(
			t0,
			"compute-0",
			ops.MigrationEvent{VM: last.Name, VMID: last.ID, State: ops.MigRunning, Source: "compute-0", Dest: "compute-1",
				Total: 1 << 30, Processed: 1 << 29, Remaining: 1 << 29, Rate: 1 << 28},
		),
	)
	v := m.View()
	if !strings.Contains(v, "▸ vm-11") {
		t.Errorf("the migrating vm-11 is not on screen:\n%s", v)
	}
	// The rows after the scroll marker keep their column (#38.12: they were pushed right).
	lines := strings.Split(v, "\n")
	for i, l := range lines {
		if strings.Contains(l, "VMs above") && (i+1 == len(lines) || !regexp.MustCompile(`^(▸ | {2})vm-\d\d `).MatchString(lines[i+1])) {
			t.Errorf("the row after the scroll marker is not aligned: %q\n%s", lines[min(i+1, len(lines)-1)], v)
		}
	}
}

// A plan ticks nothing: nothing has run yet. A step the cluster already shows done (a node
// cordoned already, no hypervisor pods to evict) says there is nothing to do.
func TestAPlanTicksNoStep(t *testing.T) {
	m := newModel(t, 3, 160, 45)
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-0", Steps: []model.Step{
		{Kind: model.StepCordon, Detail: "unschedulable + taint drainctl.io/maintenance", Done: true},
		{Kind: model.StepEvictCarriers, Detail: "then 0 hypervisor pod(s)", Done: true},
		{Kind: model.StepVerify, Detail: "nothing that had to go is left"}}}
	next, _ := m.Update(planMsg(pending{op: model.OpEvacuate, targets: []string{"compute-0"}, batch: ops.Batch{Plans: []model.Plan{plan}}}))
	v := next.(Model).View()
	if strings.Contains(v, "✓") || strings.Count(v, "[-]") != 2 || !strings.Contains(v, "then 0 hypervisor pod(s) (nothing to do)") {
		t.Errorf("the plan ticks a step or hides that one has nothing to do:\n%s", v)
	}
}

// > sorts as it says, and the cursor stays on its node however the rows move (a new order,
// a refresh that reorders them): a key acts on the node it was on.
func TestSortKeepsTheCursorOnItsNode(t *testing.T) {
	m := newModel(t, 4, 160, 45)
	on := func() string { n, _ := m.nodes().current(&m.s); return n.Name }
	if on() != "compute-0" {
		t.Fatalf("the cursor starts on %s", on())
	}
	m = press(m, ">", ">") // vms (all tie: by name), then pods: compute-1 has the most
	if m.s.inv.Nodes[m.nodes().rows[0]].Name != "compute-1" || on() != "compute-0" {
		t.Errorf("sorted by pods: first %s, cursor on %s", m.s.inv.Nodes[m.nodes().rows[0]].Name, on())
	}
	inv := inventory(4) // compute-3 gains two pods: it goes first on the refresh
	inv.Nodes[3].Pods = append(inv.Nodes[3].Pods, model.Pod{Namespace: "a", Name: "b"}, model.Pod{Namespace: "a", Name: "c"})
	next, _ := m.Update(inventoryMsg{inv: inv})
	m = next.(Model)
	if on() != "compute-0" {
		t.Errorf("after a refresh that reorders the rows the cursor is on %s", on())
	}
	m = press(m, ">", ">") // ram, then rank: the rank's order is its own, not the most first
	if !strings.Contains(m.status, "the cheapest candidate first") || on() != "compute-0" {
		t.Errorf("sorted by rank: status %q, cursor on %s", m.status, on())
	}
}

// The node detail reaches its last pod at 80x24: the cursor walks the VMs, then the pods,
// the pod list scrolls to it, and d describes the pod under the cursor. Space and m, which
// are the VMs', say so on a pod.
func TestNodeDetailReachesItsLastPod(t *testing.T) {
	m := newModel(t, 3, 80, 24)
	inv := inventory(3)
	for i := 0; i < 20; i++ {
		inv.Nodes[0].Pods = append(
			inv.Nodes[0].Pods,
			model.Pod{Namespace: "shop", Name: fmt.Sprintf("batch-%02d", i), Phase: "Running", OwnerKind: "Job"},
		)
	}
	next, _ := m.Update(inventoryMsg{inv: inv})
	m = press(next.(Model), "enter", "G")
	v := m.View()
	if !strings.Contains(v, "▸ shop/batch-19") || strings.Count(v, "\n") > 23 {
		t.Fatalf(
			"G in the detail: the last pod is not under the cursor, or the screen overflows (%d lines):\n%s",
			strings.Count(v, "\n")+1,
			v,
		)
	}
	m = press(m, "space")
	if !strings.Contains(m.status, "the cursor is on a pod") {
		t.Errorf("space on a pod: status %q", m.status)
	}
	m = press(m, "d")
	if !on[*describePane](&m) || !strings.Contains(m.View(), "batch-19") {
		t.Errorf("d on the last pod: screen %v\n%s", screenOf(m), m.View())
	}
}

// In the operation view space shows the next operation, and its footer says so, only when
// there is one; it never claims to select.
func TestOperationViewSpaceSaysWhatItDoes(t *testing.T) {
	m := newModel(t, 3, 160, 45)
	plan := func(node string) model.Plan { return model.Plan{Op: model.OpEvacuate, Node: node, Host: node} }
	m.s.ops.add("compute-0", plan("compute-0"), t0, func() {})
	m.s.shownOp = "compute-0"
	m.push(&opPane{})
	if v := m.View(); strings.Contains(v, "space") {
		t.Errorf("one operation: the footer offers space:\n%s", v)
	}
	m.s.ops.add("compute-1", plan("compute-1"), t0, func() {})
	if v := m.View(); !strings.Contains(v, "space next operation") || strings.Contains(v, "select") {
		t.Errorf("two operations: the footer does not say what space does:\n%s", v)
	}
	if m = press(m, "space"); m.s.shownOp != "compute-1" {
		t.Errorf("space shows %s", m.s.shownOp)
	}
}

// PgDn past the end of a tall plan, help or description stops at its end: the first k
// scrolls back up at once (the offset ran on, out of sight, and k spent presses first).
func TestScrollingStopsAtTheEnd(t *testing.T) {
	m := newModel(t, 3, 80, 24)
	var reasons []model.Reason
	for i := 0; i < 40; i++ {
		reasons = append(
			reasons,
			model.Reason{Code: model.BarePod, Severity: model.Blocks, Object: fmt.Sprintf("shop/bare-%02d", i), Message: "no controller"},
		)
	}
	next, _ := m.Update(planMsg(pending{op: model.OpEvacuate, targets: []string{"compute-0"},
		batch: ops.Batch{Plans: []model.Plan{{Op: model.OpEvacuate, Node: "compute-0", Reasons: reasons}}}}))
	where := regexp.MustCompile(`lines (\d+)-(\d+) of (\d+)`)
	for _, screen := range []struct {
		name string
		open []string
	}{{"plan", nil}, {"help", []string{"esc", "?"}}} {
		m = press(next.(Model), screen.open...)
		m = press(m, "pgdown", "pgdown", "pgdown", "pgdown", "pgdown", "pgdown")
		end := where.FindStringSubmatch(m.View())
		m = press(m, "k")
		up := where.FindStringSubmatch(m.View())
		if end == nil || up == nil || end[2] != end[3] || up[1] == end[1] {
			t.Errorf("%s: after pgdn past the end %v, k shows %v:\n%s", screen.name, end, up, m.View())
		}
	}
}

// :recoveries lists the recovery records with their ledgers: a row a recovery, then a row a VM.
func TestRecoveriesListsTheLedger(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	e := c.Engine("tui@test", nil)
	c0 := c.Name("c0")
	rec := model.Recovery{Node: c0, Host: c0, Automatic: true, Started: t0, Finished: t0.Add(90 * time.Second), Outcome: "done",
		Moves: []model.VMMove{
			{
				VM:       "vm-a",
				VMID:     "id-a",
				Source:   c0,
				Dest:     c.Name("c1"),
				Method:   model.MoveRebuild,
				Status:   model.MoveSucceeded,
				Duration: time.Minute,
			},
			{
				VM:     "vm-b",
				VMID:   "id-b",
				Source: c0,
				Method: model.MoveRebuild,
				Status: model.MoveLeft,
				Reason: "its local disk would be lost",
			},
		}}
	if err := e.SaveRecovery(kubetest.Ctx(t), rec); err != nil {
		t.Fatal(err)
	}
	if err := e.PauseRecovery(kubetest.Ctx(t), "core switch firmware"); err != nil {
		t.Fatal(err)
	}
	l := newLive(t, c, e)
	l.keys(":", "recoveries", "enter")
	v := l.m.View()
	// At 80 columns too, a VM that stays says why.
	narrow, _ := l.m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if v := narrow.(Model).View(); !strings.Contains(v, "its local disk") || !strings.Contains(v, "vm-a") {
		t.Errorf(":recoveries at 80 columns:\n%s", v)
	}
	if !strings.Contains(l.m.status, "automatic recovery is paused by tui@test") || !strings.Contains(l.m.status, "core switch firmware") {
		t.Errorf("the pause is not said: status %q", l.m.status)
	}
	if !on[*listPane](&l.m) || !strings.Contains(v, c0[:20]) || !strings.Contains(v, "automatic") || !strings.Contains(v, "vm-a") ||
		!strings.Contains(v, "succeeded") || !strings.Contains(v, "its local disk would be lost") {
		t.Errorf(":recoveries: screen %v, status %q\n%s", screenOf(l.m), l.m.status, v)
	}
}

// O moves each VM whose own policy asks to stay anyway, by ID, as --override-vm-policy does:
// its blocker goes, the plan says whose word moves it, and the refusal named the key first.
func TestOMovesTheVMsWhoseOwnPolicyBlocks(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.World.SetMetadata("vm-b", model.VMPolicyKey, "stays")
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.send(l.m.load(true)())
	l.cursorTo(c.Name("c0"))
	l.keys("e")
	if v := l.m.View(); !on[*confirmPane](&l.m) || !strings.Contains(v, "O moves the VMs whose own policy blocks") {
		t.Fatalf("e: screen %v\n%s", screenOf(l.m), v)
	}
	l.keys("O")
	vmb, _ := c.World.ServerByName("vm-b")
	pd := paneIn[*confirmPane](&l.m).pending
	if len(pd.ro.Policy.OverrideVMPolicies) != 1 || pd.ro.Policy.OverrideVMPolicies[0] != vmb.ID || len(pd.ro.Policy.SkipVMs) != 0 {
		t.Fatalf("O: policy %+v", pd.ro.Policy)
	}
	for _, r := range pd.batch.Blockers() {
		if r.Object == "vm-b" {
			t.Errorf("vm-b still blocks: %s", r.Text())
		}
	}
	if v := l.m.View(); !strings.Contains(v, "--override-vm-policy") {
		t.Errorf("the plan does not say the override is on:\n%s", v)
	}
	l.keys("O")
	if pd := paneIn[*confirmPane](&l.m).pending; len(pd.ro.Policy.OverrideVMPolicies) != 0 {
		t.Errorf("a second O keeps the override: %+v", pd.ro.Policy)
	}
}

// H in an uncordon's plan brings home the VMs that left the node (--return-vms): the plan
// gains the step that does it, and H again takes it out.
func TestHBringsTheVMsHome(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	e := c.Engine("tui@test", nil)
	ro := ops.RunOptions{Policy: simtest.Defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	if _, _, err := simtest.Run(t, e, model.OpEvacuate, c.Name("c0"), ro); err != nil {
		t.Fatal(err)
	}
	l := newLive(t, c, e)
	l.send(l.m.load(true)())
	l.cursorTo(c.Name("c0"))
	l.keys("u")
	if v := l.m.View(); !on[*confirmPane](&l.m) || strings.Contains(v, "[ ] return-vms") {
		t.Fatalf("u: screen %v\n%s", screenOf(l.m), v)
	}
	l.keys("H")
	if v := l.m.View(); !paneIn[*confirmPane](&l.m).pending.ro.ReturnVMs || !strings.Contains(v, "[ ] return-vms") ||
		!strings.Contains(v, "bring home the 2 VM(s) that left it") {
		t.Fatalf("H: the plan does not bring the VMs home:\n%s", v)
	}
	l.keys("H")
	if paneIn[*confirmPane](&l.m).pending.ro.ReturnVMs {
		t.Error("a second H keeps --return-vms")
	}
}

// screenOf names the pane on screen, for a failure's message.
func screenOf(m Model) string { return strings.TrimPrefix(fmt.Sprintf("%T", m.top()), "*ui.") }

// ptr is the model an Update returned, to look at its panes.
func ptr(m tea.Model) *Model {
	mm := m.(Model)
	return &mm
}
