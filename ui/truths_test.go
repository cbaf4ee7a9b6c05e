package ui

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
)

// A plan offers only the toggles that change it: a cordon's plan offers L (the last
// schedulable node) and never F, whose --force changes nothing of a cordon.
func TestACordonPlanOffersNoForce(t *testing.T) {
	keys := DefaultKeys()
	s := &shared{keys: &keys}
	k := s.keys
	offered := func(op model.OpKind, b Binding) bool {
		p := &confirmPane{pending: &pending{op: op}}
		for _, a := range p.bindings(s) {
			if a.key.Help().Key == b.Help().Key && !a.hidden {
				return true
			}
		}
		return false
	}
	if offered(model.OpCordon, k.ToggleForce) || !offered(model.OpCordon, k.ToggleLastNode) {
		t.Errorf("a cordon's plan: F offered %v, L offered %v; want L alone", offered(model.OpCordon, k.ToggleForce), offered(model.OpCordon, k.ToggleLastNode))
	}
	if !offered(model.OpEvacuate, k.ToggleForce) {
		t.Error("an evacuation's plan does not offer F")
	}
}

// A pod on a NotReady node is not shown Running as if it were known to run: its kubelet is
// not heard from.
func TestAPodOfANotReadyNodeIsNotShownRunning(t *testing.T) {
	pod := model.Pod{Namespace: "shop", Name: "web-0", Phase: "Running", OwnerKind: "ReplicaSet"}
	s := &shared{inv: model.Inventory{Nodes: []model.Node{
		{Name: "dead", Kube: &model.KubeNode{Name: "dead", Ready: false}, Pods: []model.Pod{pod}},
		{Name: "live", Kube: &model.KubeNode{Name: "live", Ready: true}, Pods: []model.Pod{pod}},
	}}}
	for _, r := range podRows(s) {
		want := map[string]string{"dead": "Running?", "live": "Running"}[r.node]
		if r.cells[3] != want {
			t.Errorf("a pod on %s shown %q, want %q", r.node, r.cells[3], want)
		}
	}
}

// Under --readonly a destructive key answers (it is off, and says so), rather than nothing.
func TestAReadOnlyKeySaysItIsOff(t *testing.T) {
	hp, _ := policy.ParseSelectors("x", []string{"application in (nova, libvirt)"})
	m := New(context.Background(), nil, Options{ReadOnly: true, Policy: policy.Options{HypervisorPods: hp[0]}, Title: "test", Now: func() time.Time { return t0 }})
	next, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	inv := inventory(4)
	next, _ = next.Update(inventoryMsg{inv: inv})
	for _, k := range []string{"e", "X", "C"} {
		got := press(next.(Model), k)
		if !strings.Contains(got.status, "read-only (--readonly): "+k+" would") || screenOf(got) != screenOf(next.(Model)) {
			t.Errorf("%s under --readonly: status %q, screen %v", k, got.status, screenOf(got))
		}
	}
}

// :recoveries: d and enter show a recovery's ledger whole (the reason a VM stays, cut in the
// list's WHY column), never the VM's state now.
func TestARecoveryLedgerIsReadWhole(t *testing.T) {
	m := newModel(t, 4, 160, 45)
	why := "its local disk would be lost (rebuilt from its image): a person's to decide, with --accept-disk-loss; " + strings.Repeat("and more words ", 8) + "END"
	rec := model.Recovery{Node: "compute-1", Automatic: true, Outcome: "done", Started: t0,
		Moves: []model.VMMove{{VM: "vm-b", VMID: "id-b", Source: "compute-1", Method: model.MoveRebuild, Status: model.MoveLeft, Reason: why}}}
	next, _ := m.recoveriesRead(recoveriesMsg{recs: []model.Recovery{rec}})
	for _, k := range []string{"d", "enter"} {
		got := press(press(next.(Model), "down"), k)
		if !on[*describePane](&got) || !strings.HasPrefix(paneIn[*describePane](&got).title, "recovery of compute-1") ||
			!strings.Contains(strings.Join(paneIn[*describePane](&got).lines, "\n"), "END") {
			t.Errorf("%s on a ledger's VM: screen %v, %q\n%s", k, screenOf(got), paneIn[*describePane](&got).title, strings.Join(paneIn[*describePane](&got).lines, "\n"))
		}
	}
}

