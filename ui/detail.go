package ui

import (
	"fmt"
	"strings"

	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/text"
)

// detailPane is one node: its VMs (a choice, for migrate) and its pods. The cursor walks the
// VMs, then the pods, so every pod can be reached (and described) however many there are.
type detailPane struct {
	node string
	listCursor
	chosen map[string]bool // VM names chosen for migrate
}

func (p *detailPane) open(node string) {
	p.node, p.cursor, p.chosen = node, 0, map[string]bool{}
}

// cursorOn puts the cursor on the VM with this ID (m migrates the VM the list was on).
func (p *detailPane) cursorOn(n model.Node, vmID string) {
	for i, vm := range n.VMs {
		if vm.ID == vmID {
			p.cursor = i
		}
	}
}

func (p *detailPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	n, _ := s.inv.Node(p.node)
	return nil, p.move(msg, s, len(n.VMs)+len(n.Pods))
}

// onPod is the index of the pod under the cursor, or -1 when the cursor is on a VM.
func (p *detailPane) onPod(n model.Node) int {
	if i := p.cursor - len(n.VMs); i >= 0 && i < len(n.Pods) {
		return i
	}
	return -1
}

func (p *detailPane) bindings(s *shared) []action {
	k := s.keys
	n, _ := s.inv.Node(p.node)
	var vms []string // what m migrates: the chosen VMs, or the one under the cursor
	for _, vm := range n.VMs {
		if p.chosen[vm.Name] {
			vms = append(vms, vm.Name)
		}
	}
	if len(vms) == 0 && p.cursor < len(n.VMs) {
		vms = []string{n.VMs[p.cursor].Name}
	}
	noVM, notOnVM := "", ""
	switch {
	case len(n.VMs) == 0:
		noVM, notOnVM = n.Name+" has no VMs to migrate", n.Name+" has no VMs to choose"
	case p.cursor >= len(n.VMs):
		notOnVM = "the cursor is on a pod: space chooses VMs"
		if len(vms) == 0 {
			noVM = "the cursor is on a pod: m migrates the VMs chosen or the VM under the cursor"
		}
	}
	describeRow := describe{kind: "vm", key: ""}
	switch i := p.onPod(n); {
	case i >= 0:
		describeRow = describe{kind: "pod", key: n.Pods[i].Key() + "@" + n.Name}
	case p.cursor < len(n.VMs):
		describeRow.key = n.VMs[p.cursor].ID
	default:
		describeRow = describe{kind: "node", key: n.Name}
	}
	node := []string{n.Name}
	return []action{
		show(k.Up),
		{key: k.Select, disabled: notOnVM, do: func() intent {
			name := n.VMs[p.cursor].Name
			p.chosen[name] = !p.chosen[name]
			p.step(len(n.VMs) + len(n.Pods))
			return nil
		}},
		{key: k.Migrate, disabled: noVM, do: func() intent { return propose{model.OpMigrate, vms} }},
		{key: k.Evacuate, do: func() intent { return propose{model.OpEvacuate, node} }},
		{key: k.Cordon, do: func() intent { return propose{model.OpCordon, node} }},
		{key: k.Back, do: func() intent { return goHome{} }},
		show(k.Help),
		{key: k.Uncordon, hidden: true, do: func() intent { return propose{model.OpUncordon, node} }},
		{key: k.Describe, hidden: true, do: func() intent { return describeRow }}, // the VM or pod under the cursor
		{key: k.Maintain, hidden: true, do: func() intent { return proposeMaint{maintainCreate, n.Name} }},
		{key: k.EndMaintain, hidden: true, do: func() intent { return proposeMaint{maintainDelete, n.Name} }},
	}
}

