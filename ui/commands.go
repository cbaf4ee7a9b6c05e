package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// pending is a plan waiting for confirmation.
type pending struct {
	op      model.OpKind
	targets []string
	ro      ops.RunOptions
	batch   ops.Batch // the plans, as the engine's PlanBatch made them
	err     error
	// maintenance: confirming a NodeMaintenance to create or delete (the plan shows what
	// the controller will do) instead of running the plan here.
	maintenance string
	// rejudged: this plan was made again, from a fresh read, because y was pressed on a
	// refusal (its blockers may depend on time or on the world: a node NotReady long enough
	// by now, a fence just given).
	rejudged bool
	// seq orders the plans asked for: one that arrives after a newer one was asked for (two
	// toggles typed quickly) is dropped, so no toggle is lost.
	seq int
}

// NodeMaintenance actions.
const (
	maintainCreate = "create"
	maintainDelete = "delete"
)

// apply carries out a pane's intent.
func (m Model) apply(in intent) (tea.Model, tea.Cmd) {
	if in == nil {
		return m, nil
	}
	switch in := in.(type) {
	case goTo:
		return m.goTo(in.pane), nil
	case goHome:
		return m.goHome(), nil
	case goBack:
		if c, ok := m.top().(*confirmPane); ok {
			c.pending = nil
		}
		m.pop()
		return m, nil
	case propose:
		return m.propose(in.op, in.targets)
	case proposeMaint:
		return m.proposeMaintenance(in.action, in.node)
	case replan:
		// The toggle counts at once: the next toggle builds on it, not on the plan on screen.
		m.planSeq++
		if c := paneIn[*confirmPane](&m); c != nil && c.pending != nil {
			shown := *c.pending
			shown.ro = in.p.ro
			c.pending = &shown
		}
		cmd := m.plan(in.p.op, in.p.targets, in.p.ro)
		if in.p.rejudged {
			m.setStatus("judging the plan again from a fresh read…", false)
			plan := cmd
			cmd = func() tea.Msg {
				msg := plan()
				if p, ok := msg.(planMsg); ok {
					p.rejudged = true
					return p
				}
				return msg
			}
		}
		return m, cmd
	case pickTarget:
		var refuse func(model.VM, model.Node) *model.Reason
		if m.eng != nil {
			refuse = m.eng.TargetReason
		}
		picker := &listPane{}
		picker.openHostPicker(in.p, &m.s, refuse)
		m.openPicker(picker) // esc: back to the confirmation
		return m, nil
	case runPending:
		return m.start(in.p)
	case maintain:
		if c := paneIn[*confirmPane](&m); c != nil {
			c.pending = nil
		}
		m.pop()
		return m, m.maintain(in.p)
	case runCmd:
		return m, in.cmd
	case forceVM:
		m.setStatus(text.Sprintf("force-completing %s…", in.name), false)
		return m, m.forceComplete(in.vmID, in.name)
	case showStatus:
		m.setStatus(in.text, in.bad)
		return m, nil
	case quitWait:
		m.pop()
		m.setStatus("waiting: quit again when the operations are done", false)
		return m, nil
	case quitLeave:
		m.s.ops.cancelAll() // each stops at a safe point and records it on its node
		m.setStatus("stopping at a safe point; the nodes record where", false)
		return m, m.waitStopped()
	case quitAbort:
		return m.abortForQuit()
	case quitNow:
		return m, tea.Quit
	case showOps:
		if len(m.s.ops.order) == 0 && len(operationsElsewhere(&m.s)) == 0 {
			m.setStatus("no operation has run yet, here or by another drainctl (no node holds a journal)", true)
			return m, nil
		}
		if m.s.shownOp == "" && len(m.s.ops.order) > 0 {
			m.s.shownOp = m.s.ops.order[len(m.s.ops.order)-1]
		}
		return m.goTo(reopen[opPane](&m)), nil
	case switchContext:
		return m.switchTo(in.name)
	case openDetail:
		d := &detailPane{}
		d.open(in.node)
		if n, ok := m.s.inv.Node(in.node); ok && in.vm != "" {
			d.cursorOn(n, in.vm)
		}
		return m.goTo(d), nil
	case describe:
		var d describePane
		of, ok := describers[in.kind]
		if ok {
			d, ok = of(in.key, &m.s)
		}
		if !ok {
			m.setStatus(in.kind+" "+in.key+" is gone", true)
			return m, nil
		}
		return m.goTo(&d), nil // a status said of another node stays with its screen
	case replanTo:
		m.push(reopen[confirmPane](&m)) // the picker returns to its confirmation
		m.planSeq++
		return m, m.plan(in.p.op, in.p.targets, in.ro)
	case asking:
		m.push(&askPane{question: in.question, yes: in.yes})
		return m, nil
	case answered:
		m.pop()
		return m.apply(in.yes)
	case proposeCampaign:
		return m.proposeCampaign(in.targets)
	case reproposeCampaign:
		return m.reproposeCampaign(in.o)
	case startCampaign:
		m.setStatus("", false)
		return m.startCampaign()
	case dropCampaign:
		m.s.campaign = campaignState{}
		m.pop()
		return m, nil
	case showOp:
		m.s.shownOp = in.key
		return m.goTo(reopen[opPane](&m)), nil
	}
	return m, nil // not reached: every intent has its case (TestIntentSwitchIsExhaustive)
}

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
	ro := ops.RunOptions{Policy: m.s.opts.Policy}
	if p := reopen[confirmPane](&m).pending; p != nil && p.op == op && strings.Join(p.targets, ",") == strings.Join(targets, ",") {
		ro = p.ro // keep the overrides toggled so far
	}
	// A new proposal reads its nodes' hosts afresh on the view's last whole read of Nova (made
	// every refresh): at 5,000 nodes a whole read took seconds a key. Each step still reads
	// what it acts on before it acts.
	ro.FromCache, ro.ByHost = false, true
	m.setStatus(text.Sprintf("planning %s of %s…", op, strings.Join(targets, ", ")), false)
	m.planSeq++
	return m, m.plan(op, targets, ro)
}

