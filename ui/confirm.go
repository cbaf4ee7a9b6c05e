package ui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
)

// confirmPane is a plan waiting for y: its steps, every blocker, the overrides toggled.
type confirmPane struct {
	pending *pending
	offset  int       // first line shown, when the plan is taller than the screen
	why     lineInput // the reason being typed (w), for nova-compute's disabled reason
}

func (p *confirmPane) modal() {}

// update takes the reason being typed (w) and the scrolling of a tall plan.
func (p *confirmPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	pd := p.pending
	switch {
	case p.why.typing():
		if _, why, done := p.why.key(msg); done {
			pd.ro.Why = why
			pd.batch.Run.Why = pd.ro.Why // the batch runs with the options it was planned with
		}
	case scrollKey(msg, s, &p.offset, p.body(s), p.rows(s)): // as the footer of a tall plan says
	default:
		return nil, false
	}
	return nil, true
}

// bindings: y runs the plan; the toggles plan it again with an override on or off. A
// NodeMaintenance is the controller's to run under its own policy: nothing to toggle.
func (p *confirmPane) bindings(s *shared) []action {
	k := s.keys
	pd := p.pending
	cancel := action{key: k.Cancel, hidden: true, do: func() intent { return goBack{} }}
	if pd == nil {
		return []action{cancel, show(k.Back)}
	}
	if pd.maintenance != "" {
		return []action{cancel, {key: k.Confirm, do: func() intent { return maintain{pd} }}, show(k.Back)}
	}
	confirm := action{key: k.Confirm, do: func() intent { return runPending{pd} }}
	switch {
	case pd.err != nil:
		confirm.do = nil // the error is on screen: nothing to run
	case len(pd.batch.Blockers()) > 0:
		// y judges the plan again from a fresh read: what refused it a minute ago (a node
		// NotReady for 3 s only) may hold no more. It runs only on a y after that.
		confirm.do = func() intent {
			next := *pd
			next.ro.FromCache, next.rejudged = false, true
			return replan{&next}
		}
	}
	runToggle := func(b Binding, f func(*ops.RunOptions)) action {
		return action{key: b, do: func() intent {
			next := *pd
			f(&next.ro)
			next.ro.FromCache = true // the plan was just read fresh: a toggle re-judges it, at once
			return replan{&next}
		}}
	}
	toggle := func(b Binding, f func(*policy.Options)) action {
		return runToggle(b, func(ro *ops.RunOptions) { f(&ro.Policy); ro.ForceCompute = ro.Policy.Force })
	}
	force := toggle(k.ToggleForce, func(o *policy.Options) { o.Force = !o.Force })
	emptyDir := toggle(k.ToggleEmptyDir, func(o *policy.Options) { o.DeleteEmptyDirData = !o.DeleteEmptyDirData })
	eviction := toggle(k.ToggleEviction, func(o *policy.Options) { o.DisableEviction = !o.DisableEviction })
	lastNode := toggle(k.ToggleLastNode, func(o *policy.Options) { o.AllowLastNode = !o.AllowLastNode })
	cold := toggle(k.ToggleCold, func(o *policy.Options) { o.ColdMigrateRunning = !o.ColdMigrateRunning })
	// S leaves each VM that blocks where it is (by ID, as --skip-vm), whatever override its
	// blocker names (a pinned VM's is a cold move: leaving it is the other way), beside those
	// left already; with no VM blocking, it leaves none again.
	skip := toggle(k.ToggleSkipVMs, func(o *policy.Options) { o.SkipVMs = leaveBlocking(o.SkipVMs, pd.batch.Blockers()) })
	// O moves each VM whose own policy blocks anyway (by ID, as --override-vm-policy), or,
	// given already, none.
	override := toggle(k.ToggleVMPolicy, func(o *policy.Options) {
		if len(o.OverrideVMPolicies) > 0 {
			o.OverrideVMPolicies = nil
			return
		}
		for _, r := range policyBlockers(pd) {
			o.OverrideVMPolicies = append(o.OverrideVMPolicies, firstNonEmpty(r.ObjectID, r.Object))
		}
	})
	why := action{key: k.Why, hidden: true, do: func() intent {
		p.why.open("why", "reason: ", pd.ro.Why, 120)
		return nil
	}}
	kit := confirmKit{pd: pd, keys: k, confirm: confirm, back: show(k.Back), runToggle: runToggle, toggle: toggle,
		force: force, emptyDir: emptyDir, eviction: eviction, lastNode: lastNode, cold: cold, skip: skip, override: override}
	row, ok := confirmRows[pd.op]
	if !ok {
		row = confirmPlain
	}
	out := append([]action{cancel}, row.keys(kit)...)
	// ? shows every key a short screen's line leaves out (a plan is modal: it routes no global key).
	return append(out, why, action{key: k.Help, do: func() intent { return goTo{&helpPane{}} }})
}

