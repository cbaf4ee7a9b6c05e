package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
)

// where is a production-looking cluster for the header.
var where = model.Where{KubeContext: "prod-eu-1", KubeServer: "https://10.20.0.1:6443", Cloud: "prod", AuthHost: "keystone.example.net:5000", Region: "RegionOne"}

// Every pane at 80x24 and 160x45 (lipgloss renders without colour here, as under NO_COLOR:
// the cursor and the selection must show by their marks alone).
func TestGoldenPanes(t *testing.T) {
	panes := map[string]func(w, h int) Model{
		"nodes": func(w, h int) Model {
			m := withWhere(newModel(t, 30, w, h))
			return press(m, "j", "space", "j", "j")
		},
		"nova-down": func(w, h int) Model {
			m := withWhere(newModel(t, 5, w, h))
			next, _ := m.Update(inventoryMsg{inv: m.s.inv, err: errors.New(`cannot reach Nova at https://nova.example.net:8774/v2.1/: listing nova-compute services: 503 Service Unavailable`),
				stale: true, novaAt: t0.Add(-90e9)})
			return next.(Model)
		},
		"detail": func(w, h int) Model {
			return press(withWhere(newModel(t, 3, w, h)), "j", "enter", "j")
		},
		"victims": func(w, h int) Model { return press(withWhere(newModel(t, 4, w, h)), "s", "j") },
		"operation": func(w, h int) Model {
			m := withWhere(opModel(t, w, h))
			m.s.ops.views["compute-0"].report = &ops.Report{Result: ops.ResultDone}
			return m
		},
		"confirm":             func(w, h int) Model { return confirmModel(withWhere(newModel(t, 3, w, h))) },
		"help":                func(w, h int) Model { return press(withWhere(newModel(t, 3, w, h)), "?") },
		"quit":                func(w, h int) Model { return press(withWhere(opModel(t, w, h)), "q") },
		"vms":                 func(w, h int) Model { return command(withWhere(newModel(t, 6, w, h)), "vms") },
		"pods":                func(w, h int) Model { return press(command(withWhere(newModel(t, 3, w, h)), "pods"), "j", "j") },
		"describe":            func(w, h int) Model { return press(withWhere(newModel(t, 3, w, h)), "j", "d") },
		"confirm-vm-states":   func(w, h int) Model { return vmStatesConfirm(withWhere(newModel(t, 3, w, h))) },
		"confirm-vm-policies": func(w, h int) Model { return vmPoliciesConfirm(withWhere(newModel(t, 3, w, h))) },
		"operation-vm-states": func(w, h int) Model { return withWhere(vmStatesOperation(t, w, h)) },
		"ask": func(w, h int) Model {
			m := withWhere(opModel(t, w, h))
			return press(m, "f")
		},
	}
	for name, build := range panes {
		for _, size := range [][2]int{{80, 24}, {160, 45}} {
			t.Run(fmt.Sprintf("%s-%dx%d", name, size[0], size[1]), func(t *testing.T) {
				m := build(size[0], size[1])
				checkFits(t, m.View(), size[0], size[1])
				goldenView(t, m)
			})
		}
	}
}

// With colour, the cursor is also reverse video; its mark does not depend on it.
func TestGoldenNodesInColour(t *testing.T) {
	lipgloss.SetColorProfile(termenv.ANSI)
	defer lipgloss.SetColorProfile(termenv.Ascii)
	goldenView(t, press(withWhere(newModel(t, 3, 80, 24)), "j", "space"))
}

func withWhere(m Model) Model {
	m.s.opts.Where = where
	return m
}

