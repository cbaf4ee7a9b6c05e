package ui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/bubbles/textinput"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
)

// Key handling: global keys first, then the focused screen's.

func (m Model) key(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	// Keys typed fast (or pasted) arrive as one message of several runes: take them one by one.
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !m.editing && !msg.Paste {
		var cmds []tea.Cmd
		var next tea.Model = m
		for _, r := range msg.Runes {
			var cmd tea.Cmd
			next, cmd = next.(Model).key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
			cmds = append(cmds, cmd)
		}
		return next, tea.Batch(cmds...)
	}
	if msg.String() == "ctrl+c" && m.screen != quitScreen {
		return m.askQuit()
	}
	if m.editing {
		switch msg.String() {
		case "enter", "esc":
			m.editing = false
			if msg.String() == "esc" {
				m.filter.SetValue("")
			}
			m.filter.Blur()
			m.applyFilter()
			return m, nil
		}
		var cmd tea.Cmd
		m.filter, cmd = m.filter.Update(msg)
		m.applyFilter()
		return m, cmd
	}
	switch m.screen {
	case helpScreen:
		m.screen = m.back
		return m, nil
	case confirmScreen:
		return m.confirmKey(msg)
	case quitScreen:
		return m.quitKey(msg)
	}
	k := m.keys
	switch {
	case matches(msg, k.Quit):
		return m.askQuit()
	case matches(msg, k.Help):
		m.back, m.screen = m.screen, helpScreen
		return m, nil
	case matches(msg, k.Refresh):
		m.setStatus("refreshing…", false)
		return m, m.refresh(true)
	case matches(msg, k.Victims):
		m.screen, m.vicCursor = victimsScreen, 0
		return m, nil
	case matches(msg, k.Operations):
		if len(m.opOrder) == 0 {
			m.setStatus("no operation has run yet", true)
			return m, nil
		}
		if m.shownOp == "" {
			m.shownOp = m.opOrder[len(m.opOrder)-1]
		}
		m.screen = opScreen
		return m, nil
	}
	switch m.screen {
	case nodesScreen:
		return m.nodesKey(msg)
	case detailScreen:
		return m.detailKey(msg)
	case opScreen:
		return m.opKey(msg)
	case victimsScreen:
		switch {
		case matches(msg, k.Back):
			m.screen = nodesScreen
		case matches(msg, k.Up):
			m.vicCursor = max(0, m.vicCursor-1)
		case matches(msg, k.Down):
			m.vicCursor = min(len(m.victims)-1, m.vicCursor+1)
		case matches(msg, k.Evacuate) && m.vicCursor < len(m.victims):
			return m.propose(model.OpEvacuate, []string{m.victims[m.vicCursor].Node})
		}
	}
	return m, nil
}

func (m Model) nodesKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case matches(msg, k.Up):
		m.cursor = max(0, m.cursor-1)
	case matches(msg, k.Down):
		m.cursor = min(len(m.rows)-1, m.cursor+1)
	case matches(msg, k.Top):
		m.cursor = 0
	case matches(msg, k.Bottom):
		m.cursor = len(m.rows) - 1
	case matches(msg, k.PageUp):
		m.cursor = max(0, m.cursor-m.pageSize())
	case matches(msg, k.PageDown):
		m.cursor = min(len(m.rows)-1, m.cursor+m.pageSize())
	case matches(msg, k.Filter):
		m.editing = true
		m.filter.Focus()
		return m, textinput.Blink
	case matches(msg, k.Back):
		if len(m.selected) > 0 {
			m.selected = map[string]bool{}
		} else if m.filter.Value() != "" {
			m.filter.SetValue("")
			m.applyFilter()
		}
	case matches(msg, k.Select):
		if n, ok := m.current(); ok {
			if m.selected[n.Name] {
				delete(m.selected, n.Name)
			} else {
				m.selected[n.Name] = true
			}
			m.cursor = min(len(m.rows)-1, m.cursor+1)
		}
	case matches(msg, k.Enter):
		if n, ok := m.current(); ok {
			m.detail, m.vmCursor, m.vmChosen = n.Name, 0, map[string]bool{}
			m.screen = detailScreen
		}
	case matches(msg, k.Cordon):
		return m.propose(model.OpCordon, m.targets())
	case matches(msg, k.Evacuate):
		return m.propose(model.OpEvacuate, m.targets())
	case matches(msg, k.Uncordon):
		return m.propose(model.OpUncordon, m.targets())
	case matches(msg, k.Abort):
		return m.propose(model.OpAbort, m.targets()[:min(1, len(m.targets()))])
	case matches(msg, k.Rollback):
		return m.propose(model.OpRollback, m.targets()[:min(1, len(m.targets()))])
	case matches(msg, k.Maintain), matches(msg, k.EndMaintain):
		action := maintainCreate
		if matches(msg, k.EndMaintain) {
			action = maintainDelete
		}
		n, _ := m.current()
		return m.proposeMaintenance(action, n.Name)
	}
	return m, nil
}