// proposeMaintenance shows what creating (or deleting) the node's NodeMaintenance will make
// the controller do, for confirmation: the evacuation's plan, or the restore's.
func (m Model) proposeMaintenance(action string, node string) (tea.Model, tea.Cmd) {
	if m.s.opts.Maintenances == nil {
		m.setStatus("NodeMaintenance is not available: install deploy/crd-nodemaintenance.yaml and run drainctl --controller", true)
		return m, nil
	}
	nm, exists := m.s.maint[node]
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
	m.planSeq++
	plan := m.plan(op, []string{node}, ops.RunOptions{Policy: m.s.opts.Policy})
	return m, func() tea.Msg {
		p := plan().(planMsg)
		p.maintenance = action
		return p
	}
}

// maintain creates or deletes the NodeMaintenance; the controller does the rest.
func (m Model) maintain(p *pending) tea.Cmd {
	store, ctx, node := m.s.opts.Maintenances, m.ctx, p.targets[0]
	nm := m.s.maint[node]
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
	row := ops.RowOf(op)
	if row.OnVM && !m.s.inv.NovaConfigured {
		return "Nova is not configured: there are no VMs"
	}
	for _, t := range targets {
		if row.OnVM {
			continue
		}
		n, ok := m.s.inv.Node(t)
		if !ok || n.Kube == nil {
			return t + " is no Kubernetes node"
		}
		if row.Cordoned && n.Kube.Schedulable && (n.Compute == nil || n.Compute.Enabled) {
			return t + " is not cordoned"
		}
		if row.DeadNode && n.Kube.Ready {
			return t + " is Ready: recover is for a dead node (NotReady, its nova-compute down); e evacuates a live one"
		}
		if row.Exclusive && m.running(t) {
			return "an operation is already running on " + t
		}
	}
	return ""
}