// confirmModel: an evacuation plan with a blocker, a wait, what --force would lose, a reason.
func confirmModel(m Model) Model {
	node, _ := m.s.inv.Node("compute-1")
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-1", VMs: node.VMs, Pods: node.Pods[1:],
		Steps: []model.Step{{Kind: model.StepCordon, Detail: "unschedulable + taint"}, {Kind: model.StepMigrateVMs, Detail: "live-migrate 2 VM(s)"}},
		Reasons: []model.Reason{
			{Code: model.PDBExhausted, Severity: model.Waits, Object: "shop/web-compute-1", Message: "web-pdb", Override: "--disable-eviction"},
			{Code: model.LostForGood, Severity: model.Notes, Object: "shop/debug-shell", Message: "bare pod: once evicted nothing recreates it", By: model.OverrideForce}}}
	ro := ops.RunOptions{Policy: policy.Options{Force: true}, Why: "kernel 6.12 (CHG-2291)"}
	next, _ := m.Update(planMsg{op: model.OpEvacuate, targets: []string{"compute-1"}, ro: ro, batch: ops.Batch{Run: ro, Plans: []model.Plan{plan}}})
	return next.(Model)
}

// vmStates are a host's VMs in every state: running (live), stopped (cold), passing a GPU
// through (cold under --cold-migrate-running, with downtime), broken (left by --skip-vm).
func vmStates() []model.VM {
	return []model.VM{
		{ID: "a1000000-0000-4000-8000-000000000001", Name: "build-old", Host: "compute-1", Phase: model.PhaseBroken, Status: "ERROR", Flavor: "m1.small", RAMMB: 2048, VCPUs: 1,
			Fault: "Failed to allocate the network(s), not rescheduling."},
		{ID: "a1000000-0000-4000-8000-000000000002", Name: "ml-train-0", Host: "compute-1", Phase: model.PhaseRunning, Status: "ACTIVE", Flavor: "g1.a100", RAMMB: 65536, VCPUs: 16,
			Pinned: "pci_passthrough:alias=a100:1"},
		{ID: "a1000000-0000-4000-8000-000000000003", Name: "reports-nightly", Host: "compute-1", Phase: model.PhaseStopped, Status: "SHUTOFF", Flavor: "m1.medium", RAMMB: 4096, VCPUs: 2},
		{ID: "a1000000-0000-4000-8000-000000000004", Name: "web-7", Host: "compute-1", Phase: model.PhaseRunning, Status: "ACTIVE", Flavor: "m1.large", RAMMB: 8192, VCPUs: 4},
	}
}

// vmStatesConfirm: the plan of that host, as the engine makes it, with the overrides on.
func vmStatesConfirm(m Model) Model {
	ro := ops.RunOptions{Policy: policy.Options{MoveStopped: true, ColdMigrateRunning: true, SkipVMs: []string{"build-old"}}}
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-1", Host: "compute-1",
		Steps: []model.Step{{Kind: model.StepCordon, Detail: "unschedulable + taint"}, {Kind: model.StepMigrateVMs, Detail: "move 4 VM(s): 1 live, 2 cold, 1 stays"}}}
	for _, vm := range vmStates() {
		method, r := policy.VMMove(vm, ro.Policy)
		vm.Method = method
		plan.VMs = append(plan.VMs, vm)
		if r != nil {
			plan.Reasons = append(plan.Reasons, *r)
		}
	}
	next, _ := m.Update(planMsg{op: model.OpEvacuate, targets: []string{"compute-1"}, ro: ro, batch: ops.Batch{Run: ro, Plans: []model.Plan{plan}}})
	return next.(Model)
}