// :recoveries at 160 columns: a VM's WHY gets the room a started-at column took (its first
// 80 characters show), and a VM left where it was shows no time taken ("0s").
func TestARecoveryListGivesWhyItsRoom(t *testing.T) {
	m := newModel(t, 4, 160, 45)
	why := "stays on the dead host: a rebuild would lose its local disk (80 GB), a loss automatic recovery leaves to a person"
	rec := model.Recovery{Node: "compute-1", Automatic: true, Outcome: "done", Started: t0,
		Moves: []model.VMMove{{VM: "vm-b", VMID: "id-b", Source: "compute-1", Method: model.MoveRebuild, Status: model.MoveLeft, Reason: why}}}
	next, _ := m.recoveriesRead(recoveriesMsg{recs: []model.Recovery{rec}})
	v := next.(Model).View()
	if !strings.Contains(v, why[:80]) || !strings.Contains(v, "automatic, started "+text.Time(t0)) {
		t.Errorf(":recoveries at 160 columns:\n%s", v)
	}
	for _, line := range strings.Split(v, "\n") {
		if strings.Contains(line, "vm-b") && strings.Contains(line, "0s") {
			t.Errorf("a VM left where it was shows a time taken: %q", line)
		}
	}
}

// At 80x24 nothing is cut without a mark: the help wraps its long lines (O's help ended
// "(it m" at the edge), and keys that do not fit the footer's line go on the lines the
// screen leaves blank, or end it with "… N more: ? shows every key".
func TestNothingIsCutAt80ColumnsWithoutAMark(t *testing.T) {
	m := newModel(t, 4, 80, 24)
	help := helpView(&m.s)
	for _, l := range strings.Split(help, "\n") {
		if w := lipgloss.Width(l); w > 80 {
			t.Errorf("a help line is %d wide: %q", w, l)
		}
	}
	if flat := strings.Join(strings.Fields(help), " "); !strings.Contains(flat, "toggle --override-vm-policy for each VM whose own policy blocks (it moves anyway, as its state says)") {
		t.Errorf("O's help is not whole:\n%s", help)
	}
	keys := []string{"y run it", "F toggle --force", "D toggle --delete-emptydir-data", "E toggle --disable-eviction", "L toggle --allow-last-node", "M toggle --cold-migrate-running", "O toggle --override-vm-policy", "H toggle --return-vms", "w type the reason"}
	if got := strings.Join(wrapKeys(keys, 80, 4), "\n"); !strings.Contains(got, "w type the reason") || strings.Contains(got, "more:") {
		t.Errorf("with four lines free every key shows:\n%s", got)
	}
	if got := wrapKeys(keys, 80, 1); len(got) != 1 || !strings.HasSuffix(got[0], "more: ? shows every key") || lipgloss.Width(got[0]) > 80 {
		t.Errorf("with one line, the keys that do not fit are said: %q", got)
	}
}

// A dead node's row at 80 columns says its whole state in short forms ("NotRdy,SD",
// "dis/forced"), where it read "NotReady…" and "disabled/fo…".
func TestADeadNodesRowIsWholeAt80Columns(t *testing.T) {
	m := newModel(t, 4, 80, 24)
	inv := inventory(4)
	inv.Nodes[1].Kube.Ready, inv.Nodes[1].Kube.Schedulable = false, false
	inv.Nodes[1].Compute.Enabled, inv.Nodes[1].Compute.Up, inv.Nodes[1].Compute.ForcedDown = false, false, true
	next, _ := m.Update(inventoryMsg{inv: inv})
	v := next.(Model).View()
	if !strings.Contains(v, "NotRdy,SD") || !strings.Contains(v, "dis/forced") || strings.Contains(v, "NotReady…") || strings.Contains(v, "/fo…") {
		t.Errorf("a dead node's row at 80 columns:\n%s", v)
	}
	if !strings.Contains(v, "enabled/up") { // a live node's state fits whole, unchanged
		t.Errorf("a live node's row at 80 columns:\n%s", v)
	}
}

