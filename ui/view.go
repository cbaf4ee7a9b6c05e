package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ui/text"
)

// View renders the current screen. It only formats state: no I/O, no clock, no sorting of
// the whole inventory; the nodes table renders only the rows on screen.
func (m Model) View() string {
	var body string
	switch m.screen {
	case detailScreen:
		body = m.detailView()
	case opScreen:
		body = m.opViewText()
	case confirmScreen:
		body = m.confirmView()
	case helpScreen:
		body = m.helpView()
	case quitScreen:
		body = m.quitView()
	case victimsScreen:
		body = m.victimsView()
	default:
		body = m.nodesView()
	}
	return m.header() + "\n" + body + "\n" + m.footer()
}

func (m Model) header() string {
	title := m.st.Title.Render("drainctl")
	if m.opts.Title != "" {
		title += m.st.Muted.Render(" · " + m.opts.Title)
	}
	info := fmt.Sprintf(" · %d nodes · %d VMs · %d pods", len(m.inv.Nodes), m.totalVMs, m.totalPods)
	if !m.inv.NovaConfigured && m.loaded {
		info += " · Nova not configured"
	}
	if m.opts.ReadOnly {
		info += " · read-only"
	}
	switch {
	case m.invErr != nil:
		info += " · " + m.st.Error.Render("refresh failed: "+firstLine(m.invErr.Error()))
	case !m.loaded:
		info += " · loading…"
	}
	return truncate(title+m.st.Muted.Render(info), m.width)
}

func (m Model) footer() string {
	var status string
	if m.status != "" {
		style := m.st.Muted
		if m.statusBad {
			style = m.st.Warn
		}
		status = style.Render(truncate(m.status, m.width)) + "\n"
	}
	k := m.keys
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
	case confirmScreen:
		keys = []Binding{k.Confirm, k.ToggleForce, k.ToggleEmptyDir, k.ToggleEviction, k.ToggleLastNode, k.Back}
		switch {
		case m.pending != nil && m.pending.maintenance != "":
			keys = []Binding{k.Confirm, k.Back}
		case m.pending != nil && m.pending.op == model.OpMigrate:
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
		parts = append(parts, m.st.Header.Render(h.Key)+" "+m.st.Muted.Render(h.Desc))
	}
	if m.editing {
		return status + m.filter.View()
	}
	return status + truncate(strings.Join(parts, "  "), m.width)
}

// column is a table column: a title and a width.
type column struct {
	title string
	width int
}

func (m Model) nodeColumns() []column {
	cols := []column{{"NAME", m.nameWidth}, {"ROLES", 13}, {"K8S", 9}, {"COMPUTE", 12}, {"VCPU", 7}, {"RAM", 11}, {"VMS", 4}, {"PODS", 4}, {"RANK", 4}}
	if m.width < 120 { // narrow terminals: the roles go first
		cols = append(cols[:1], cols[2:]...)
	}
	used := 2
	for _, c := range cols {
		used += c.width + 1
	}
	return append(cols, column{"OPERATION / NOTES", max(10, m.width-used)})
}