// vmPoliciesConfirm: a plan whose VMs carry their own maintenance policies (#42.1): one by
// its owner's metadata (stop-start: moved cold), one by the operator's flavor table, one that
// stays (a blocker), one whose owner wrote a policy that is none (the operator's policy, a
// note, escaped: #52.1), one by the default.
func vmPoliciesConfirm(m Model) Model {
	ro := ops.RunOptions{Policy: policy.Options{MoveStopped: true, Maintenance: model.MaintenanceConfig{Flavors: map[string]model.VMPolicy{"m1.huge": model.PolicyStopStart}}}}
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-1", Host: "compute-1",
		Steps: []model.Step{{Kind: model.StepCordon, Detail: "unschedulable + taint"}, {Kind: model.StepMigrateVMs, Detail: "move 6 VM(s): 2 live, 2 cold, 1 restart, 1 stay"}}}
	for i, vm := range []model.VM{
		{Name: "build-cache", Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: 8192, PolicyAsked: "stop-start"},
		{Name: "analytics-big", Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: 65536, Flavor: "m1.huge"},
		{Name: "ledger-db", Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: 16384, PolicyAsked: "stays"},
		{Name: "odd-one", Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: 2048, PolicyAsked: "reboot\x1b[31m"},
		{Name: "web-1", Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: 4096},
		{Name: "batch-gpu", Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: 32768, Pinned: "pci_passthrough:alias", PolicyAsked: "restart-in-place"},
	} {
		vm.ID = fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i)
		method, r := policy.VMMove(vm, ro.Policy)
		vm.Method = method
		vm.Policy, vm.PolicyFrom = policy.VMPolicyOf(vm, ro.Policy)
		plan.VMs = append(plan.VMs, vm)
		if r != nil {
			plan.Reasons = append(plan.Reasons, *r)
		}
	}
	next, _ := m.Update(planMsg{op: model.OpEvacuate, targets: []string{"compute-1"}, ro: ro, batch: ops.Batch{Run: ro, Plans: []model.Plan{plan}}})
	return next.(Model)
}

// vmStatesOperation: that plan running: the broken VM stays, the stopped one waits for its
// confirm, the GPU one is mid-move (a cold move's phase, no percentage), the live one runs.
func vmStatesOperation(t testing.TB, w, h int) Model {
	m := newModel(t, 3, w, h)
	vms := vmStates()
	for i := range vms {
		vms[i].Method = []model.MoveMethod{model.MoveStays, model.MoveCold, model.MoveCold, model.MoveLive}[i]
	}
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-1", Host: "compute-1", VMs: vms}
	m.s.ops.add("compute-1", plan, t0, func() {})
	m.s.shownOp = "compute-1"
	m.push(&opPane{})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ev := func(s int, vm model.VM, st ops.MigState, dest, msg string) ops.Event {
		return ops.NewMigrationEvent(at(s), "compute-1", ops.MigrationEvent{VM: vm.Name, VMID: vm.ID, Method: vm.Method, State: st, Source: "compute-1", Dest: dest, Message: msg})
	}
	return feed(m, "compute-1",
		ops.NewPlanReady(at(0), plan),
		ops.NewStepEvent(at(1), "compute-1", model.StepMigrateVMs, ops.StepStarted, "move 4 VM(s): 1 live, 2 cold, 1 stays"),
		ev(1, vms[0], ops.MigSkipped, "", "left on the node as asked (skipped): ERROR: Failed to allocate the network(s), not rescheduling."),
		ev(2, vms[2], ops.MigRequested, "", ""),
		ev(4, vms[2], ops.MigVerifyResize, "compute-2", ""),
		ev(5, vms[1], ops.MigRequested, "", ""),
		ops.NewMigrationEvent(at(6), "compute-1", ops.MigrationEvent{VM: vms[1].Name, VMID: vms[1].ID, Method: model.MoveCold,
			State: "resize_migrating", Task: model.TaskColdMigrating, Source: "compute-1", Dest: "compute-3"}),
		ops.NewMigrationEvent(at(7), "compute-1", ops.MigrationEvent{VM: vms[3].Name, VMID: vms[3].ID, Method: model.MoveLive, State: ops.MigRunning,
			Source: "compute-1", Dest: "compute-2", Total: 8 << 30, Processed: 4 << 30, Remaining: 4 << 30, Rate: 1 << 30, Converge: 1 << 30, ETA: 4 * time.Second}),
	)
}

