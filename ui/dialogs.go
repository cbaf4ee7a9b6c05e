package ui

import (
	"fmt"
	"io"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// The help and quit screens and the yes/no question: modal panes.

// helpPane is the help, scrolled: movement keys scroll it, any other key goes back.
type helpPane struct{ offset int }

func (p *helpPane) modal() {}

func (p *helpPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	if scrollKey(msg, s, &p.offset, helpView(s), p.rows(s)) {
		return nil, true
	}
	p.offset = 0
	return goBack{}, true
}

func (p *helpPane) rows(s *shared) int { return max(3, s.height-3) }

func (p *helpPane) bindings(s *shared) []action { return []action{show(s.keys.Back)} }

func (p *helpPane) view(s *shared) string {
	return scrolled(helpView(s), &p.offset, p.rows(s), s.st)
}

// helpView is generated from the key map.
func helpView(s *shared) string {
	titles := []string{
		"Move and select",
		"Operations (destructive: confirmed first)",
		"Views",
		"In a confirmation",
		"Quitting while operations run",
	}
	var b strings.Builder
	for i, g := range s.keys.groups() {
		b.WriteString(s.st.Header.Render(titles[i]) + "\n")
		for _, k := range g {
			h := k.Help()
			desc := h.Desc
			if !k.Enabled() {
				desc += " (read-only: off)"
			} else if k.Dangerous {
				desc += " ⚠"
			}
			// a long help continues under its own start, never cut at the screen's edge
			for i, l := range wrap(desc, max(20, s.width-11)) {
				key := h.Key
				if i > 0 {
					key, l = "", strings.TrimLeft(l, " ")
				}
				b.WriteString(fmt.Sprintf("  %-8s %s\n", key, l))
			}
		}
	}
	if s.opts.Machines != nil { // the demo's own commands, which a real cluster has not
		b.WriteString(s.st.Header.Render("The demo's cluster") + "\n")
		for _, l := range demoCommands {
			b.WriteString("  " + l + "\n")
		}
	}
	b.WriteString(s.st.Muted.Render("j/k scroll · any other key goes back"))
	return b.String()
}

// demoCommands are the demo's own `:` commands, as help lists them.
var demoCommands = []string{
	":kill NODE        its machine dies (recovered by itself after not_ready_for and heartbeat_timeout)",
	":revive NODE      its machine comes back",
	":condition NODE TYPE [off]   it reports a condition ([proactive]: e.g. KernelDeadlock)",
	":reserve NODE [off]          it is labelled the failover reserve",
}

// quitPane: wait for the operations, abort them, or leave them recorded to resume.
type quitPane struct{}

func (quitPane) modal() {}

func (quitPane) update(tea.KeyMsg, *shared) (intent, bool) { return nil, false }

func (quitPane) bindings(s *shared) []action {
	k := s.keys
	return []action{
		{key: k.QuitWait, hidden: true, do: func() intent { return quitWait{} }},
		{key: k.QuitLeave, hidden: true, do: func() intent { return quitLeave{} }},
		{key: k.QuitAbort, hidden: true, do: func() intent { return quitAbort{} }},
		{key: k.Interrupt, hidden: true, do: func() intent { return quitNow{} }},
		show(k.Back),
	}
}

func (quitPane) view(s *shared) string { return quitView(s) }

func quitView(s *shared) string {
	var running []string
	campaign := text.Sprintf("campaign %s", s.ops.campaignName)
	for _, n := range s.ops.runningKeys() {
		v := s.ops.views[n]
		line := string(v.plan.Op) + " " + text.Safe(n)
		if v.campaign { // the campaign stops with its node's operation
			line += " (a node of " + campaign + ")"
		}
		running = append(running, line)
	}
	if s.ops.campaignCancel != nil && len(running) == 0 {
		running = append(running, "a "+campaign+" (between two of its nodes)")
	}
	k := s.keys
	var b strings.Builder
	b.WriteString(s.st.Warn.Width(s.width).Render("Still running: "+strings.Join(running, ", ")) + "\n\n")
	for _, c := range []struct {
		b    Binding
		text string
	}{{k.QuitWait, "wait for it (go back)"}, {k.QuitAbort, "abort it (abort its migrations), then quit"},
		{k.QuitLeave, "leave it: stop at a safe point, recorded on the node; the same command resumes it"}} {
		if c.b.Enabled() {
			b.WriteString(truncate(fmt.Sprintf("  %s  %s", c.b.Keys()[0], c.text), s.width) + "\n")
		}
	}
	return b.String()
}

// askPane is a yes/no question before one destructive action that has no plan of its own
// (force-complete): the question says what will happen, y does it, anything else goes back.
type askPane struct {
	question string
	yes      intent
}

func (p *askPane) modal() {}

// update: y answers yes, any other key no.
func (p *askPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	if matches(msg, s.keys.Confirm) {
		return answered{p.yes}, true
	}
	return answered{}, true
}

func (p *askPane) bindings(s *shared) []action { return []action{show(s.keys.Back)} }

func (p *askPane) view(s *shared) string {
	k := s.keys
	return s.st.Warn.Width(s.width).Render(p.question) + "\n\n" + // wrapped: it must be read whole
		fmt.Sprintf("  %s  yes, do it\n  %s  no, go back", k.Confirm.Keys()[0], k.Cancel.Keys()[0])
}

// summary prints, once the TUI has closed and its operations have stopped, each operation
// that did not end done: where it stands and the command that resumes or undoes it, aimed
// at the cluster on screen. It returns how many it listed.
func (m Model) summary(w io.Writer) int {
	drainctl := m.resumeCommand()
	for _, ev := range m.bus.drain() { // what the operations reported while they stopped
		m.s.ops.record(ev, m.s.opts.Now())
	}
	var lines []string
	for _, key := range m.s.ops.order {
		v := m.s.ops.views[key]
		target := ops.Works(v.plan)
		resume := string(v.plan.Op) + " " + text.ShellWord(target)
		if v.flags != "" {
			resume += " " + v.flags
		}
		switch {
		case v.campaign && (v.report == nil || v.report.Result == ops.ResultInterrupted):
			// Its campaign's command (below) resumes it, with the campaign's options.
			lines = append(
				lines,
				text.Sprintf(
					"  %s %s (a node of campaign %s): interrupted at %s; the campaign's command below resumes it, or undo: "+
						"%s --auto rollback %s",
					v.plan.Op,
					target,
					m.s.ops.campaignName,
					orDash(string(v.step)),
					drainctl,
					text.ShellWord(v.plan.Node),
				),
			)
		case v.report == nil:
			lines = append(lines, text.Sprintf("  %s %s: still stopping when drainctl exited (its journal on the node says where); "+
				"resume: %s --auto %s", v.plan.Op, target, drainctl, resume))
		case v.report.Result == ops.ResultInterrupted:
			lines = append(lines, text.Sprintf("  %s %s: interrupted at %s; resume: %s --auto %s, or undo: %s --auto rollback %s",
				v.plan.Op, target, orDash(string(v.step)), drainctl, resume, drainctl, text.ShellWord(v.plan.Node)))
		case v.report.Result == ops.ResultFailed:
			lines = append(lines, text.Sprintf("  %s %s: failed: %s; see %s --auto plan %s, or undo: %s --auto rollback %s",
				v.plan.Op, target, firstLine(v.report.Error), drainctl, resume, drainctl, text.ShellWord(v.plan.Node)))
		}
	}
	if c := m.s.campaign; c.run != nil && c.started {
		if r := c.run.Record(); r.State != model.CampaignDone {
			done, _, _ := r.Count()
			var nodes []string
			for _, n := range r.Nodes {
				nodes = append(nodes, text.ShellWord(n.Name))
			}
			resume := strings.Join(append(nodes, campaignFlags(c.opts)...), " ") // with the options it ran with
			lines = append(lines, text.Sprintf("  campaign %s: %s, %d of %d nodes done; resume: %s --auto roll %s",
				r.Name, r.State, done, len(r.Nodes), drainctl, resume))
		}
	}
	if len(lines) == 0 {
		return 0
	}
	fmt.Fprintln(w, "drainctl: left unfinished:")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	if m.s.opts.Where.Demo {
		fmt.Fprintln(
			w,
			"drainctl: the demo's simulated cluster ended with this process: these commands would start a new demo, not resume this one",
		)
	}
	return len(lines)
}

// resumeCommand is drainctl as it reaches the cluster on screen: the options it was started
// with, the context now shown (after any :ctx), --demo in the demo.
func (m Model) resumeCommand() string {
	c := firstNonEmpty(m.s.opts.Command, "drainctl")
	if m.s.opts.Where.Demo {
		return c + " --demo"
	}
	if ctx := m.s.opts.Where.KubeContext; ctx != "" {
		c += " --context " + text.ShellWord(ctx)
	}
	return c
}