// view: the node's VMs and its pods, side by side when wide, stacked otherwise.
func (p *detailPane) view(s *shared) string {
	st := s.st
	n, ok := s.inv.Node(p.node)
	if !ok {
		return st.Warn.Render(text.Safe(p.node) + " is gone from the inventory")
	}
	head := st.Title.Render(text.Safe(n.Name)) + st.Muted.Render(text.Sprintf("  %s · %s · compute %s",
		text.Roles(n), text.KubeState(n), text.Compute(n, s.inv.NovaConfigured)))
	if n.Compute != nil && n.Compute.DisabledReason != "" {
		head += "\n" + st.Muted.Render("disabled reason: "+text.Safe(n.Compute.DisabledReason))
	}
	for _, mm := range policy.Disagreements(n, s.inv, s.opts.Policy) {
		head += "\n" + st.Warn.Render("! "+text.Safe(mm.Message))
	}
	if nm, ok := s.maint[n.Name]; ok {
		head += "\n" + maintenanceLine(s, nm)
	}
	wide := s.width >= 140
	colW := s.width
	if wide {
		colW = s.width/2 - 1
	}
	// Every line the screen has: its header and footer take three (a banner one more).
	rows := max(3, s.height-4-strings.Count(head, "\n"))
	if s.invErr != nil {
		rows--
	}
	vmRows, podRows := rows, rows
	if !wide {
		// A title and the column headers, then the rows: the VMs take what the pods leave,
		// and at least half when both are long.
		vmRows = max(3, min(len(n.VMs)+2, max(rows/2, rows-len(n.Pods)-2)))
		podRows = rows - vmRows
	}
	vms := p.vmTable(s, n, colW, vmRows)
	pods := podTable(s, n, colW, podRows, p.onPod(n))
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

func (p *detailPane) vmTable(s *shared, n model.Node, w, rows int) string {
	st := s.st
	if !s.inv.NovaConfigured {
		return st.Muted.Render("VMs: Nova is not configured")
	}
	lines := []string{st.Title.Render(fmt.Sprintf("VMs (%d)", len(n.VMs))),
		st.Header.Render(pad(fmt.Sprintf("  %-13s %-9s %-11s %-6s %-19s %s", "NAME", "ID", "FLAVOR", "RAM", "STATUS", "MIGRATION"), w))}
	migrating := map[string]string{} // VM id -> its live migration's state and route
	for _, mg := range n.Migrations {
		migrating[mg.InstanceID] = text.Sprintf("%s %s→%s", mg.Status, mg.SourceCompute, orDash(mg.DestCompute))
	}
	start, fits := 0, max(1, rows-2) // two lines of title and column headers
	if len(n.VMs) > fits {
		fits = max(1, fits-1) // the line counting the rest
	}
	if p.cursor >= fits && p.cursor < len(n.VMs) {
		start = p.cursor - fits + 1 // the cursor's VM (the one m acts on) stays in view
	}
	if start > 0 {
		lines[0] += st.Muted.Render(fmt.Sprintf(" · %d above", start))
	}
	for i := start; i < len(n.VMs); i++ {
		if i-start >= fits { // never 9 of 11 shown as if they were all
			lines = append(lines, st.Muted.Render(fmt.Sprintf("  … %d more", len(n.VMs)-i)))
			break
		}
		vm := n.VMs[i]
		mark := marks(i == p.cursor, p.chosen[vm.Name])
		state := string(vm.Status)
		if vm.TaskState != "" {
			state += "/" + vm.TaskState
		}
		if vm.Locked {
			state += " locked"
		}
		mig := migrating[vm.ID]
		if mig == "" {
			mig = moveOf(vm, s.opts.Policy)
		}
		line := pad(text.Sprintf("%s%-13s %-9s %-11s %-6s %-19s %s", mark, fit(vm.Name, 13), fit(vm.ShortID(), 9), fit(vm.Flavor, 11),
			text.Bytes(vm.RAMMB<<20), fit(state, 19), mig), w)
		if i == p.cursor {
			line = st.Cursor.Render(line)
		}
		lines = append(lines, line)
	}
	if len(n.VMs) == 0 {
		lines = append(lines, st.Muted.Render("  no VMs"))
	}
	return strings.Join(lines, "\n")
}

// podTable lists the pods that fit in rows lines, from the one that keeps the cursor's pod
// (cursor, -1 for none) in view; a last line counts the pods below.
func podTable(s *shared, n model.Node, w, rows, cursor int) string {
	st := s.st
	lines := []string{st.Title.Render(fmt.Sprintf("Pods (%d)", len(n.Pods))),
		st.Header.Render(pad(fmt.Sprintf("  %-38s %-12s %-9s %s", "NAMESPACE/NAME", "OWNER", "PHASE", "DRAIN"), w))}
	pdbs := pdbMap(s)
	fits := max(1, rows-2)
	if len(n.Pods) > fits {
		fits = max(1, fits-1) // the line counting the rest
	}
	start := 0
	if cursor >= fits {
		start = cursor - fits + 1
	}
	if start > 0 {
		lines[0] += st.Muted.Render(fmt.Sprintf(" · %d above", start))
	}
	for i := start; i < len(n.Pods); i++ {
		p := n.Pods[i]
		if i-start >= fits {
			lines = append(lines, st.Muted.Render(fmt.Sprintf("  … %d more", len(n.Pods)-i)))
			break
		}
		owner := p.OwnerKind
		if owner == "" {
			owner = "(bare)"
		}
		drain, style := drainVerdict(p, pdbs, s.opts.Policy), st.Muted
		if strings.HasPrefix(drain, "blocks") || strings.HasPrefix(drain, "waits") {
			style = st.Warn
		}
		line := text.Sprintf("%s%-38s %-12s %-9s ", marks(i == cursor, false), fit(p.Key(), 38), fit(owner, 12), p.Phase)
		if i == cursor {
			lines = append(lines, st.Cursor.Render(pad(line+text.Safe(drain), w)))
			continue
		}
		lines = append(lines, pad(line+style.Render(text.Safe(drain)), w))
	}
	return strings.Join(lines, "\n")
}

// maintenanceLine is a NodeMaintenance in one line: its state, its counts, its last error.
func maintenanceLine(s *shared, nm model.NodeMaintenance) string {
	st := nm.Status
	line := text.Sprintf("NodeMaintenance %s: %s · pods %d/%d evicted · VMs %d/%d migrated", nm.Name, maintenanceState(nm),
		st.EvictionPods-len(st.PendingPods), st.EvictionPods, st.MigratedVMs, st.TotalVMs)
	if nm.Reason != "" {
		line += " · " + text.Safe(nm.Reason)
	}
	style := s.st.Accent
	if st.LastError != "" {
		line += "\n  last error: " + text.Safe(st.LastError)
		style = s.st.Warn
	}
	return style.Render(truncate(line, s.width*2))
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

// moveOf is how an evacuation would move the VM, when not live ("-" then): "cold",
// "stays: ERROR", "stays: asked" (the reason, short), "follow".
func moveOf(vm model.VM, o policy.Options) string {
	method, r := policy.VMMove(vm, o)
	switch f := ops.MoveFactsOf(method); {
	case f.Default:
		return "-"
	case f.Stays:
		why := map[model.ReasonCode]string{model.VMError: "ERROR", model.VMPinned: "pinned", model.VMLocked: "locked",
			model.VMTaskInProgress: "task", model.VMStopped: "stopped", model.VMAwaitsConfirm: "confirm", model.VMSkipped: "skip",
			model.VMAsksToStay: "asked"}[r.Code]
		switch {
		case why != "":
			return "stays: " + why
		case r != nil: // never the VM's status, which is not why it stays ("stays: ACTIVE")
			return "stays: " + string(r.Code)
		}
		return "stays"
	case f.Leaves && r != nil && r.Code == model.Downtime: // moved stopped: a running VM moved cold
		return string(method) + " (downtime)"
	}
	return string(method)
}