// goldenView compares the view with testdata/<test name>.golden (go test -update writes it).
func goldenView(t *testing.T, m Model) {
	t.Helper()
	tm := m
	next, _ := tm.Update(tea.WindowSizeMsg{Width: m.s.width, Height: m.s.height})
	v := next.(Model).View()
	if n := strings.Count(v, "\n") + 1; n > m.s.height { // the terminal would scroll the header away
		t.Errorf("the view is %d lines on a %d-line screen", n, m.s.height)
	}
	teatest.RequireEqualOutput(t, []byte(v))
}

// checkFits: no line wider than the terminal, no more lines than it has.
func checkFits(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) > h {
		t.Errorf("%d lines on a %d-line terminal", len(lines), h)
	}
	for i, l := range lines {
		if lw := lipgloss.Width(l); lw > w {
			t.Errorf("line %d is %d wide on a %d-column terminal: %q", i+1, lw, w, l)
		}
	}
}

// f asks before it acts: n goes back and nothing is asked of Nova; y asks it (here with no
// engine, the Cmd is the force-complete).
func TestForceCompleteAsksFirst(t *testing.T) {
	m := press(opModel(t, 100, 30), "f")
	if !on[*askPane](&m) || !strings.Contains(m.View(), "Force-complete the live migration of vm-0000") {
		t.Fatalf("f did not ask:\n%s", m.View())
	}
	back, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("n")})
	if !on[*opPane](ptr(back)) || cmd != nil {
		t.Errorf("n: screen %v, cmd %v", screenOf(back.(Model)), cmd != nil)
	}
	yes, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	if !on[*opPane](ptr(yes)) || cmd == nil || !strings.Contains(yes.(Model).status, "force-completing vm-0000") {
		t.Errorf("y: screen %v, cmd %v, status %q", screenOf(yes.(Model)), cmd != nil, yes.(Model).status)
	}
	if q := press(opModel(t, 100, 30), "j", "f"); !on[*opPane](&q) || !strings.Contains(q.status, "only a running migration") {
		t.Errorf("f on a queued VM: %v %q", screenOf(q), q.status)
	}
}

// Help scrolls at 80x24: its last group is reachable.
func TestHelpScrolls(t *testing.T) {
	m := press(newModel(t, 3, 80, 24), "?")
	if strings.Contains(m.View(), "leave them") {
		t.Fatal("the whole help fits: the test needs a longer one")
	}
	for range 60 { // more than its lines: pressed past the end, it stays at the end
		m = press(m, "j")
	}
	if v := m.View(); !strings.Contains(v, "leave them") || !on[*helpPane](&m) {
		t.Errorf("help scrolled to its end:\n%s", v)
	}
	if m = press(m, "x"); !on[*nodesPane](&m) {
		t.Errorf("another key goes back: %v", screenOf(m))
	}
}

// The quit summary names what was left and the command that resumes it, with its overrides.
func TestQuitSummarySaysHowToResume(t *testing.T) {
	m := opModel(t, 100, 30)
	m.s.ops.views["compute-0"].flags = "--force"
	m.s.ops.views["compute-0"].report = &ops.Report{Result: ops.ResultInterrupted}
	var b strings.Builder
	m.summary(&b)
	want := "evacuate compute-0: interrupted at migrate-vms; resume: drainctl --auto evacuate compute-0 --force, or undo: drainctl --auto rollback compute-0"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary:\n%s\nwant a line with %q", b.String(), want)
	}
	// Every command names the cluster on screen: its configuration and context; the demo's
	// says it would start a new demo (never a default kubeconfig's cluster).
	m.s.opts.Command, m.s.opts.Where = "drainctl --config /etc/drainctl.toml", model.Where{KubeContext: "prod eu"}
	b.Reset()
	if n := m.summary(&b); n != 1 || !strings.Contains(b.String(), "resume: drainctl --config /etc/drainctl.toml --context 'prod eu' --auto evacuate compute-0 --force, or undo: drainctl --config /etc/drainctl.toml --context 'prod eu' --auto rollback compute-0") {
		t.Errorf("summary on a context (%d):\n%s", n, b.String())
	}
	m.s.opts.Command, m.s.opts.Where = "drainctl", model.Where{Demo: true}
	b.Reset()
	if m.summary(&b); !strings.Contains(b.String(), "resume: drainctl --demo --auto evacuate compute-0") || !strings.Contains(b.String(), "would start a new demo") {
		t.Errorf("summary in the demo:\n%s", b.String())
	}
	m.s.ops.views["compute-0"].report = &ops.Report{Result: ops.ResultDone}
	b.Reset()
	if n := m.summary(&b); b.Len() != 0 || n != 0 {
		t.Errorf("nothing was left, yet (%d): %s", n, b.String())
	}
}

