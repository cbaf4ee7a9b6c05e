package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// Commands: what the keys start. Every call to the engine runs in a tea.Cmd, never in Update.

// propose asks the engine for plans (in a Cmd) and then shows them for confirmation. Keys
// that cannot act say why instead of doing nothing.
func (m Model) propose(op model.OpKind, targets []string) (tea.Model, tea.Cmd) {
	if len(targets) == 0 {
		m.setStatus("nothing selected", true)
		return m, nil
	}
	if why := m.cannot(op, targets); why != "" {
		m.setStatus(why, true)
		return m, nil
	}
	ro := ops.RunOptions{Policy: m.opts.Policy}
	if m.pending != nil && m.pending.op == op && strings.Join(m.pending.targets, ",") == strings.Join(targets, ",") {
		ro = m.pending.ro // keep the overrides toggled so far
	}
	return m, m.plan(op, targets, ro)
}

// proposeMaintenance shows what creating (or deleting) the node's NodeMaintenance will make
// the controller do, for confirmation: the evacuation's plan, or the restore's.
func (m Model) proposeMaintenance(action string, node string) (tea.Model, tea.Cmd) {
	if m.opts.Maintenances == nil {
		m.setStatus("NodeMaintenance is not available: install deploy/crd-nodemaintenance.yaml and run drainctl --controller", true)
		return m, nil
	}
	nm, exists := m.maint[node]
	switch {
	case m.eng == nil:
		m.setStatus("no cluster", true)
		return m, nil
	case node == "":
		m.setStatus("nothing selected", true)
		return m, nil
	case action == maintainCreate && exists:
		m.setStatus(fmt.Sprintf("%s is already under NodeMaintenance %s (%s)", node, nm.Name, maintenanceState(nm)), true)
		return m, nil
	case action == maintainDelete && !exists:
		m.setStatus(node+" has no NodeMaintenance", true)
		return m, nil
	case action == maintainDelete && nm.Deleting:
		m.setStatus(fmt.Sprintf("NodeMaintenance %s is already being deleted: the node is being restored", nm.Name), true)
		return m, nil
	}
	op := model.OpEvacuate
	if action == maintainDelete {
		op = model.OpUncordon
	}
	plan := m.plan(op, []string{node}, ops.RunOptions{Policy: m.opts.Policy})
	return m, func() tea.Msg {
		p := plan().(planMsg)
		p.maintenance = action
		return p
	}
}

// maintain creates or deletes the NodeMaintenance; the controller does the rest.
func (m Model) maintain(p *pending) tea.Cmd {
	store, ctx, node := m.opts.Maintenances, m.ctx, p.targets[0]
	nm := m.maint[node]
	return func() tea.Msg {
		if p.maintenance == maintainCreate {
			name, err := store.Create(ctx, node, "requested in drainctl by "+ops.DefaultHolder())
			if err != nil {
				return errorMsg{err}
			}
			return statusMsg("NodeMaintenance " + name + " created: the controller empties " + node)
		}
		if err := store.Delete(ctx, nm.Name); err != nil {
			return errorMsg{err}
		}
		return statusMsg("NodeMaintenance " + nm.Name + " deleted: the controller restores " + node)
	}
}

// cannot says why an operation makes no sense on these targets, or "".
func (m Model) cannot(op model.OpKind, targets []string) string {
	if m.eng == nil {
		return "no cluster"
	}
	if op == model.OpMigrate && !m.inv.NovaConfigured {
		return "Nova is not configured: there are no VMs"
	}
	for _, t := range targets {
		if op == model.OpMigrate {
			continue
		}
		n, ok := m.node(t)
		if !ok || n.Kube == nil {
			return t + " is no Kubernetes node"
		}
		if op == model.OpUncordon && n.Kube.Schedulable && (n.Compute == nil || n.Compute.Enabled) {
			return t + " is not cordoned"
		}
		if (op == model.OpCordon || op == model.OpEvacuate) && m.running(t) {
			return "an operation is already running on " + t
		}
	}
	return ""
}

