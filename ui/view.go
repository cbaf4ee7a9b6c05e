package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ui/text"
)

// View renders the current screen: the header, the pane on screen, the footer. It only
// formats state: no I/O, no clock, no sorting of the whole inventory.
func (m Model) View() string {
	s := &m.s
	var body string
	switch m.screen {
	case detailScreen:
		body = m.detail.view(s)
	case opScreen:
		body = m.op.view(s)
	case confirmScreen:
		body = m.confirm.view(s)
	case helpScreen:
		body = helpView(s)
	case quitScreen:
		body = quitView(s)
	case victimsScreen:
		body = m.victims.view(s)
	case campaignScreen:
		body = m.campaign.view(s)
	default:
		body = m.nodes.view(s)
	}
	return m.header() + "\n" + body + "\n" + m.footer()
}

func (m Model) header() string {
	s := &m.s
	title := s.st.Title.Render("drainctl")
	if s.opts.Title != "" {
		title += s.st.Muted.Render(" · " + s.opts.Title)
	}
	info := fmt.Sprintf(" · %d nodes · %d VMs · %d pods", len(s.inv.Nodes), s.totalVMs, s.totalPods)
	if !s.inv.NovaConfigured && s.loaded {
		info += " · Nova not configured"
	}
	if s.opts.ReadOnly {
		info += " · read-only"
	}
	switch {
	case s.invErr != nil:
		info += " · " + s.st.Error.Render("refresh failed: "+firstLine(text.SafeErr(s.invErr)))
	case !s.loaded:
		info += " · loading…"
	}
	return truncate(title+s.st.Muted.Render(info), s.width)
}

func (m Model) footer() string {
	s := &m.s
	var status string
	if m.status != "" {
		style := s.st.Muted
		if m.statusBad {
			style = s.st.Warn
		}
		status = style.Render(truncate(m.status, s.width)) + "\n"
	}
	k := s.keys
	var keys []Binding
	switch m.screen {
	case nodesScreen:
		keys = []Binding{k.Up, k.Enter, k.Filter, k.Select, k.Cordon, k.Evacuate, k.Uncordon, k.Victims, k.Operations, k.Help, k.Quit}
	case victimsScreen:
		keys = []Binding{k.Up, k.Evacuate, k.Back, k.Help}
	case detailScreen:
		keys = []Binding{k.Up, k.Select, k.Migrate, k.Evacuate, k.Cordon, k.Back, k.Help}
	case opScreen:
		keys = []Binding{k.Up, k.ForceComplete, k.Abort, k.Rollback, k.Select, k.Back, k.Help}
	case campaignScreen:
		switch {
		case !m.campaign.started:
			keys = []Binding{k.Confirm, k.Back}
		case m.campaign.ended:
			keys = []Binding{k.Enter, k.Back, k.Help}
		default:
			keys = []Binding{k.Pause, k.Enter, k.Back, k.Help}
		}
	case confirmScreen:
		keys = []Binding{k.Confirm, k.ToggleForce, k.ToggleEmptyDir, k.ToggleEviction, k.ToggleLastNode, k.Back}
		switch p := m.confirm.pending; {
		case p != nil && p.maintenance != "":
			keys = []Binding{k.Confirm, k.Back}
		case p != nil && p.op == model.OpMigrate:
			keys = []Binding{k.Confirm, k.Target, k.Back}
		}
	default:
		keys = []Binding{k.Back}
	}
	parts := make([]string, 0, len(keys))
	for _, b := range keys {
		if !b.Enabled() {
			continue
		}
		h := b.Help()
		parts = append(parts, s.st.Header.Render(h.Key)+" "+s.st.Muted.Render(h.Desc))
	}
	if m.nodes.editing {
		return status + m.nodes.filter.View()
	}
	return status + truncate(strings.Join(parts, "  "), s.width)
}

func pad(s string, w int) string {
	s = truncate(s, w)
	if n := lipgloss.Width(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// fit is cluster text made Safe, then cut to w columns: the width is measured on what the
// terminal will show.
func fit(s string, w int) string { return truncate(text.Safe(s), w) }

func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r)) > w-1 {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
