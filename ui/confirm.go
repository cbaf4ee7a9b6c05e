package ui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ui/text"
)

// confirmPane is a plan waiting for y: its steps, every blocker, the overrides toggled.
type confirmPane struct {
	pending *pending
}

func (p *confirmPane) update(msg tea.KeyMsg, s *shared) intent {
	k := s.keys
	pd := p.pending
	if matches(msg, k.Cancel) {
		return goBack{}
	}
	if pd.maintenance != "" { // the controller's policy applies: nothing to toggle here
		if matches(msg, k.Confirm) {
			return maintain{pd}
		}
		return nil
	}
	toggle := func(f func(*policy.Options)) intent {
		next := *pd
		f(&next.ro.Policy)
		next.ro.ForceCompute = next.ro.Policy.Force
		return replan{&next}
	}
	switch {
	case matches(msg, k.ToggleForce):
		return toggle(func(o *policy.Options) { o.Force = !o.Force })
	case matches(msg, k.ToggleEmptyDir):
		return toggle(func(o *policy.Options) { o.DeleteEmptyDirData = !o.DeleteEmptyDirData })
	case matches(msg, k.ToggleEviction):
		return toggle(func(o *policy.Options) { o.DisableEviction = !o.DisableEviction })
	case matches(msg, k.ToggleLastNode):
		return toggle(func(o *policy.Options) { o.AllowLastNode = !o.AllowLastNode })
	case matches(msg, k.Target) && pd.op == model.OpMigrate:
		return pickTarget{pd}
	case matches(msg, k.Confirm):
		if pd.err != nil {
			return nil
		}
		if len(pd.batch.Blockers()) > 0 {
			return showStatus{"refused: resolve the blockers or toggle their overrides first", true}
		}
		return runPending{pd}
	}
	return nil
}

// pickTarget: the migration's next destination (the root knows the hosts).
type pickTarget struct{ p *pending }

// view: the plan and its blockers, naming the targets, with the overrides.
func (p *confirmPane) view(s *shared) string {
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
	blocked := false
	if pd.maintenance != "" {
		node := pd.targets[0]
		q := text.Sprintf("Create a NodeMaintenance for %s? The controller will:", node)
		if pd.maintenance == maintainDelete {
			q = text.Sprintf("Delete NodeMaintenance %s? The controller will put %s back:", s.maint[node].Name, node)
		}
		b.WriteString(st.Title.Render(truncate(q, width)) + "\n")
	}
	for _, pl := range pd.batch.Plans {
		summary := text.Safe(pl.Summary())
		question := strings.ToUpper(summary[:1]) + summary[1:] + "?"
		if pd.maintenance != "" {
			question = summary
		}
		b.WriteString(st.Title.Render(truncate(question, width)) + "\n")
		for i, step := range pl.Steps {
			mark := "[ ]"
			if step.Done {
				mark = "[✓]"
			}
			b.WriteString(truncate(text.Sprintf("  %d. %s %-16s %s", i+1, mark, step.Kind, step.Detail), width) + "\n")
		}
		for _, r := range pl.Reasons {
			style := st.Muted
			switch r.Severity {
			case model.Blocks:
				style, blocked = st.Error, true
			case model.Waits:
				style = st.Warn
			}
			what := r.String()
			if pd.maintenance != "" {
				what = r.Object + ": " + r.Message // the controller's policy decides, not this view's toggles
			}
			b.WriteString(style.Render(truncate(text.Sprintf("  %-6s %s", r.Severity, what), width)) + "\n")
		}
	}
	var on []string
	o := pd.ro.Policy
	for _, f := range []struct {
		on   bool
		name string
	}{{o.Force, "--force"}, {o.DeleteEmptyDirData, "--delete-emptydir-data"}, {o.DisableEviction, "--disable-eviction"}, {o.AllowLastNode, "--allow-last-node"}} {
		if f.on {
			on = append(on, f.name)
		}
	}
	if len(on) > 0 {
		b.WriteString(st.Danger.Render("overrides: "+strings.Join(on, " ")) + "\n")
	}
	switch {
	case blocked && pd.maintenance == maintainCreate:
		b.WriteString(st.Warn.Render("The NodeMaintenance will be Failed, retried, until every blocker is resolved.") + "\n")
	case blocked && pd.maintenance == "":
		b.WriteString(st.Warn.Render("Refused until every blocker is resolved or overridden (F, D, E, L toggle the overrides).") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