func (m Model) running(node string) bool {
	op, ok := m.ops[node]
	return ok && op.report == nil
}

func (m Model) plan(op model.OpKind, targets []string, ro ops.RunOptions) tea.Cmd {
	eng, ctx := m.eng, m.ctx
	return func() tea.Msg {
		p := pending{op: op, targets: targets, ro: ro}
		if op == model.OpEvacuate {
			p.ro.Leaving = targets
		}
		for _, t := range targets {
			plan, err := eng.Plan(ctx, op, t, p.ro)
			if err != nil {
				p.err = err
				break
			}
			p.plans = append(p.plans, plan)
		}
		return planMsg(p)
	}
}

// nextTarget cycles the migrate destination: the scheduler's choice, then each enabled,
// up compute host that is not a source of these VMs.
func (m Model) nextTarget(current string, plans []model.Plan) string {
	sources := map[string]bool{}
	for _, p := range plans {
		sources[p.Host] = true
	}
	hosts := []string{""}
	for _, n := range m.inv.Nodes {
		if c := n.Compute; c != nil && c.Enabled && c.Up && !sources[n.Host] {
			hosts = append(hosts, n.Host)
		}
	}
	for i, h := range hosts {
		if h == current {
			return hosts[(i+1)%len(hosts)]
		}
	}
	return ""
}

// start runs the confirmed plans in the background; the engine owns their contexts.
func (m Model) start(p *pending) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	for _, pl := range p.plans {
		node := pl.Node
		if pl.Op == model.OpMigrate {
			node = pl.Node + "/" + pl.VM
		}
		ctx, cancel := context.WithCancel(m.ctx)
		view := newOpView(node, pl, m.opts.Now())
		view.cancel = cancel
		if _, seen := m.ops[node]; !seen {
			m.opOrder = append(m.opOrder, node)
		}
		m.ops[node] = view
		m.shownOp = node
		eng, ro, plan, bus := m.eng, p.ro, pl, m.bus
		cmds = append(cmds, func() tea.Msg {
			emit := func(ev ops.Event) { bus.Emit(tagged{ev, node}) }
			_, _ = eng.Run(ctx, plan, ro, emit)
			cancel()
			return runDone{node}
		})
	}
	m.pending, m.screen, m.opCursor = nil, opScreen, 0
	m.setStatus("", false)
	return m, tea.Batch(cmds...)
}

func (m Model) forceComplete(vmID string) tea.Cmd {
	eng, ctx := m.eng, m.ctx
	return func() tea.Msg {
		if err := eng.ForceComplete(ctx, vmID); err != nil {
			return errorMsg{err}
		}
		return nil
	}
}

func (m Model) askQuit() (tea.Model, tea.Cmd) {
	for _, n := range m.opOrder {
		if m.running(n) {
			m.back, m.screen = m.screen, quitScreen
			return m, nil
		}
	}
	return m, tea.Quit
}

// waitStopped returns once no operation of this model is running (bounded).
func (m Model) waitStopped() tea.Cmd {
	views := make([]*opView, 0, len(m.ops))
	for _, v := range m.ops {
		views = append(views, v)
	}
	return func() tea.Msg {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			busy := false
			for _, v := range views {
				if !v.finished() {
					busy = true
				}
			}
			if !busy {
				return nil
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}
}

func (m Model) runNow(op model.OpKind, node string) tea.Cmd {
	eng, ctx := m.eng, m.ctx
	return func() tea.Msg {
		p, err := eng.Plan(ctx, op, node, ops.RunOptions{})
		if err != nil {
			return errorMsg{err}
		}
		_, _ = eng.Run(ctx, p, ops.RunOptions{}, func(ops.Event) {})
		return nil
	}
}

// tagged routes an event to the operation view that started it (gh-dash's envelope).
type tagged struct {
	ops.Event
	key string
}