// command types a command line (":" line enter).
func command(m Model, line string) Model {
	m = press(m, ":")
	for _, r := range line {
		m = press(m, string(r))
	}
	next, _ := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	return next.(Model)
}

// Command mode: each list opens, a filter narrows it, a bad command says what exists.
func TestCommandMode(t *testing.T) {
	m := command(newModel(t, 3, 120, 30), "vms")
	if !on[*listPane](&m) || paneIn[*listPane](&m).kind != vmList || len(paneIn[*listPane](&m).shown) != 6 {
		t.Fatalf(":vms: screen %v, %d rows", screenOf(m), len(paneIn[*listPane](&m).shown))
	}
	m = press(m, "/", "0", "0", "0", "3", "enter")
	if r, _ := paneIn[*listPane](&m).current(); len(paneIn[*listPane](&m).shown) != 1 || r.node != "compute-1" {
		t.Errorf("filter vm-0003: %d rows, on %q", len(paneIn[*listPane](&m).shown), r.node)
	}
	if next := press(m, "enter"); !on[*detailPane](&next) || paneIn[*detailPane](&next).node != "compute-1" {
		t.Errorf("enter on a VM opens its node: %v %q", screenOf(next), paneIn[*detailPane](&next).node)
	}
	if m = command(m, "pods"); paneIn[*listPane](&m).kind != podList || len(paneIn[*listPane](&m).shown) != 7 {
		t.Errorf(":pods: %d rows", len(paneIn[*listPane](&m).shown))
	}
	if m = command(m, "nodes"); !on[*nodesPane](&m) {
		t.Errorf(":nodes: %v", screenOf(m))
	}
	if m = command(m, "bogus"); !strings.Contains(m.status, "unknown command :bogus") {
		t.Errorf(":bogus: %q", m.status)
	}
	if m = command(m, "ctx"); !strings.Contains(m.status, "no kubeconfig contexts") {
		t.Errorf(":ctx without contexts: %q", m.status)
	}
}

// > and :sort order the node list, the most first; name order breaks ties.
func TestSortNodes(t *testing.T) {
	m := newModel(t, 3, 120, 30)
	m.s.inv.Nodes[2].Pods = append(m.s.inv.Nodes[2].Pods, model.Pod{Namespace: "a", Name: "x"}, model.Pod{Namespace: "a", Name: "y"})
	m = command(m, "sort pods")
	first := m.s.inv.Nodes[m.nodes().rows[0]].Name
	if first != "compute-2" || !strings.Contains(m.View(), "sorted by pods") {
		t.Errorf("sorted by pods, first %s", first)
	}
	m = press(m, ">") // ram
	if m.nodes().sortBy != "ram" {
		t.Errorf("> after pods: %q", m.nodes().sortBy)
	}
	if m = command(m, "sort wibble"); !strings.Contains(m.status, "unknown sort") {
		t.Errorf(":sort wibble: %q", m.status)
	}
}

