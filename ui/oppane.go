package ui

import (
	"fmt"
	"github.com/charmbracelet/lipgloss"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/progress"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// The operation view's pane: what opView (operation.go) knows of one operation, drawn as a
// progress pane per VM, the pods and the log, with the keys that act on it.

// opPane shows one operation: a progress pane per VM, the pods, the log.
type opPane struct {
	listCursor     // the VM under the cursor
	back       int // how many log lines the log is scrolled back (pgup/pgdn); 0: the newest
	// moved: the operator moved the cursor. Until then it follows the first VM on the move,
	// so that the migrating VM is on screen however many wait before it (80x24).
	moved bool
}

func (p *opPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	k := s.keys
	switch { // page up and down scroll the log; the cursor is on the VMs
	case matches(msg, k.PageUp):
		p.back += s.pageSize() / 2
		return nil, true
	case matches(msg, k.PageDown):
		p.back = max(0, p.back-s.pageSize()/2)
		return nil, true
	}
	n := 0
	if v := s.ops.views[s.shownOp]; v != nil {
		n = len(v.vmOrder)
		p.follow(v) // a first move starts from where ▸ is shown
	}
	moved := p.move(msg, s, n)
	p.moved = p.moved || moved
	return nil, moved
}

// follow keeps the cursor on the first VM on the move until the operator moves it: the
// view, f and the keys all read the cursor from here, so ▸ is where f acts.
func (p *opPane) follow(v *opView) {
	if i := moving(v); !p.moved && i >= 0 {
		p.cursor = i
	}
}

// moving is the first VM whose move is under way (-1: none).
func moving(v *opView) int {
	for i, id := range v.vmOrder {
		switch v.vms[id].state {
		case "", ops.MigCompleted, ops.MigFailed, ops.MigAborted, ops.MigSkipped, ops.MigInterrupted, ops.MigReverted,
			"pending", ops.MigWaiting:
		default:
			return i
		}
	}
	return -1
}

// bindings: abort and rollback act on the node of the operation shown (the confirmation
// names it); in the nodes list they act on every selected node.
func (p *opPane) bindings(s *shared) []action {
	k := s.keys
	v := s.ops.views[s.shownOp]
	node, none := "", "no operation shown"
	if v != nil {
		node, none = v.plan.Node, ""
	}
	one := ""
	if len(s.ops.order) < 2 {
		one = "one operation only: no next one to show"
	}
	return []action{
		show(k.Up),
		p.forceComplete(s, v),
		{key: k.Abort, disabled: none, do: func() intent { return propose{model.OpAbort, []string{node}} }},
		{key: k.Rollback, disabled: none, do: func() intent { return propose{model.OpRollback, []string{node}} }},
		{key: k.NextOp, hidden: len(s.ops.order) < 2, disabled: one, do: func() intent { // cycle through the operations
			for i, n := range s.ops.order {
				if n == s.shownOp {
					s.shownOp = s.ops.order[(i+1)%len(s.ops.order)]
					break
				}
			}
			return nil
		}},
		{key: k.Back, do: func() intent {
			if v != nil && v.campaign { // a campaign's node: back to its campaign, not the node list
				return goTo{&campaignPane{}}
			}
			return goHome{}
		}},
		show(k.Help),
	}
}

// forceComplete is f: asks first, for the running migration under the cursor.
func (p *opPane) forceComplete(s *shared, v *opView) action {
	a := action{key: s.keys.ForceComplete}
	if v != nil {
		p.follow(v) // f acts where ▸ is shown
	}
	if v == nil || p.cursor >= len(v.vmOrder) {
		a.disabled = "no migration under the cursor"
		return a
	}
	vm := v.vms[v.vmOrder[p.cursor]]
	if vm.state != ops.MigRunning {
		a.disabled = text.Sprintf("%s is %s: only a running migration can be force-completed", vm.name, vm.state)
		return a
	}
	a.do = func() intent {
		left := ""
		if vm.total > 0 {
			left = text.Sprintf(", with %s of memory still to copy", text.Bytes(vm.remaining))
		}
		return asking{question: text.Sprintf("Force-complete the live migration of %s (%s → %s)%s? Nova pauses the guest "+
			"until the copy ends: its workload stops for that time.",
			vm.name, vm.source, orDash(vm.dest), left), yes: forceVM{vm.id, vm.name}}
	}
	return a
}

func (p *opPane) view(s *shared) string {
	st, width := s.st, s.width
	v, ok := s.ops.views[s.shownOp]
	others := operationsElsewhere(s)
	if !ok {
		if len(others) == 0 {
			return st.Muted.Render("no operation")
		}
		var b strings.Builder
		b.WriteString(st.Muted.Render("no operation started here") + "\n\n")
		writeElsewhere(&b, s, others, max(1, s.height-8))
		return strings.TrimRight(b.String(), "\n")
	}
	p.follow(v)
	state := "running: " + string(v.step)
	switch {
	case v.report != nil:
		state = string(v.report.Result)
		if v.report.Error != "" {
			state += ": " + text.Safe(v.report.Error)
		}
		if n := len(v.report.Left); n > 0 && v.report.Error == "" {
			state += fmt.Sprintf(", NOT EMPTY: %d VM(s) left on purpose", n)
		}
		if away := notHome(v.report.Returns); len(away) > 0 { // --return-vms: which stay away, and why
			state += fmt.Sprintf(", %d of %d VM(s) not brought home: %s", len(away), len(v.report.Returns), strings.Join(away, "; "))
		}
	case v.queued:
		state = "queued: waiting for a slot (concurrency.nodes)"
	}
	var b strings.Builder
	title := text.Sprintf("%s %s", v.plan.Op, v.key)
	if len(s.ops.order) > 1 {
		title += st.Muted.Render(
			fmt.Sprintf("  (%d of %d operations, space for the next)", slices.Index(s.ops.order, s.shownOp)+1, len(s.ops.order)),
		)
	}
	b.WriteString(st.Title.Render(title) + "  " + resultStyle(s, v).Render(truncate(state, max(10, width-len(title)-2))) + "\n")
	budget := s.height - 6
	if len(others) > 0 { // what other processes run, under this view's own: a few lines at most
		rows := min(len(others), 3)
		writeElsewhere(&b, s, others, rows)
		budget -= rows + 1
	}
	vmLines := 0
	barW := max(10, min(40, width-50))
	bar := progress.New(progress.WithWidth(barW), progress.WithoutPercentage(), progress.WithSolidFill("#5fafff"))
	// The VMs that fit, scrolled so that the cursor's VM (the one f acts on) is among them.
	shown := max(1, (budget*2/3)/2)
	first := 0
	if p.cursor >= shown {
		first = p.cursor - shown + 1
	}
	if first > 0 {
		b.WriteString(st.Muted.Render(fmt.Sprintf("  … %d VMs above", first)) + "\n") // a newline inside Render pads the next line
		vmLines++
	}
	for i := first; i < len(v.vmOrder); i++ {
		id := v.vmOrder[i]
		if i-first >= shown {
			b.WriteString(st.Muted.Render(fmt.Sprintf("  … %d more VMs", len(v.vmOrder)-i)) + "\n")
			vmLines++
			break
		}
		vm := v.vms[id]
		cursor := marks(i == p.cursor, false)
		pct := 0.0
		if vm.total > 0 {
			pct = float64(vm.total-vm.remaining) / float64(vm.total)
		}
		if vm.state == ops.MigCompleted {
			pct = 1
		}
		route := text.Safe(vm.source + " → " + orDash(vm.dest))
		if vm.state == ops.MigSkipped { // it goes nowhere: no arrow to an unknown host
			route = text.Safe("stays on " + vm.source)
		}
		line1 := fmt.Sprintf(
			"%s%-14s %-15s %s",
			cursor,
			fit(vm.name, 14),
			vmStateStyle(s, vm).Render(fit(string(vm.state), 15)),
			truncate(route, max(10, width-34)),
		)
		detail := ""
		if vm.total > 0 && vm.state == ops.MigRunning {
			detail = copyDetail(vm, st)
		} else if vm.msg != "" {
			detail = text.Safe(vm.msg)
		}
		line2 := fmt.Sprintf("  %s %3.0f%%  %s", bar.ViewAs(pct), pct*100, detail)
		// Nothing to copy yet: why it waits matters more than an empty bar.
		if vm.state != ops.MigRunning && vm.total == 0 && lipgloss.Width(line2) > width {
			line2 = "  " + detail
		}
		switch f := ops.MoveFactsOf(vm.method); f.Pane {
		case model.PaneColdSteps: // Nova tells a cold move's phase, not its bytes
			line2 = "  " + coldPhase(vm) + "  " + detail
		case model.PaneRebuild: // a rebuild copies nothing: its state is all there is
			line2 = "  " + rebuildPhase(vm) + "  " + detail
		case model.PaneWord: // it goes nowhere
			line2 = "  " + f.Word + "  " + detail
		}
		b.WriteString(truncate(line1, width) + "\n" + truncate(line2, width) + "\n")
		vmLines += 2
	}
	empties := movesAnything(v.plan) // an uncordon moves nothing: no "no VMs to move", no "0/0 pods"
	if len(v.vmOrder) == 0 && empties {
		b.WriteString(st.Muted.Render("  no VMs to move") + "\n")
		vmLines++
	}
	if empties || len(v.podKeys) > 0 {
		b.WriteString(truncate(podSummary(v), width) + "\n")
	}
	rows := max(1, budget-vmLines-1)
	back := min(p.back, max(0, len(v.log)-rows))
	if back > 0 { // scrolled back: say so, and how to come back
		rows--
		b.WriteString(s.st.Muted.Render(fmt.Sprintf("  log scrolled back %d lines · pgdn for newer", back)) + "\n")
	}
	writeLog(&b, v.log[:len(v.log)-back], rows, s)
	return strings.TrimRight(b.String(), "\n")
}

// movesAnything says whether the plan moves VMs or pods off its node (an evacuation, a
// recovery), unlike an uncordon or a cordon.
func movesAnything(p model.Plan) bool {
	for _, st := range p.Steps {
		switch st.Kind {
		case model.StepMigrateVMs, model.StepRebuildVMs, model.StepEvictPods, model.StepPodsGone:
			return true
		}
	}
	return false
}

// rebuildPhase says where a rebuild elsewhere stands: "rebuilding", "rebuilt", "rebuild failed".
func rebuildPhase(vm *vmView) string {
	switch {
	case vm.state == ops.MigCompleted:
		return "rebuilt"
	case vm.state == ops.MigFailed:
		return "rebuild failed"
	case vm.task == model.TaskRebuilding || vm.state == ops.MigRebuilding: // Nova's word for its step
		return string(vm.state)
	}
	return "rebuild " + string(vm.state)
}

// copyDetail says a live copy's progress by what the bar shows (memory no longer to copy), the
// ETA with the rate remaining falls at (its own), then the link's; bytes sent beyond the
// memory are the pages the guest rewrote, said as such rather than as "copied" over the total.
func copyDetail(vm *vmView, st *Styles) string {
	d := fmt.Sprintf("%s/%s  %s left", text.Bytes(vm.total-vm.remaining), text.Bytes(vm.total), text.Bytes(vm.remaining))
	if vm.stalled {
		d += "  " + st.Error.Render("STALLED")
	}
	if vm.asked != "" { // the copy goes on until Nova ends it: no ETA to give
		d += "  " + text.Safe(vm.asked)
	} else {
		d += "  " + text.CopyETA(vm.eta, vm.converge, text.MigrationRate)
	}
	d += "  link " + text.MigrationRate(vm.rate)
	if vm.processed > vm.total {
		d += fmt.Sprintf("  sent %s (%.1f× its memory: rewritten pages)", text.Bytes(vm.processed), float64(vm.processed)/float64(vm.total))
	}
	return d
}

// coldPhase says where a cold move stands: "cold move 3/6 resize_migrated". Its steps are the
// server's tasks (Nova's words, shown as Nova wrote them), then the engine's confirm.
func coldPhase(vm *vmView) string {
	steps := model.ColdSteps + 2
	switch {
	case vm.state == ops.MigCompleted:
		return "cold move done"
	case vm.state == "pending", vm.state == ops.MigRequested, vm.state == ops.MigAdopted:
		return "cold move " + string(vm.state)
	case vm.task.ColdStep() > 0:
		return fmt.Sprintf("cold move %d/%d %s", vm.task.ColdStep(), steps, vm.state)
	case vm.state == ops.MigVerifyResize:
		return fmt.Sprintf("cold move %d/%d %s", steps-1, steps, vm.state)
	case vm.state == ops.MigConfirming:
		return fmt.Sprintf("cold move %d/%d %s", steps, steps, vm.state)
	}
	return "cold move: " + string(vm.state)
}

func podSummary(v *opView) string {
	states := map[ops.PodState]int{}
	var blocked []string
	for _, k := range v.podKeys {
		p := v.pods[k]
		states[p.state]++
		if p.state == ops.PodBlocked {
			blocked = append(blocked, text.Sprintf("%s (PDB %s)", k, p.pdb))
		}
	}
	_, _, done, total := v.counts()
	s := fmt.Sprintf("pods: %d/%d gone", done, total)
	if n := states[ops.PodEvicting] + states[ops.PodEvicted]; n > 0 {
		s += fmt.Sprintf(", %d terminating", n)
	}
	if n := states[ops.PodFailed]; n > 0 {
		s += fmt.Sprintf(", %d failed", n)
	}
	if len(blocked) > 0 {
		s += ", waiting: " + strings.Join(blocked, ", ")
	}
	return s
}

func resultStyle(s *shared, v *opView) lipglossStyle {
	switch {
	case v.report == nil:
		return s.st.Accent
	case v.report.Result == ops.ResultDone:
		return s.st.OK
	case v.report.Result == ops.ResultInterrupted:
		return s.st.Warn
	}
	return s.st.Error
}

func vmStateStyle(s *shared, vm *vmView) lipglossStyle {
	switch vm.state {
	case ops.MigCompleted:
		return s.st.OK
	case ops.MigFailed, ops.MigAborted:
		return s.st.Error
	case ops.MigRunning, ops.MigState(model.MigrationPreparing), ops.MigState(model.MigrationQueued), ops.MigRequested,
		ops.MigState(model.MigrationPostMigrating), ops.MigForced:
		return s.st.Accent
	}
	return s.st.Muted
}

func orDash(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// notHome are the VMs an uncordon's return left away, each with why.
func notHome(returns []model.VMReturn) []string {
	var out []string
	for _, r := range returns {
		if !r.Home {
			out = append(out, text.Safe(r.Name)+": "+text.Safe(r.Why))
		}
	}
	return out
}
