package ui

import (
	"fmt"
	"github.com/drainctl/drainctl/ops/policy"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ui/text"
)

// detailPane is one node: its VMs (a cursor and a choice, for migrate) and its pods.
type detailPane struct {
	node string
	listCursor
	chosen map[string]bool // VM names chosen for migrate
}

func (p *detailPane) open(node string) {
	p.node, p.cursor, p.chosen = node, 0, map[string]bool{}
}

func (p *detailPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	n, _ := s.inv.Node(p.node)
	return nil, p.move(msg, s, len(n.VMs))
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
	noVM := ""
	if len(vms) == 0 {
		noVM = n.Name + " has no VMs to migrate"
	}
	node := []string{n.Name}
	return []action{
		show(k.Up),
		{key: k.Select, disabled: noVM, do: func() intent {
			if p.cursor >= len(n.VMs) {
				return nil
			}
			name := n.VMs[p.cursor].Name
			p.chosen[name] = !p.chosen[name]
			p.step(len(n.VMs))
			return nil
		}},
		{key: k.Migrate, disabled: noVM, do: func() intent { return propose{model.OpMigrate, vms} }},
		{key: k.Evacuate, do: func() intent { return propose{model.OpEvacuate, node} }},
		{key: k.Cordon, do: func() intent { return propose{model.OpCordon, node} }},
		{key: k.Back, do: func() intent { return goTo{nodesScreen} }},
		show(k.Help),
		{key: k.Uncordon, hidden: true, do: func() intent { return propose{model.OpUncordon, node} }},
		{key: k.Describe, hidden: true, do: func() intent { return describe{kind: "node", key: n.Name} }},
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
	rows := max(3, s.height-8-strings.Count(head, "\n"))
	vmRows, podRows := rows, rows
	if !wide {
		vmRows = max(3, min(len(n.VMs)+2, rows/2)) // a title and the column headers, then the VMs
		podRows = rows - vmRows
	}
	vms := p.vmTable(s, n, colW, vmRows)
	pods := podTable(s, n, colW, podRows)
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
	if p.cursor >= fits {
		start = p.cursor - fits + 1 // the cursor's VM (the one m acts on) stays in view
	}
	for i := start; i < len(n.VMs) && len(lines) < rows; i++ {
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

func podTable(s *shared, n model.Node, w, rows int) string {
	st := s.st
	lines := []string{st.Title.Render(fmt.Sprintf("Pods (%d)", len(n.Pods))),
		st.Header.Render(pad(fmt.Sprintf("  %-38s %-12s %-9s %s", "NAMESPACE/NAME", "OWNER", "PHASE", "DRAIN"), w))}
	pdbs := pdbMap(s)
	for _, p := range n.Pods {
		if len(lines) >= rows {
			lines = append(lines, st.Muted.Render(fmt.Sprintf("  … %d more", len(n.Pods)-(len(lines)-2))))
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
		line := text.Sprintf("  %-38s %-12s %-9s ", fit(p.Key(), 38), fit(owner, 12), p.Phase)
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
// "stays: ERROR" (the reason's code), "follow".
func moveOf(vm model.VM, o policy.Options) string {
	method, r := policy.VMMove(vm, o)
	switch method {
	case model.MoveLive:
		return "-"
	case model.MoveStays:
		why := map[model.ReasonCode]string{model.VMError: "ERROR", model.VMPinned: "pinned", model.VMLocked: "locked",
			model.VMTaskInProgress: "task", model.VMStopped: "stopped", model.VMAwaitsConfirm: "confirm", model.VMSkipped: "skip"}[r.Code]
		if why == "" {
			why = string(vm.Status)
		}
		return "stays: " + why
	case model.MoveCold:
		if r != nil && r.Code == model.Downtime {
			return "cold (downtime)"
		}
	}
	return string(method)
}