// A VM whose owner asks it to stay reads "stays: asked", never its status ("stays: ACTIVE").
func TestAVMAskingToStayIsSaidSo(t *testing.T) {
	vm := model.VM{Name: "db", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays"}
	if got := moveOf(vm, policy.Options{}); got != "stays: asked" {
		t.Errorf("moveOf a VM asking to stay = %q", got)
	}
}

// An uncordon bringing VMs home runs a migrate a VM inside it: the view stays the uncordon's,
// running until the uncordon ends (it read "migrate compute-0 … done" while the next VM was
// still on its way home).
func TestAReturnsMigrationsAreStepsOfTheUncordon(t *testing.T) {
	ops_ := newOperations()
	up := model.Plan{Op: model.OpUncordon, Node: "c0", Steps: []model.Step{{Kind: model.StepUncordon}, {Kind: model.StepReturnVMs}}}
	ops_.add("c0", up, t0, nil)
	ended := false
	for _, ev := range []ops.Event{
		ops.NewPlanReady(t0, up),
		ops.NewPlanReady(t0, model.Plan{Op: model.OpMigrate, Node: "c0", VM: "vm-a"}),
		ops.NewRunDone(t0, ops.Report{Op: model.OpMigrate, Node: "c0", Result: ops.ResultDone}),
		ops.NewPlanReady(t0, model.Plan{Op: model.OpMigrate, Node: "c0", VM: "vm-b"}),
	} {
		ended = ended || ops_.record(tagged{ev: ev, key: "c0"}, t0)
	}
	v := ops_.views["c0"]
	if ended || v.finished() || v.plan.Op != model.OpUncordon {
		t.Fatalf("one VM home: ended %v, finished %v, shown as %s", ended, v.finished(), v.plan.Op)
	}
	if !ops_.record(tagged{ev: ops.NewRunDone(t0, ops.Report{Op: model.OpUncordon, Node: "c0", Result: ops.ResultDone}), key: "c0"}, t0) || !v.finished() {
		t.Error("the uncordon's own end does not end its view")
	}
}

// An operation's view says only what its operation does: an uncordon shows no "no VMs to
// move" nor "pods: 0/0 gone"; a rebuild reads "rebuilding", not "rebuild rebuilding".
func TestAnOperationViewSaysWhatItsOperationDoes(t *testing.T) {
	keys := DefaultKeys()
	st := DefaultStyles()
	s := &shared{keys: &keys, st: &st, width: 100, height: 30, ops: newOperations()}
	uncordon := model.Plan{Op: model.OpUncordon, Node: "c0", Steps: []model.Step{{Kind: model.StepEnableCompute}, {Kind: model.StepUncordon}}}
	s.ops.add("uncordon/c0", uncordon, t0, nil)
	s.shownOp = "uncordon/c0"
	p := &opPane{}
	if v := p.view(s); strings.Contains(v, "no VMs to move") || strings.Contains(v, "pods: 0/0") {
		t.Errorf("an uncordon's view:\n%s", v)
	}
	recover := model.Plan{Op: model.OpRecover, Node: "c1", Steps: []model.Step{{Kind: model.StepRebuildVMs}}}
	s.ops.add("recover/c1", recover, t0, nil)
	s.ops.views["recover/c1"].record(ops.NewMigrationEvent(t0, "c1", ops.MigrationEvent{VM: "vm-a", VMID: "id-a", Method: model.MoveRebuild, State: "rebuilding", Task: model.TaskRebuilding, Source: "c1"}))
	s.shownOp = "recover/c1"
	p = &opPane{}
	if v := p.view(s); strings.Contains(v, "rebuild rebuilding") || !strings.Contains(v, "rebuilding") {
		t.Errorf("a recovery's view:\n%s", v)
	}
}

// esc from a campaign's node operation goes back to its campaign, not to the node list.
func TestEscFromACampaignsOperationGoesToTheCampaign(t *testing.T) {
	m := newModel(t, 4, 100, 30)
	m.s.ops.add("evacuate/compute-1", model.Plan{Op: model.OpEvacuate, Node: "compute-1"}, t0, nil)
	m.s.ops.views["evacuate/compute-1"].campaign = true
	m.s.shownOp = "evacuate/compute-1"
	m = m.goTo(&opPane{})
	if got := press(m, "esc"); !on[*campaignPane](&got) {
		t.Errorf("esc from a campaign's operation went to %v", screenOf(got))
	}
}

// f acts on the VM ▸ marks: the cursor that follows the VM on the move is the one f reads,
// not a stale first row.
func TestForceCompleteActsWhereTheCursorIsShown(t *testing.T) {
	keys := DefaultKeys()
	st := DefaultStyles()
	s := &shared{keys: &keys, st: &st, width: 100, height: 30, ops: newOperations()}
	s.ops.add("evacuate/c0", model.Plan{Op: model.OpEvacuate, Node: "c0", Steps: []model.Step{{Kind: model.StepMigrateVMs}}}, t0, nil)
	v := s.ops.views["evacuate/c0"]
	v.record(ops.NewMigrationEvent(t0, "c0", ops.MigrationEvent{VM: "vm-a", VMID: "id-a", Method: model.MoveLive, State: ops.MigCompleted, Source: "c0"}))
	v.record(ops.NewMigrationEvent(t0, "c0", ops.MigrationEvent{VM: "vm-b", VMID: "id-b", Method: model.MoveLive, State: ops.MigRunning, Source: "c0"}))
	s.shownOp = "evacuate/c0"
	p := &opPane{}
	a := p.forceComplete(s, v)
	if a.disabled != "" || a.do == nil {
		t.Fatalf("f with ▸ on the running vm-b: disabled %q", a.disabled)
	}
	if q, ok := a.do().(asking); !ok || !strings.Contains(q.question, "vm-b") {
		t.Errorf("f asks about %+v, want vm-b", a.do())
	}
}

// C answers at once: the campaign is planned in the background and the screen says so.
func TestACampaignProposalAnswersAtOnce(t *testing.T) {
	m := newModel(t, 4, 100, 30)
	m.eng = &ops.Engine{} // the proposal's Cmd is not run here
	m = press(m, "space", "C")
	if !strings.HasPrefix(m.status, "planning a campaign over 1 node(s)") {
		t.Errorf("C: status %q", m.status)
	}
	// Once the proposal is on screen, "planning…" is no longer said.
	if next, _ := m.campaignReady(campaignReady{}); next.(Model).status != "" {
		t.Errorf("the proposal on screen, the status still says %q", next.(Model).status)
	}
}

// Waiting for the operations with a bound leaves nothing behind when the bound passes (each
// timed-out wait left a goroutine blocked on the batches for as long as they ran), and ends
// once the last batch has.
func TestABoundedWaitLeavesNoGoroutine(t *testing.T) {
	o := newOperations()
	done := o.begin()
	before := runtime.NumGoroutine()
	for range 100 {
		o.wait(time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after-before >= 50 {
		t.Errorf("%d goroutines after 100 timed-out waits, %d before", after, before)
	}
	done()
	done() // twice: counted once
	finished := make(chan struct{})
	go func() { o.wait(time.Minute); close(finished) }()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return once the batch ended")
	}
}