func (m Model) detailKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	n, _ := m.node(m.detail)
	switch {
	case matches(msg, k.Back):
		m.screen = nodesScreen
	case matches(msg, k.Up):
		m.vmCursor = max(0, m.vmCursor-1)
	case matches(msg, k.Down):
		m.vmCursor = min(len(n.VMs)-1, m.vmCursor+1)
	case matches(msg, k.Select):
		if m.vmCursor < len(n.VMs) {
			id := n.VMs[m.vmCursor].Name
			m.vmChosen[id] = !m.vmChosen[id]
			m.vmCursor = min(len(n.VMs)-1, m.vmCursor+1)
		}
	case matches(msg, k.Migrate):
		var vms []string
		for _, vm := range n.VMs {
			if m.vmChosen[vm.Name] {
				vms = append(vms, vm.Name)
			}
		}
		if len(vms) == 0 && m.vmCursor < len(n.VMs) {
			vms = []string{n.VMs[m.vmCursor].Name}
		}
		if len(vms) == 0 {
			m.setStatus(n.Name+" has no VMs to migrate", true)
			return m, nil
		}
		return m.propose(model.OpMigrate, vms)
	case matches(msg, k.Cordon):
		return m.propose(model.OpCordon, []string{n.Name})
	case matches(msg, k.Evacuate):
		return m.propose(model.OpEvacuate, []string{n.Name})
	case matches(msg, k.Uncordon):
		return m.propose(model.OpUncordon, []string{n.Name})
	case matches(msg, k.Maintain):
		return m.proposeMaintenance(maintainCreate, n.Name)
	case matches(msg, k.EndMaintain):
		return m.proposeMaintenance(maintainDelete, n.Name)
	}
	return m, nil
}

func (m Model) opKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	op := m.ops[m.shownOp]
	switch {
	case matches(msg, k.Back):
		m.screen = nodesScreen
	case matches(msg, k.Up):
		m.opCursor = max(0, m.opCursor-1)
	case matches(msg, k.Down):
		if op != nil {
			m.opCursor = min(len(op.vmOrder)-1, m.opCursor+1)
		}
	case matches(msg, k.Select): // cycle through the operations
		for i, n := range m.opOrder {
			if n == m.shownOp {
				m.shownOp = m.opOrder[(i+1)%len(m.opOrder)]
				break
			}
		}
	case matches(msg, k.Abort):
		return m.propose(model.OpAbort, []string{m.shownOp})
	case matches(msg, k.Rollback):
		return m.propose(model.OpRollback, []string{m.shownOp})
	case matches(msg, k.ForceComplete):
		if op == nil || m.opCursor >= len(op.vmOrder) {
			m.setStatus("no migration under the cursor", true)
			return m, nil
		}
		vm := op.vms[op.vmOrder[m.opCursor]]
		if vm.state != "running" {
			m.setStatus(fmt.Sprintf("%s is %s: only a running migration can be force-completed", vm.name, vm.state), true)
			return m, nil
		}
		return m, m.forceComplete(vm.id)
	}
	return m, nil
}

func (m Model) confirmKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	p := m.pending
	if p.maintenance != "" { // the controller's policy applies: nothing to toggle here
		switch {
		case matches(msg, k.Back), msg.String() == "n", msg.String() == "q":
			m.screen, m.pending = m.back, nil
		case matches(msg, k.Confirm):
			m.screen, m.pending = m.back, nil
			return m, m.maintain(p)
		}
		return m, nil
	}
	toggle := func(f func(*policy.Options)) (tea.Model, tea.Cmd) {
		ro := p.ro
		f(&ro.Policy)
		ro.ForceCompute = ro.Policy.Force
		return m, m.plan(p.op, p.targets, ro)
	}
	switch {
	case matches(msg, k.Back), msg.String() == "n", msg.String() == "q":
		m.screen, m.pending = m.back, nil
		return m, nil
	case matches(msg, k.ToggleForce):
		return toggle(func(o *policy.Options) { o.Force = !o.Force })
	case matches(msg, k.ToggleEmptyDir):
		return toggle(func(o *policy.Options) { o.DeleteEmptyDirData = !o.DeleteEmptyDirData })
	case matches(msg, k.ToggleEviction):
		return toggle(func(o *policy.Options) { o.DisableEviction = !o.DisableEviction })
	case matches(msg, k.ToggleLastNode):
		return toggle(func(o *policy.Options) { o.AllowLastNode = !o.AllowLastNode })
	case matches(msg, k.Target) && p.op == model.OpMigrate:
		ro := p.ro
		ro.To = m.nextTarget(p.ro.To, p.plans)
		return m, m.plan(p.op, p.targets, ro)
	case matches(msg, k.Confirm):
		if p.err != nil {
			return m, nil
		}
		for _, pl := range p.plans {
			if len(pl.Blockers()) > 0 {
				m.setStatus("refused: resolve the blockers or toggle their overrides first", true)
				return m, nil
			}
		}
		return m.start(p)
	}
	return m, nil
}

// quitKey: wait for the operations, abort them, or leave them recorded to resume.
func (m Model) quitKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "w", "esc":
		m.screen = m.back
		m.setStatus("waiting: quit again when the operations are done", false)
	case "l":
		for _, n := range m.opOrder {
			if op := m.ops[n]; op.report == nil {
				op.cancel() // stops at a safe point and records it on the node
			}
		}
		m.setStatus("stopping at a safe point; the nodes record where", false)
		return m, tea.Sequence(m.waitStopped(), tea.Quit)
	case "a":
		var cmds []tea.Cmd
		for _, n := range m.opOrder {
			if op := m.ops[n]; op.report == nil && op.plan.Op != model.OpMigrate {
				cmds = append(cmds, m.runNow(model.OpAbort, op.plan.Node))
			}
		}
		return m, tea.Sequence(tea.Batch(cmds...), m.waitStopped(), tea.Quit)
	case "ctrl+c":
		return m, tea.Quit
	}
	return m, nil
}
