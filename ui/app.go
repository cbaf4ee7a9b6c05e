package ui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
)

type screen int

const (
	nodesScreen screen = iota
	detailScreen
	opScreen
	confirmScreen
	helpScreen
	quitScreen
	victimsScreen
)

// Options configure the view.
type Options struct {
	Policy   policy.Options // the configured policy; overrides toggle on top of it
	Refresh  time.Duration  // Nova refresh interval
	ReadOnly bool
	Title    string // e.g. "demo"
	Now      func() time.Time
}

// Model is the root model. Panes render from its state; Update only records messages and
// starts Cmds, it never waits on the cluster.
type Model struct {
	eng  *ops.Engine
	ctx  context.Context
	opts Options
	keys KeyMap
	st   Styles
	bus  *eventBus

	width, height int
	screen, back  screen

	inv       model.Inventory
	invErr    error
	loaded    bool
	loading   bool
	rows      []int // indexes into inv.Nodes that pass the filter
	nameWidth int   // the longest node name (+1 for the mismatch mark), set per inventory
	totalVMs  int
	totalPods int
	victims   []policy.Victim // scale-down ranking, from the same read as inv
	rank      map[string]int  // node -> rank (0: not a candidate)
	vicCursor int
	cursor    int
	filter    textinput.Model
	editing   bool
	selected  map[string]bool

	detail    string // node shown in detail
	vmCursor  int
	vmChosen  map[string]bool
	opCursor  int // VM cursor in the operation view
	ops       map[string]*opView
	opOrder   []string
	shownOp   string
	pending   *pending
	status    string
	statusBad bool
}

// pending is a plan waiting for confirmation.
type pending struct {
	op      model.OpKind
	targets []string
	ro      ops.RunOptions
	plans   []model.Plan
	err     error
}

// New builds the model. eng may be nil in tests that only render.
func New(ctx context.Context, eng *ops.Engine, o Options) Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Refresh == 0 {
		o.Refresh = 5 * time.Second
	}
	ti := textinput.New()
	ti.Prompt = "/"
	ti.CharLimit = 64
	keys := DefaultKeys()
	if o.ReadOnly {
		keys = keys.WithoutDangerous()
	}
	return Model{eng: eng, ctx: ctx, opts: o, keys: keys, st: DefaultStyles(), bus: newEventBus(), filter: ti,
		selected: map[string]bool{}, vmChosen: map[string]bool{}, ops: map[string]*opView{}, width: 80, height: 24}
}

// Messages.
type (
	inventoryMsg struct {
		inv     model.Inventory
		victims []policy.Victim
		err     error
	}
	tickMsg  struct{}
	planMsg  pending
	runDone  struct{ node string }
	kubeMsg  struct{}
	errorMsg struct{ err error }
)

// Init loads the inventory and starts listening to the engine and to Kubernetes.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.load(), m.bus.wait(), m.tick(), m.watchKube())
}

func (m Model) load() tea.Cmd {
	if m.eng == nil {
		return nil
	}
	eng, ctx, pol := m.eng, m.ctx, m.opts.Policy
	return func() tea.Msg {
		victims, inv, err := eng.Recommend(ctx, pol) // the ranking is computed here, off the UI path
		return inventoryMsg{inv, victims, err}
	}
}

func (m Model) tick() tea.Cmd {
	return tea.Tick(m.opts.Refresh, func(time.Time) tea.Msg { return tickMsg{} })
}

// watchKube turns informer changes into refreshes, at most one a second.
func (m Model) watchKube() tea.Cmd {
	if m.eng == nil {
		return nil
	}
	eng, ctx := m.eng, m.ctx
	return func() tea.Msg {
		ch, cancel := eng.Inventory().Subscribe()
		defer cancel()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return kubeMsg{}
	}
}

// Update records a message and returns what to do next.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case inventoryMsg:
		m.loading = false
		if msg.err != nil {
			m.invErr = msg.err
			return m, nil
		}
		m.inv, m.invErr, m.loaded = msg.inv, nil, true
		m.victims, m.rank = msg.victims, make(map[string]int, len(msg.victims))
		for _, v := range msg.victims {
			m.rank[v.Node] = v.Rank
		}
		m.nameWidth, m.totalVMs, m.totalPods = 8, 0, 0
		for _, n := range m.inv.Nodes {
			m.nameWidth = min(32, max(m.nameWidth, len(n.Name)+1))
			m.totalVMs += len(n.VMs)
			m.totalPods += len(n.Pods)
		}
		m.applyFilter()
		return m, nil
	case tickMsg:
		return m, tea.Batch(m.refresh(), m.tick())
	case kubeMsg:
		return m, tea.Batch(m.refresh(), m.watchKube())
	case eventsMsg:
		for _, ev := range msg {
			m.record(ev)
		}
		return m, m.bus.wait()
	case planMsg:
		p := pending(msg)
		m.pending = &p
		if m.screen != confirmScreen {
			m.back = m.screen
		}
		m.screen = confirmScreen
		return m, nil
	case runDone:
		return m, m.refresh()
	case errorMsg:
		m.setStatus(msg.err.Error(), true)
		return m, nil
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *Model) refresh() tea.Cmd {
	if m.loading {
		return nil
	}
	m.loading = true
	return m.load()
}

func (m *Model) setStatus(s string, bad bool) { m.status, m.statusBad = s, bad }

// applyFilter recomputes the visible rows; only here, not on every frame.
func (m *Model) applyFilter() {
	q := strings.ToLower(strings.TrimSpace(m.filter.Value()))
	m.rows = m.rows[:0]
	for i, n := range m.inv.Nodes {
		if q == "" || strings.Contains(strings.ToLower(n.Name+" "+n.Host+" "+rolesOf(n)), q) {
			m.rows = append(m.rows, i)
		}
	}
	if m.cursor >= len(m.rows) {
		m.cursor = max(0, len(m.rows)-1)
	}
}

func rolesOf(n model.Node) string {
	if n.Kube == nil {
		return ""
	}
	return strings.Join(n.Kube.Roles, ",")
}

func (m Model) current() (model.Node, bool) {
	if m.cursor < 0 || m.cursor >= len(m.rows) {
		return model.Node{}, false
	}
	return m.inv.Nodes[m.rows[m.cursor]], true
}

func (m Model) node(name string) (model.Node, bool) { return m.inv.Node(name) }

// targets are the selected nodes, or the one under the cursor.
func (m Model) targets() []string {
	if len(m.selected) > 0 {
		out := make([]string, 0, len(m.selected))
		for n := range m.selected {
			out = append(out, n)
		}
		sort.Strings(out)
		return out
	}
	if n, ok := m.current(); ok {
		return []string{n.Name}
	}
	return nil
}

func (m Model) pageSize() int { return max(1, m.height-6) }

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
		return m, m.refresh()
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

func (m Model) confirmKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	p := m.pending
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