// plan plans the batch in a Cmd: the engine's batch rules (an evacuation counts the other
// targets as leaving).
func (m Model) plan(op model.OpKind, targets []string, ro ops.RunOptions) tea.Cmd {
	eng, ctx, seq := m.eng, m.ctx, m.planSeq
	return func() tea.Msg {
		p := pending{op: op, targets: targets, ro: ro, seq: seq}
		p.batch, p.err = eng.PlanBatch(ctx, op, targets, ro)
		return planMsg(p)
	}
}

// start runs the confirmed batch in the background through the engine's RunBatch, which
// holds concurrency.nodes: plans beyond it wait their turn, shown as queued.
func (m Model) start(p *pending) (tea.Model, tea.Cmd) {
	m.swap(&opPane{})
	m.setStatus("", false)
	return m, m.runBatch(p.batch, func(err error) tea.Msg { return batchDone{err} })
}

// runBatch shows each plan of the batch as an operation and runs the batch; the Cmd ends
// with the batch, after every plan recorded where it stands, with done's message.
func (m *Model) runBatch(b ops.Batch, done func(error) tea.Msg) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	flags := strings.Join(text.GivenFlags(b.Run.Policy.Given()), " ")
	for _, pl := range b.Plans {
		key := opKey(pl)
		m.s.ops.add(key, pl, m.s.opts.Now(), cancel)
		m.s.ops.views[key].flags = flags
		m.s.shownOp = key
	}
	eng, bus := m.eng, m.bus
	ended := m.s.ops.begin()
	return func() tea.Msg {
		defer ended()
		defer cancel()
		_, err := eng.RunBatch(ctx, b, func(pl model.Plan) func(ops.Event) { return bus.emitFor(opKey(pl)) })
		return done(err)
	}
}

// opKey names an operation: its node, or node/VM for one on a VM.
func opKey(p model.Plan) string {
	if ops.RowOf(p.Op).OnVM {
		return p.Node + "/" + p.VM
	}
	return p.Node
}

// forceComplete asks Nova to finish the VM's migration and reports how that went.
func (m Model) forceComplete(vmID, name string) tea.Cmd {
	eng, ctx := m.eng, m.ctx
	return func() tea.Msg {
		if err := eng.ForceComplete(ctx, vmID); err != nil {
			return errorMsg{fmt.Errorf("force-complete %s: %w", name, err)}
		}
		return statusMsg(text.Sprintf("force-complete of %s accepted: Nova pauses it to finish the copy", name))
	}
}

// abortForQuit aborts what runs, as x does (the plan, its events in the operation view,
// its errors), then quits; a failed abort stays on screen instead of quitting.
func (m Model) abortForQuit() (tea.Model, tea.Cmd) {
	var nodes []string
	for _, k := range m.s.ops.runningKeys() {
		if v := m.s.ops.views[k]; !ops.RowOf(v.plan.Op).OnVM { // a node's operation: its abort stops the VM's too
			nodes = append(nodes, v.plan.Node)
		}
	}
	m.swap(reopen[opPane](&m))
	m.setStatus("aborting, then quitting", false)
	eng, ctx := m.eng, m.ctx
	plan := func() tea.Msg {
		b, err := eng.PlanBatch(ctx, model.OpAbort, nodes, ops.RunOptions{Policy: m.s.opts.Policy})
		if err != nil {
			return abortedForQuit{err}
		}
		return abortPlanned{b}
	}
	return m, plan
}

// abortPlanned: the quit dialog's abort is planned; run it like any batch.
type abortPlanned struct{ b ops.Batch }

// waitStopped returns once no operation of this view is running (bounded).
func (m Model) waitStopped() tea.Cmd {
	tracker := m.s.ops
	return func() tea.Msg {
		tracker.wait(30 * time.Second)
		return stoppedMsg{}
	}
}

// describers say what d shows of an object, by its kind: one row each.
var describers = map[string]func(key string, s *shared) (describePane, bool){
	"node": func(key string, s *shared) (describePane, bool) {
		n, ok := s.inv.Node(key)
		if !ok {
			return describePane{}, false
		}
		return describeNode(n, s), true
	},
	"vm":       describeVM,
	"pod":      describePod,
	"recovery": describeRecovery,
}
