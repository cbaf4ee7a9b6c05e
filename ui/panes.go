package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/progress"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ui/text"
)

// detailView: the node's VMs and its pods, side by side when wide, stacked otherwise.
func (m Model) detailView() string {
	n, ok := m.node(m.detail)
	if !ok {
		return m.st.Warn.Render(m.detail + " is gone from the inventory")
	}
	head := m.st.Title.Render(n.Name) + m.st.Muted.Render(fmt.Sprintf("  %s · %s · compute %s",
		text.Roles(n), text.KubeState(n), text.Compute(n, m.inv.NovaConfigured)))
	if n.Compute != nil && n.Compute.DisabledReason != "" {
		head += "\n" + m.st.Muted.Render("disabled reason: "+n.Compute.DisabledReason)
	}
	for _, mm := range n.Mismatches(m.inv.NovaConfigured) {
		head += "\n" + m.st.Warn.Render("! "+mm.Message)
	}
	if nm, ok := m.maint[n.Name]; ok {
		head += "\n" + m.maintenanceLine(nm)
	}
	wide := m.width >= 140
	colW := m.width
	if wide {
		colW = m.width/2 - 1
	}
	rows := max(3, m.height-8-strings.Count(head, "\n"))
	vmRows, podRows := rows, rows
	if !wide {
		vmRows = max(2, min(len(n.VMs)+1, rows/2))
		podRows = rows - vmRows - 1
	}
	vms := m.vmTable(n, colW, vmRows)
	pods := m.podTable(n, colW, podRows)
	if wide {
		return head + "\n" + joinColumns(vms, pods, colW)
	}
	return head + "\n" + vms + "\n" + pods
}

func joinColumns(a, b string, w int) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(la), len(lb)); i++ {
		var l, r string
		if i < len(la) {
			l = la[i]
		}
		if i < len(lb) {
			r = lb[i]
		}
		out = append(out, pad(l, w)+"  "+r)
	}
	return strings.Join(out, "\n")
}

func (m Model) vmTable(n model.Node, w, rows int) string {
	if !m.inv.NovaConfigured {
		return m.st.Muted.Render("VMs: Nova is not configured")
	}
	lines := []string{m.st.Header.Render(pad(fmt.Sprintf("  VMS (%d)  NAME          ID        FLAVOR      RAM    STATUS              MIGRATION", len(n.VMs)), w))}
	migrating := map[string]string{} // VM id -> its live migration's state and route
	for _, mg := range n.Migrations {
		migrating[mg.InstanceID] = fmt.Sprintf("%s %s→%s", mg.Status, mg.SourceCompute, orDash(mg.DestCompute))
	}
	start := 0
	if m.vmCursor >= rows-1 {
		start = m.vmCursor - rows + 2
	}
	for i := start; i < len(n.VMs) && len(lines) < rows; i++ {
		vm := n.VMs[i]
		mark := "  "
		if m.vmChosen[vm.Name] {
			mark = "● "
		}
		state := vm.Status
		if vm.TaskState != "" {
			state += "/" + vm.TaskState
		}
		if vm.Locked {
			state += " locked"
		}
		mig := migrating[vm.ID]
		if mig == "" {
			mig = "-"
		}
		line := pad(fmt.Sprintf("%s%-13s %-9s %-11s %-6s %-19s %s", mark, truncate(vm.Name, 13), vm.ShortID(), truncate(vm.Flavor, 11),
			text.Bytes(vm.RAMMB<<20), truncate(state, 19), mig), w)
		if i == m.vmCursor {
			line = m.st.Cursor.Render(line)
		}
		lines = append(lines, line)
	}
	if len(n.VMs) == 0 {
		lines = append(lines, m.st.Muted.Render("  no VMs"))
	}
	return strings.Join(lines, "\n")
}

func (m Model) podTable(n model.Node, w, rows int) string {
	lines := []string{m.st.Header.Render(pad(fmt.Sprintf("PODS (%d)  NAMESPACE/NAME                 OWNER        PHASE     DRAIN", len(n.Pods)), w))}
	pdbs := map[string]model.PDB{}
	for _, b := range m.inv.PDBs {
		pdbs[b.Namespace+"/"+b.Name] = b
	}
	for _, p := range n.Pods {
		if len(lines) >= rows {
			lines = append(lines, m.st.Muted.Render(fmt.Sprintf("  … %d more", len(n.Pods)-len(lines)+1)))
			break
		}
		owner := p.OwnerKind
		if owner == "" {
			owner = "(bare)"
		}
		drain, style := "evict", m.st.Muted
		switch v, r := policy.ClassifyPod(p, m.opts.Policy); v {
		case policy.Block:
			drain, style = "blocks: "+string(r.Code), m.st.Warn
		case policy.Stay:
			drain = "stays"
		case policy.Later:
			drain = "after VMs"
		default:
			if r := policy.PDBReason(p, pdbs, m.opts.Policy); r != nil {
				drain, style = "waits: PDB "+r.Message, m.st.Warn
			}
		}
		line := fmt.Sprintf("  %-38s %-12s %-9s ", truncate(p.Key(), 38), truncate(owner, 12), p.Phase)
		lines = append(lines, pad(line+style.Render(drain), w))
	}
	return strings.Join(lines, "\n")
}