func (p *confirmPane) rows(s *shared) int { return max(3, s.height-4) }

// view: the plan and its blockers, naming the targets, with the overrides, scrolled.
func (p *confirmPane) view(s *shared) string {
	if p.why.typing() { // the reason being typed, under the plan however it is scrolled
		return scrolled(p.body(s), &p.offset, p.rows(s)-1, s.st) + "\n" + p.why.view()
	}
	return scrolled(p.body(s), &p.offset, p.rows(s), s.st)
}

// body is the whole plan, before scrolling.
func (p *confirmPane) body(s *shared) string {
	st, width := s.st, s.width
	pd := p.pending
	if pd == nil {
		return ""
	}
	var b strings.Builder
	if pd.err != nil {
		b.WriteString(st.Error.Render("cannot plan: "+text.SafeErr(pd.err)) + "\n")
		return b.String()
	}
	blocked, pinned := false, false
	if pd.maintenance != "" {
		node := pd.targets[0]
		q := text.Sprintf("Create a NodeMaintenance for %s? The controller will:", node)
		if pd.maintenance == maintainDelete {
			q = text.Sprintf("Delete NodeMaintenance %s? The controller will put %s back:", s.maint[node].Name, node)
		}
		b.WriteString(st.Title.Render(truncate(q, width)) + "\n")
	}
	for _, pl := range pd.batch.Plans {
		summary := text.Safe(ops.Summary(pl))
		question := strings.ToUpper(summary[:1]) + summary[1:] + "?"
		if pd.maintenance != "" {
			question = summary
		}
		b.WriteString(st.Title.Render(truncate(question, width)) + "\n")
		for i, step := range pl.Steps {
			b.WriteString(truncate("  "+text.Step(i, step), width) + "\n")
		}
		b.WriteString(vmMoves(pl, st, width))
		for _, r := range pl.Reasons {
			if r.Code == model.LostForGood || r.Code == model.Downtime {
				continue // listed below, all together
			}
			if r.Code == model.VMPinned {
				pinned = true
			}
			style := st.Muted
			switch r.Severity {
			case model.Blocks:
				style, blocked = st.Error, true
			case model.Waits:
				style = st.Warn
			}
			what, remedy := r.Text(), ""
			// A remedy for what blocks, never one already given (F on an ERROR VM leaves it a
			// note: --skip-vm is advice no more); the controller's policy decides for a
			// NodeMaintenance, not this view's toggles.
			if f := text.Flag(r); f != "" && pd.maintenance == "" && r.Severity != model.Notes &&
				!slices.Contains(text.GivenFlags(pd.ro.Policy.Given()), f) {
				remedy = " (use " + f + " to override)"
			}
			// Wrapped, never cut: the reason whole, then its remedy (the flag the operator acts on).
			writeWrapped(&b, width, style, text.Sprintf("  %-6s %s", r.Severity, what)+remedy)
		}
	}
	on := text.GivenFlags(pd.ro.Policy.Given())
	if pd.ro.ConfirmFenced {
		on = append(on, "--confirm-fenced")
	}
	if len(on) > 0 {
		writeWrapped(&b, width, st.Danger, "overrides: "+strings.Join(on, " "))
	}
	var losses, downtime []string
	for _, pl := range pd.batch.Plans {
		for _, r := range pl.Losses() {
			losses = append(losses, "  "+text.Reason(r)) // with the flag that makes it so
		}
		for _, r := range pl.Reasons {
			if r.Code == model.Downtime {
				downtime = append(downtime, text.Sprintf("  %s: %s", r.Object, r.Message))
			}
		}
	}
	if len(downtime) > 0 {
		b.WriteString(st.Danger.Render(fmt.Sprintf("DOWNTIME if you run it (%d):", len(downtime))) + "\n")
		writeWrapped(&b, width, st.Danger, downtime...)
	}
	if len(losses) > 0 {
		b.WriteString(st.Danger.Render(fmt.Sprintf("LOST FOR GOOD if you run it (%d):", len(losses))) + "\n")
		writeWrapped(&b, width, st.Danger, losses...)
	}
	switch {
	case p.why.typing(): // the view pins it under the plan
	case pd.ro.Why != "":
		b.WriteString(truncate(text.Sprintf("reason: %s (goes into nova-compute's disabled reason)", pd.ro.Why), width) + "\n")
	}
	// What refuses it, and the keys that lift it: wrapped, not cut, since at 80 columns the
	// footer cannot list every toggle.
	hint := ""
	switch {
	case blocked && pd.maintenance == maintainCreate:
		hint = "The NodeMaintenance will be Failed, retried, until every blocker is resolved."
	case blocked && confirmRows[pd.op].refused != nil:
		hint = confirmRows[pd.op].refused(pd)
	case blocked && pd.maintenance == "":
		keys := []string{"F, D, E, L toggle the overrides"}
		if pinned {
			keys = append(keys, "M moves pinned VMs cold")
		}
		if skips(pd) {
			keys = append(keys, "S leaves the VMs that block")
		}
		if len(policyBlockers(pd)) > 0 {
			keys = append(keys, "O moves the VMs whose own policy blocks anyway")
		}
		hint = "Refused until every blocker is resolved or overridden (" + strings.Join(keys, "; ") + "; y judges it again)."
	}
	if hint != "" {
		writeWrapped(&b, width, st.Warn, hint)
	}
	return strings.TrimRight(b.String(), "\n")
}