// The campaign screen as its record stands: two nodes done, one in progress (its log under
// the campaign's), one left, the ETA from the nodes done. The screen's clock reads 51 s after
// the node in progress began (its log's last line): the ETA counts from the clock.
func TestGoldenCampaign(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s-471) * time.Second) }
	c := model.Campaign{Name: "roll-3f2a9c1d0e", State: model.CampaignRunning, Parallel: 1, Nodes: []model.CampaignNode{
		{Name: "compute-0", Phase: model.PhaseDone, Started: at(0), Finished: at(240)},
		{Name: "compute-1", Phase: model.PhaseDone, Started: at(240), Finished: at(420)},
		{Name: "compute-2", Phase: model.PhaseStep, Started: at(420)},
		{Name: "compute-3", Phase: model.PhasePending}}}
	for _, size := range [][2]int{{80, 24}, {160, 45}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m := withWhere(opModel(t, size[0], size[1]))
			m.s.ops.views["compute-2"] = m.s.ops.views["compute-0"] // the node in progress shows its operation's log
			p := campaignState{started: true, log: []logLine{
				{at(420), "compute-2 evacuating", false}, {at(470), "compute-2 step", false},
				{at(471), "compute-2 step: exec: ssh 'compute-2' sudo apt-get -y upgrade", false}}}
			view := m.header() + "\n" + p.render(&m.s, c, false)
			checkFits(t, view, size[0], size[1])
			teatest.RequireEqualOutput(t, []byte(view))
		})
	}
}

// A campaign another process runs, watched from its record (:campaign): who runs it, that
// esc leaves it running, when its record was read; each node's phase; the ETA.
func TestGoldenWatchedCampaign(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	c := model.Campaign{Name: "bench-1795681341", State: model.CampaignRunning, Parallel: 2, Holder: "drainctl/ops@bastion/4242-7ad559",
		Started: at(-600), Updated: at(-40), Nodes: []model.CampaignNode{
			{Name: "compute-0", Phase: model.PhaseDone, Started: at(-600), Finished: at(-300)},
			{Name: "compute-1", Phase: model.PhaseDone, Started: at(-600), Finished: at(-240)},
			{Name: "compute-2", Phase: model.PhaseEvacuating, Started: at(-240), Blocked: "PodDisruptionBudget shop/web-pdb allows no disruption"},
			{Name: "compute-3", Phase: model.PhaseReturning, Started: at(-300)},
			{Name: "compute-4", Phase: model.PhasePending}}}
	for _, size := range [][2]int{{80, 24}, {160, 45}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m := withWhere(newModel(t, 3, size[0], size[1]))
			p := campaignState{watching: true, watched: c, watchedAt: at(-2)}
			view := m.header() + "\n" + p.render(&m.s, c, false)
			checkFits(t, view, size[0], size[1])
			teatest.RequireEqualOutput(t, []byte(view))
		})
	}
}

// The operation log scrolls back with pgup and comes back with pgdn.
func TestOperationLogScrolls(t *testing.T) {
	m := opModel(t, 100, 14)
	newest := "pod shop/web-compute-0 blocked"
	if !strings.Contains(m.View(), newest) {
		t.Fatalf("the newest line is not shown:\n%s", m.View())
	}
	next, _ := m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
	m = next.(Model)
	if v := m.View(); strings.Contains(v, newest) || !strings.Contains(v, "log scrolled back") || !strings.Contains(v, "vm vm-0000 requested") {
		t.Errorf("pgup:\n%s", v)
	}
	next, _ = m.Update(tea.KeyMsg{Type: tea.KeyPgDown})
	if v := next.(Model).View(); !strings.Contains(v, newest) {
		t.Errorf("pgdn:\n%s", v)
	}
}

// Without Nova the timer reads nothing: Kubernetes changes come by watch.
func TestTickWithoutNovaReadsNothing(t *testing.T) {
	m := newModel(t, 3, 100, 30)
	m.eng = &ops.Engine{} // no Nova
	next, _ := m.Update(tickMsg{})
	if next.(Model).loading {
		t.Error("a tick without Nova started a load")
	}
}
