package ui

import (
	"context"
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
	// Maintenances are the cluster's NodeMaintenance resources; nil when the CRD is not
	// installed (the keys then say so).
	Maintenances ops.Maintenances
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
	wantFresh bool  // a Nova read was asked for while another load ran: do it next
	rows      []int // indexes into inv.Nodes that pass the filter
	nameWidth int   // the longest node name (+1 for the mismatch mark), set per inventory
	totalVMs  int
	totalPods int
	maint     map[string]model.NodeMaintenance // node -> the NodeMaintenance on it
	victims   []policy.Victim                  // scale-down ranking, from the same read as inv
	rank      map[string]int                   // node -> rank (0: not a candidate)
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
	// maintenance: confirming a NodeMaintenance to create or delete (the plan shows what
	// the controller will do) instead of running the plan here.
	maintenance string
}

// NodeMaintenance actions.
const (
	maintainCreate = "create"
	maintainDelete = "delete"
)

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
		maint   []model.NodeMaintenance
		err     error
	}
	maintMsg  []model.NodeMaintenance
	statusMsg string
	tickMsg   struct{}
	planMsg   pending
	runDone   struct{ node string }
	kubeMsg   struct{}
	errorMsg  struct{ err error }
)

// Init loads the inventory and starts listening to the engine and to Kubernetes.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.load(true), m.bus.wait(), m.tick(), m.watchKube(), m.watchMaintenances())
}

// load reads the inventory and ranks it in a Cmd, off the UI path. fresh reads Nova again;
// otherwise the Kubernetes cache is re-joined with the last Nova read.
func (m Model) load(fresh bool) tea.Cmd {
	if m.eng == nil {
		return nil
	}
	eng, ctx, pol, store := m.eng, m.ctx, m.opts.Policy, m.opts.Maintenances
	return func() tea.Msg {
		victims, inv, err := eng.Recommend(ctx, pol, fresh)
		msg := inventoryMsg{inv: inv, victims: victims, err: err}
		if store != nil {
			msg.maint = store.List()
		}
		return msg
	}
}

// watchMaintenances follows the NodeMaintenance resources (their status moves on while the
// controller works), at most four times a second.
func (m Model) watchMaintenances() tea.Cmd {
	store := m.opts.Maintenances
	if store == nil {
		return nil
	}
	return m.watch(store.Subscribe, 250*time.Millisecond, func() tea.Msg { return maintMsg(store.List()) })
}

// watch waits for a change, then for quiet (at most one message per quiet period), and
// reports it as msg.
func (m Model) watch(subscribe func() (<-chan struct{}, func()), quiet time.Duration, msg func() tea.Msg) tea.Cmd {
	ctx := m.ctx
	return func() tea.Msg {
		ch, cancel := subscribe()
		defer cancel()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-time.After(quiet):
		case <-ctx.Done():
		}
		return msg()
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
	return m.watch(m.eng.Inventory().Subscribe, time.Second, func() tea.Msg { return kubeMsg{} })
}

// Update records a message and returns what to do next.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case inventoryMsg:
		m.loading = false
		var next tea.Cmd
		if m.wantFresh {
			m.wantFresh = false
			next = m.refresh(true)
		}
		if msg.err != nil {
			m.invErr = msg.err
			return m, next
		}
		m.inv, m.invErr, m.loaded = msg.inv, nil, true
		if msg.maint != nil || m.opts.Maintenances == nil {
			m.setMaintenances(msg.maint)
		}
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
		return m, next
	case tickMsg:
		return m, tea.Batch(m.refresh(true), m.tick())
	case kubeMsg:
		return m, tea.Batch(m.refresh(false), m.watchKube())
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
		return m, m.refresh(true)
	case maintMsg:
		m.setMaintenances(msg)
		return m, m.watchMaintenances()
	case statusMsg:
		m.setStatus(string(msg), false)
		return m, nil
	case errorMsg:
		m.setStatus(msg.err.Error(), true)
		return m, nil
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *Model) refresh(fresh bool) tea.Cmd {
	if m.loading {
		m.wantFresh = m.wantFresh || fresh
		return nil
	}
	m.loading = true
	return m.load(fresh)
}

func (m *Model) setStatus(s string, bad bool) { m.status, m.statusBad = s, bad }

func (m *Model) setMaintenances(list []model.NodeMaintenance) {
	m.maint = make(map[string]model.NodeMaintenance, len(list))
	for _, nm := range list {
		m.maint[nm.NodeName] = nm
	}
}

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