// opViewText: one progress pane per VM, the pods being evicted, and the log.
func (m Model) opViewText() string {
	v, ok := m.ops[m.shownOp]
	if !ok {
		return m.st.Muted.Render("no operation")
	}
	state := "running: " + string(v.step)
	if v.report != nil {
		state = v.report.Result
		if v.report.Error != "" {
			state += ": " + v.report.Error
		}
	}
	var b strings.Builder
	title := fmt.Sprintf("%s %s", v.plan.Op, v.key)
	if len(m.opOrder) > 1 {
		title += m.st.Muted.Render(fmt.Sprintf("  (%d operations, space for the next)", len(m.opOrder)))
	}
	b.WriteString(m.st.Title.Render(title) + "  " + m.resultStyle(v).Render(truncate(state, max(10, m.width-len(title)-2))) + "\n")
	budget := m.height - 6
	vmLines := 0
	barW := max(10, min(40, m.width-50))
	bar := progress.New(progress.WithWidth(barW), progress.WithoutPercentage(), progress.WithSolidFill("#5fafff"))
	for i, id := range v.vmOrder {
		if vmLines+2 > budget*2/3 {
			b.WriteString(m.st.Muted.Render(fmt.Sprintf("  … %d more VMs\n", len(v.vmOrder)-i)))
			break
		}
		vm := v.vms[id]
		cursor := "  "
		if i == m.opCursor {
			cursor = "▸ "
		}
		pct := 0.0
		if vm.total > 0 {
			pct = float64(vm.total-vm.remaining) / float64(vm.total)
		}
		if vm.state == ops.MigCompleted {
			pct = 1
		}
		route := vm.source + " → " + orDash(vm.dest)
		line1 := fmt.Sprintf("%s%-14s %-15s %s", cursor, truncate(vm.name, 14), m.vmStateStyle(vm).Render(truncate(vm.state, 15)), truncate(route, max(10, m.width-34)))
		detail := ""
		if vm.total > 0 && vm.state == "running" {
			detail = fmt.Sprintf("%s/%s  %s left  %s  eta %s", text.Bytes(vm.processed), text.Bytes(vm.total),
				text.Bytes(vm.remaining), text.Rate(vm.rate), text.Duration(vm.eta))
			if vm.stalled {
				detail += "  " + m.st.Error.Render("STALLED")
			}
		} else if vm.msg != "" {
			detail = vm.msg
		}
		line2 := fmt.Sprintf("  %s %3.0f%%  %s", bar.ViewAs(pct), pct*100, detail)
		b.WriteString(truncate(line1, m.width) + "\n" + truncate(line2, m.width) + "\n")
		vmLines += 2
	}
	if len(v.vmOrder) == 0 {
		b.WriteString(m.st.Muted.Render("  no VMs to move") + "\n")
		vmLines++
	}
	podLine := m.podSummary(v)
	b.WriteString(truncate(podLine, m.width) + "\n")
	logRows := max(1, budget-vmLines-1)
	start := max(0, len(v.log)-logRows)
	for _, l := range v.log[start:] {
		line := l.at.Format("15:04:05") + " " + l.text
		if l.bad {
			b.WriteString(m.st.Error.Render(truncate(line, m.width)) + "\n")
		} else {
			b.WriteString(m.st.Muted.Render(truncate(line, m.width)) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (m Model) podSummary(v *opView) string {
	states := map[string]int{}
	var blocked []string
	for _, k := range v.podKeys {
		p := v.pods[k]
		states[p.state]++
		if p.state == ops.PodBlocked {
			blocked = append(blocked, fmt.Sprintf("%s (PDB %s)", k, p.pdb))
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

func (m Model) resultStyle(v *opView) lipglossStyle {
	switch {
	case v.report == nil:
		return m.st.Accent
	case v.report.Result == ops.ResultDone:
		return m.st.OK
	case v.report.Result == ops.ResultInterrupted:
		return m.st.Warn
	}
	return m.st.Error
}

func (m Model) vmStateStyle(vm *vmView) lipglossStyle {
	switch vm.state {
	case ops.MigCompleted:
		return m.st.OK
	case ops.MigFailed, ops.MigAborted:
		return m.st.Error
	case "running", "preparing", "queued", ops.MigRequested, "post-migrating", ops.MigForced:
		return m.st.Accent
	}
	return m.st.Muted
}

func orDash(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// confirmView: the plan and its blockers, naming the targets, with the overrides.
func (m Model) confirmView() string {
	p := m.pending
	if p == nil {
		return ""
	}
	var b strings.Builder
	if p.err != nil {
		b.WriteString(m.st.Error.Render("cannot plan: "+p.err.Error()) + "\n")
		return b.String()
	}
	blocked := false
	if p.maintenance != "" {
		node := p.targets[0]
		q := fmt.Sprintf("Create a NodeMaintenance for %s? The controller will:", node)
		if p.maintenance == maintainDelete {
			q = fmt.Sprintf("Delete NodeMaintenance %s? The controller will put %s back:", m.maint[node].Name, node)
		}
		b.WriteString(m.st.Title.Render(truncate(q, m.width)) + "\n")
	}
	for _, pl := range p.plans {
		question := strings.ToUpper(pl.Summary()[:1]) + pl.Summary()[1:] + "?"
		if p.maintenance != "" {
			question = pl.Summary()
		}
		b.WriteString(m.st.Title.Render(truncate(question, m.width)) + "\n")
		for i, s := range pl.Steps {
			mark := "[ ]"
			if s.Done {
				mark = "[✓]"
			}
			b.WriteString(truncate(fmt.Sprintf("  %d. %s %-16s %s", i+1, mark, s.Kind, s.Detail), m.width) + "\n")
		}
		for _, r := range pl.Reasons {
			style := m.st.Muted
			switch r.Severity {
			case model.Blocks:
				style, blocked = m.st.Error, true
			case model.Waits:
				style = m.st.Warn
			}
			what := r.String()
			if p.maintenance != "" {
				what = r.Object + ": " + r.Message // the controller's policy decides, not this view's toggles
			}
			b.WriteString(style.Render(truncate(fmt.Sprintf("  %-6s %s", r.Severity, what), m.width)) + "\n")
		}
	}
	var on []string
	o := p.ro.Policy
	for _, f := range []struct {
		on   bool
		name string
	}{{o.Force, "--force"}, {o.DeleteEmptyDirData, "--delete-emptydir-data"}, {o.DisableEviction, "--disable-eviction"}, {o.AllowLastNode, "--allow-last-node"}} {
		if f.on {
			on = append(on, f.name)
		}
	}
	if len(on) > 0 {
		b.WriteString(m.st.Danger.Render("overrides: "+strings.Join(on, " ")) + "\n")
	}
	switch {
	case blocked && p.maintenance == maintainCreate:
		b.WriteString(m.st.Warn.Render("The NodeMaintenance will be Failed, retried, until every blocker is resolved.") + "\n")
	case blocked && p.maintenance == "":
		b.WriteString(m.st.Warn.Render("Refused until every blocker is resolved or overridden (F, D, E, L toggle the overrides).") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// helpView is generated from the key map.
func (m Model) helpView() string {
	titles := []string{"Move and select", "Operations (destructive: confirmed first)", "Views", "In a confirmation"}
	var b strings.Builder
	for i, g := range m.keys.groups() {
		b.WriteString(m.st.Header.Render(titles[i]) + "\n")
		for _, k := range g {
			h := k.Help()
			desc := h.Desc
			if !k.Enabled() {
				desc += " (read-only: off)"
			} else if k.Dangerous {
				desc += " ⚠"
			}
			b.WriteString(fmt.Sprintf("  %-8s %s\n", h.Key, desc))
		}
	}
	b.WriteString(m.st.Muted.Render("any key to go back"))
	return b.String()
}

func (m Model) quitView() string {
	var running []string
	for _, n := range m.opOrder {
		if m.running(n) {
			running = append(running, string(m.ops[n].plan.Op)+" "+n)
		}
	}
	return m.st.Warn.Render("Still running: "+strings.Join(running, ", ")) + "\n\n" +
		"  w  wait for it (go back)\n" +
		"  a  abort it (abort its migrations), then quit\n" +
		"  l  leave it: stop at a safe point, recorded on the node; the same command resumes it\n"
}

// maintenanceLine is a NodeMaintenance in one line: its state, its counts, its last error.
func (m Model) maintenanceLine(nm model.NodeMaintenance) string {
	st := nm.Status
	line := fmt.Sprintf("NodeMaintenance %s: %s · pods %d/%d evicted · VMs %d/%d migrated", nm.Name, maintenanceState(nm),
		st.EvictionPods-len(st.PendingPods), st.EvictionPods, st.MigratedVMs, st.TotalVMs)
	if nm.Reason != "" {
		line += " · " + nm.Reason
	}
	style := m.st.Accent
	if st.LastError != "" {
		line += "\n  last error: " + st.LastError
		style = m.st.Warn
	}
	return style.Render(truncate(line, m.width*2))
}

// maintenanceState is a NodeMaintenance's state in a few words.
func maintenanceState(nm model.NodeMaintenance) string {
	switch {
	case nm.Deleting:
		return "deleted, restoring the node"
	case nm.Status.Phase == "":
		return "waiting for the controller"
	case nm.Status.Phase == model.MaintenanceSucceeded:
		return "in maintenance"
	case nm.Status.Phase == model.MaintenanceFailed:
		return "Failed, retrying"
	}
	return fmt.Sprintf("%s %d%%", nm.Status.Phase, nm.Status.DrainProgress)
}