func pad(s string, w int) string {
	s = truncate(s, w)
	if n := lipgloss.Width(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

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

func (m Model) nodesView() string {
	if !m.loaded && m.invErr == nil {
		return m.st.Muted.Render("reading the cluster…")
	}
	cols := m.nodeColumns()
	var b strings.Builder
	var head []string
	for _, c := range cols {
		head = append(head, pad(c.title, c.width))
	}
	b.WriteString(m.st.Header.Render("  " + strings.Join(head, " ")))
	b.WriteString("\n")
	height := m.pageSize()
	start := 0
	if m.cursor >= height {
		start = m.cursor - height + 1
	}
	end := min(len(m.rows), start+height)
	for i := start; i < end; i++ {
		n := m.inv.Nodes[m.rows[i]]
		b.WriteString(m.nodeRow(n, cols, i == m.cursor))
		b.WriteString("\n")
	}
	if len(m.rows) == 0 {
		b.WriteString(m.st.Muted.Render("  no node matches the filter"))
		b.WriteString("\n")
	}
	for i := end - start; i < height; i++ {
		b.WriteString("\n")
	}
	pos := fmt.Sprintf("%d/%d", min(m.cursor+1, len(m.rows)), len(m.rows))
	if len(m.selected) > 0 {
		pos += fmt.Sprintf(" · %d selected", len(m.selected))
	}
	if v := m.filter.Value(); v != "" {
		pos += " · filter: " + v
	}
	b.WriteString(m.st.Muted.Render(pos))
	return b.String()
}

func (m Model) nodeRow(n model.Node, cols []column, cursor bool) string {
	mark := "  "
	if m.selected[n.Name] {
		mark = "● "
	}
	mism := n.Mismatches(m.inv.NovaConfigured)
	name := n.Name
	if len(mism) > 0 {
		name = "!" + name
	}
	cells := map[string]string{
		"NAME": name, "ROLES": text.Roles(n), "K8S": kubeShort(n), "COMPUTE": text.Compute(n, m.inv.NovaConfigured),
		"VCPU": text.VCPU(n), "RAM": text.RAM(n), "VMS": text.VMs(n, m.inv.NovaConfigured), "PODS": text.Pods(n),
		"OPERATION / NOTES": m.notes(n, mism), "RANK": rankText(m.rank[n.Name]),
	}
	parts := make([]string, 0, len(cols))
	for _, c := range cols {
		parts = append(parts, pad(cells[c.title], c.width))
	}
	row := mark + strings.Join(parts, " ")
	switch {
	case cursor:
		return m.st.Cursor.Render(row)
	case m.selected[n.Name]:
		return m.st.Selected.Render(row)
	case m.running(n.Name):
		return m.st.Accent.Render(row)
	case len(mism) > 0:
		return m.st.Warn.Render(row)
	}
	return row
}

// shortMismatch is a mismatch in a few words, for a row (the detail screen has the sentence).
var shortMismatch = map[model.MismatchCode]string{
	model.CordonedButEnabled:     "cordoned, compute enabled",
	model.DisabledButSchedulable: "compute disabled, schedulable",
	model.ReadyButComputeDown:    "Ready, compute down",
	model.NoComputeService:       "no compute service",
	model.NoKubeNode:             "no Kubernetes node",
	model.NoHypervisor:           "no hypervisor",
}

var progressive = map[model.OpKind]string{model.OpCordon: "cordoning", model.OpEvacuate: "evacuating",
	model.OpMigrate: "migrating", model.OpUncordon: "uncordoning", model.OpAbort: "aborting", model.OpRollback: "rolling back"}

func rankText(r int) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprint(r)
}

// victimsView: the ranking, cheapest first, and under it every reason of the node under
// the cursor.
func (m Model) victimsView() string {
	var b strings.Builder
	b.WriteString(m.st.Header.Render(pad("  RANK NODE", 7+m.nameWidth)+"   COST  PODS  VMS  VM MEMORY   WHY NOT") + "\n")
	rows := max(3, m.height-12)
	start := 0
	if m.vicCursor >= rows {
		start = m.vicCursor - rows + 1
	}
	for i := start; i < min(len(m.victims), start+rows); i++ {
		v := m.victims[i]
		why := ""
		if len(v.Reasons) > 0 {
			why = v.Reasons[0].Message
		}
		line := fmt.Sprintf("  %4s %s %6.1f  %4d  %3d  %9s   %s", rankText(v.Rank), pad(v.Node, m.nameWidth), v.Cost, v.Pods, v.VMs, text.Bytes(v.VMMemory<<20), why)
		line = truncate(line, m.width)
		switch {
		case i == m.vicCursor:
			line = m.st.Cursor.Render(pad(line, m.width))
		case !v.Candidate:
			line = m.st.Muted.Render(line)
		}
		b.WriteString(line + "\n")
	}
	if m.vicCursor < len(m.victims) {
		v := m.victims[m.vicCursor]
		if v.Candidate {
			b.WriteString(m.st.OK.Render(fmt.Sprintf("%s can go: its pods and VMs fit elsewhere (rank %d); e evacuates it", v.Node, v.Rank)))
		} else {
			b.WriteString(m.st.Warn.Render(v.Node+" cannot go:") + "\n")
			for _, r := range v.Reasons {
				b.WriteString(truncate("  "+r.String(), m.width) + "\n")
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// kubeShort is KubeState with SchedulingDisabled shortened to fit a column.
func kubeShort(n model.Node) string {
	return strings.Replace(text.KubeState(n), ",SchedulingDisabled", ",SD", 1)
}

// notes is the inline operation ("evacuating: 3/7 VMs, 12/40 pods") or what is odd.
func (m Model) notes(n model.Node, mism []model.Mismatch) string {
	if op, ok := m.ops[n.Name]; ok && !op.finished() {
		vd, vt, pd, pt := op.counts()
		return fmt.Sprintf("%s: %d/%d VMs, %d/%d pods", progressive[op.plan.Op], vd, vt, pd, pt)
	}
	if op, ok := m.ops[n.Name]; ok && op.report != nil && op.report.Result != "done" {
		return fmt.Sprintf("%s %s", op.plan.Op, op.report.Result)
	}
	var notes []string // a NodeMaintenance, then who disabled a service and why: they matter most
	if nm, ok := m.maint[n.Name]; ok {
		note := "NM " + maintenanceState(nm)
		if nm.Status.Phase == model.MaintenanceFailed && nm.Status.LastError != "" {
			note += ": " + firstLine(nm.Status.LastError)
		}
		notes = append(notes, note)
	}
	if n.Compute != nil && !n.Compute.Enabled && n.Compute.DisabledReason != "" {
		notes = append(notes, "disabled: "+n.Compute.DisabledReason)
	}
	for _, mm := range mism {
		notes = append(notes, shortMismatch[mm.Code])
	}
	if len(notes) > 0 {
		return strings.Join(notes, "; ")
	}
	if len(n.Migrations) > 0 {
		return fmt.Sprintf("%d migration(s) in progress", len(n.Migrations))
	}
	return ""
}