// vmMoves lists how each VM of the plan moves, when not every one moves live by the default
// policy (the step's detail says "live-migrate N VM(s)" then): "  vm-a  cold  8 GiB
// SHUTOFF", and a policy not the default with where it comes from.
func vmMoves(pl model.Plan, st *Styles, width int) string {
	allLive := true
	for _, vm := range pl.VMs {
		allLive = allLive && (ops.MoveFactsOf(vm.Method).Default || vm.Method == "") && text.VMOwnWord(vm) == ""
	}
	if allLive {
		return ""
	}
	var b strings.Builder
	nameW, methodW := 0, 6
	for _, vm := range pl.VMs {
		nameW, methodW = max(nameW, len(vm.Name)), max(methodW, len(vm.Method))
	}
	nameW = min(nameW, 30)
	for _, vm := range pl.VMs {
		style := lipgloss.NewStyle() // every way but the default is worth reading
		switch f := ops.MoveFactsOf(vm.Method); {
		case f.Stays:
			style = st.Warn
		case f.Default || vm.Method == "":
			style = st.Muted
		}
		line := text.Sprintf("     %-*s %-*s %6s  %s", methodW, vm.Method, nameW, fit(vm.Name, nameW), text.Bytes(vm.RAMMB<<20), vm.Status)
		if vm.Disk != "" {
			line += ": " + vm.Disk
		}
		if own := text.VMOwnWord(vm); own != "" {
			line += " · " + own
		}
		b.WriteString(style.Render(truncate(line, width)) + "\n") // cut, marked: the reasons below say it whole
	}
	return b.String()
}

// policyBlockers are the blockers a VM's own maintenance policy makes (O lifts them).
func policyBlockers(pd *pending) []model.Reason {
	var out []model.Reason
	for _, r := range pd.batch.Blockers() {
		if r.Code == model.VMAsksToStay || r.Code == model.VMPolicyUnknown {
			out = append(out, r)
		}
	}
	return out
}

// skips says whether S applies: a VM blocks that --skip-vm would leave, or S was given.
func skips(pd *pending) bool {
	if len(pd.ro.Policy.SkipVMs) > 0 {
		return true
	}
	for _, r := range pd.batch.Blockers() {
		if r.Override == model.OverrideSkipVM {
			return true
		}
	}
	return false
}
