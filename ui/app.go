package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
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
	// Where is the cluster: every screen's header names it.
	Where model.Where
	// Groups are the operator's VM group budgets ([policy.groups]), for a VM's describe.
	Groups model.GroupRules
	// Campaign is a campaign as the configuration's [roll] sets it: a campaign started here
	// keeps its window, rate budgets and bounds, as roll does.
	Campaign campaign.Options
	// Summary, when set, receives after the TUI closes what its operations left and how to
	// resume them. Command is how those commands reach this cluster ("drainctl --config
	// FILE --kubeconfig FILE"; the context on screen is added), so that none of them acts on
	// another (a default kubeconfig's).
	Summary io.Writer
	Command string
	// Contexts are the kubeconfig's contexts and Switch connects to one (:ctx); nil: no switching.
	Contexts []string
	Switch   Switcher
	// Machines, in the demo, lets a node's machine die and come back (:kill, :revive).
	Machines Machines
	// Observe sees every event of a campaign run from the TUI ([notify]'s webhook); may be nil.
	Observe func(ops.Event)
	// AutoRecovery: automatic recovery runs in this process (the demo's controller).
	AutoRecovery bool
	// Notices are what the controllers running in this process tell the person on call (the
	// demo's automatic recovery): each is shown on the status line. May be nil.
	Notices <-chan model.Notice
}

// Machines is the demo's power switch over its nodes' machines.
type Machines interface {
	KillHost(node string) error
	ReviveHost(node string) error
	// SetCondition sets a node condition True (a degrading host: [proactive]) or clears it.
	SetCondition(node, typ string, on bool) error
	// SetReserve labels a node the failover reserve ([recover] reserve_label) or unlabels it.
	SetReserve(node string, on bool) error
}

// shared is what every pane reads; the root owns it and passes it down.
type shared struct {
	opts          Options
	keys          *KeyMap // immutable once made: shared by the model's copies
	st            *Styles
	width, height int

	inv        model.Inventory
	invErr     error
	errSince   time.Time // when reading began to fail
	novaAt     time.Time // when Nova was last read, while reads fail
	invGen     int       // counts the inventories shown: a row rendered for another is stale
	loaded     bool      // a full read (with its ranking) has arrived
	partial    bool      // inv is what the first read had so far (syncing: it goes on)
	syncing    bool
	nameWidth  int // the longest node name (+1 for the mismatch mark), set per inventory
	totalVMs   int
	totalPods  int
	maint      map[string]model.NodeMaintenance // node -> the NodeMaintenance on it
	victims    []policy.Victim                  // scale-down ranking, from the same read as inv
	rank       map[string]int                   // node -> rank (0: not a candidate)
	ops        *operations                      // the operations started here, running or ended
	holder     string                           // this process's name in the journals it writes ("": no engine)
	recoveries []model.Recovery                 // the recovery records, as :recoveries last read them
	holds      []model.RecoveryHold             // what holds automatic recovery, as the last load read it
	proactive  map[string]model.Proactive       // [proactive]'s records by node, as the last load read them
	pace       ops.Pace                         // the engine's pace, as the last event or tick read it
	failover   []model.ZoneRoom                 // the room for the next host failure, per zone ([capacity]; nil: none asked)
	shownOp    string                           // the operation the operations pane shows (its key; "": the newest)
	campaign   campaignState                    // the campaign proposed, running or watched here (one at a time)
}

func (s *shared) pageSize() int {
	return max(1, s.height-6-s.bannerLines())
}

// bannerLines are the lines under the header: reads failing, automatic recovery held.
func (s *shared) bannerLines() int {
	n := 0
	if s.invErr != nil {
		n++
	}
	if len(s.holds) > 0 {
		n++
	}
	return n
}

// Model is the root model: it routes messages, handles the global keys, owns the running
// operations (and waits for them on quit), and leaves each pane its own state, keys and
// drawing. Update only records messages and starts Cmds; it never waits on the cluster.
type Model struct {
	eng *ops.Engine
	ctx context.Context
	bus *eventBus
	s   shared

	// stack is the way back, the pane on screen on top: the nodes' pane at the bottom, always,
	// and no screen twice (nav.go), so no sequence of keys leaves a screen without a way back.
	stack     []pane
	planSeq   int // the last plan asked for (pending.seq)
	loading   bool
	ticking   bool          // a tickMsg is on its way (none on Kubernetes alone)
	every     time.Duration // the wait before the next Nova read (load.go's nextEvery)
	wantFresh bool          // a Nova read was asked for while another load ran: do it next
	status    string
	statusBad bool

	cmdline    textinput.Model // command mode (:)
	commanding bool
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
	keys, st := DefaultKeys(), DefaultStyles()
	if o.ReadOnly {
		keys = keys.WithoutDangerous()
	}
	holder := ""
	if eng != nil {
		holder = eng.Holder()
	}
	return Model{eng: eng, ctx: ctx, bus: newEventBus(), ticking: true, // Init starts the tick
		s:     shared{opts: o, keys: &keys, st: &st, width: 80, height: 24, ops: newOperations(), holder: holder},
		stack: []pane{&nodesPane{filter: ti, selected: map[string]bool{}, cache: &rowCache{}}}, cmdline: newCommandLine()}
}

// Run shows the TUI until the operator quits. However it ends (q, ctrl-c, a signal), the
// operations it started stop at a safe point and record it on their nodes before Run
// returns, unless they take longer than a minute.
func Run(ctx context.Context, eng *ops.Engine, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := New(ctx, eng, o)
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx))
	final, err := p.Run()
	m.stop(cancel, time.Minute)
	left := 0
	if fm, ok := final.(Model); ok && o.Summary != nil {
		left = fm.summary(o.Summary)
	}
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		err = nil
	}
	if err == nil && left > 0 {
		return &UnfinishedError{Left: left}
	}
	return err
}

// UnfinishedError: the TUI closed with operations not done (the summary lists them, with
// the commands that resume or undo each): a script that ran it must not read success.
type UnfinishedError struct{ Left int }

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("%d operation(s) left unfinished (listed above)", e.Left)
}

// stop ends the view's operations: cancel makes each stop at its next safe point, and stop
// returns once they have recorded where they stopped on their nodes (or after timeout).
func (m Model) stop(cancel context.CancelFunc, timeout time.Duration) {
	cancel()
	m.s.ops.wait(timeout)
}

// Init loads the inventory and starts listening to the engine and to Kubernetes.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.load(true), m.watchSync(0), m.bus.wait(), m.tick(), m.watchKube(), m.watchMaintenances(), m.watchNotices())
}

// Update records a message and returns what to do next.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.own()
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.s.width, m.s.height = msg.Width, msg.Height
		if l, ok := m.top().(*listPane); ok && l.pick == nil {
			l.rebuild(&m.s) // its columns are fitted to the width
		}
		return m, nil
	case inventoryMsg:
		return m.inventoryLoaded(msg)
	case syncMsg:
		if m.s.loaded { // the full read came first
			return m, nil
		}
		m.s.syncing, m.s.partial = msg.syncing, true
		m.showInventory(msg.inv)
		if msg.syncing {
			return m, m.watchSync(500 * time.Millisecond)
		}
		return m, nil
	case tickMsg:
		if m.eng != nil && !m.eng.NovaConfigured() {
			// Kubernetes alone: its changes arrive by watch (kubeMsg); a timed rebuild of the
			// whole model would only burn CPU (a 150,000-pod cluster idled at half a core).
			// No tick at all: a message that changes nothing on screen leaves bubbletea's
			// renderer copying the unchanged frame 60 times a second (~1 MB/s of garbage).
			m.ticking = false
			return m, nil
		}
		m.readPace()
		return m, tea.Batch(m.refresh(true), m.tick())
	case kubeMsg:
		return m, tea.Batch(m.refresh(false), m.watchKube())
	case eventsMsg:
		ended := false
		for _, ev := range msg {
			if ce, ok := ev.ev.(ops.CampaignEvent); ok {
				m.s.campaign.record(ce)
				continue
			}
			ended = m.s.ops.record(ev, m.s.opts.Now()) || ended
		}
		m.readPace()
		cmd := m.bus.wait()
		if ended { // an operation ended: show the cluster as it left it
			cmd = tea.Batch(cmd, m.refresh(true))
		}
		return m, cmd
	case planMsg:
		p := pending(msg)
		if p.seq < m.planSeq {
			return m, nil // a newer plan was asked for since: it is on its way
		}
		c := reopen[confirmPane](&m)
		if c.pending == nil || c.pending.op != p.op {
			c.offset = 0
		}
		c.pending = &p
		m.setStatus("", false) // a status about the previous plan no longer holds
		if b := p.batch.Blockers(); p.rejudged && p.err == nil {
			if held := heldBy(p.batch.Plans); len(b) == 0 && held != "" {
				m.setStatus(text.Sprintf("judged again: nothing else refuses it, but %s", held), true)
			} else if len(b) == 0 {
				m.setStatus("judged again: nothing refuses it now; y runs it", false)
			} else {
				m.setStatus(text.Sprintf("judged again: still refused by %d blocker(s); first: %s", len(b), text.Reason(b[0])), true)
			}
		}
		m.push(c)
		return m, nil
	case batchDone:
		if msg.err != nil && !errors.As(msg.err, new(*ops.Interrupted)) {
			m.setStatus(firstLine(msg.err.Error()), true)
		}
		return m, m.refresh(true)
	case abortPlanned:
		cmd := m.runBatch(msg.b, func(err error) tea.Msg { return abortedForQuit{err} })
		return m, cmd
	case abortedForQuit:
		if msg.err != nil {
			m.swap(reopen[opPane](&m))
			m.setStatus("abort failed, not quitting: "+firstLine(msg.err.Error()), true)
			return m, nil
		}
		return m, tea.Quit
	case stoppedMsg:
		return m, tea.Quit
	case campaignReady:
		return m.campaignReady(msg)
	case ctxSwitched:
		return m.switched(msg)
	case recoveriesMsg:
		return m.recoveriesRead(msg)
	case campaignWatched:
		return m.watched(msg)
	case campaignDone:
		m.s.campaign.ended, m.s.campaign.err = true, msg.err
		m.s.ops.campaignCancel = nil
		// The campaign screen's title says why it stopped: the status says it elsewhere only.
		if msg.err != nil && !errors.As(msg.err, new(*ops.Interrupted)) && !on[*campaignPane](&m) {
			m.setStatus("campaign: "+firstLine(text.SafeErr(msg.err)), true)
		}
		return m, m.refresh(true)
	case maintMsg:
		m.setMaintenances(msg)
		return m, m.watchMaintenances()
	case noticeMsg:
		m.setStatus(msg.Message, noticeIsBad[msg.Kind])
		return m, tea.Batch(m.watchNotices(), m.refresh(false))
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

// key: the keys typed together come one by one, the filter takes its keys, the dialogs
// theirs, then the global keys, then the pane on screen.
func (m Model) key(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	// Keys typed fast (or pasted) arrive as one message of several runes: take them one by one.
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !m.typingLine() && !msg.Paste {
		var cmds []tea.Cmd
		var next tea.Model = m
		for _, r := range msg.Runes {
			var cmd tea.Cmd
			next, cmd = next.(Model).key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
			cmds = append(cmds, cmd)
		}
		return next, tea.Batch(cmds...)
	}
	k := m.s.keys
	if matches(msg, k.Interrupt) && !on[*quitPane](&m) {
		return m.askQuit()
	}
	if m.nodes().editing {
		cmd := m.nodes().edit(msg, &m.s)
		return m, cmd
	}
	if m.commanding {
		return m.commandKey(msg)
	}
	if l, ok := m.top().(*listPane); ok && l.editing {
		l.edit(msg)
		return m, nil
	}
	p := m.top()
	if t, ok := p.(interface{ typingNow(*shared) bool }); ok && t.typingNow(&m.s) {
		return m.apply(pressKey(p, msg, &m.s)) // a line typed: q and : are letters
	}
	if _, ok := p.(modal); ok {
		return m.apply(pressKey(p, msg, &m.s))
	}
	switch {
	case matches(msg, k.Quit):
		return m.askQuit()
	case matches(msg, k.Command):
		m.commanding = true
		m.cmdline.SetValue("")
		m.cmdline.Focus()
		return m, textinput.Blink
	case matches(msg, k.Refresh):
		m.setStatus(refreshing, false)
		if m.eng != nil {
			m.eng.Inventory().ReadAllNext() // everything, not only what changed
		}
		m.every = 0
		return m, m.refresh(true)
	}
	for _, row := range screens { // the keys that open a screen from anywhere
		if row.key != nil && matches(msg, row.key(k)) {
			return row.commands[0].run(m, "")
		}
	}
	if b, ok := readOnlyKey(msg, m.s.opts.ReadOnly); ok { // a key --readonly turned off says so
		m.setStatus(
			text.Sprintf("read-only (--readonly): %s would %s; nothing is changed from this terminal", b.Help().Key, b.Help().Desc),
			true,
		)
		return m, nil
	}
	return m.apply(pressKey(p, msg, &m.s))
}

// readOnlyKey is the destructive binding a key press asks for when --readonly turned it off.
func readOnlyKey(msg tea.KeyMsg, readOnly bool) (Binding, bool) {
	if !readOnly {
		return Binding{}, false
	}
	all := DefaultKeys()
	for _, b := range all.all() {
		if b.Dangerous && slices.Contains(b.Keys(), msg.String()) {
			return *b, true
		}
	}
	return Binding{}, false
}

// readPace keeps the engine's pace for the header: read on its events and ticks, not in View
// (which reads no clock).
func (m *Model) readPace() {
	if m.eng != nil {
		m.s.pace = m.eng.Pace()
	}
}

// setStatus shows a line under the pane; statuses quote names and errors, so it is made Safe.
func (m *Model) setStatus(s string, bad bool) { m.status, m.statusBad = text.Safe(s), bad }

func (m *Model) setMaintenances(list []model.NodeMaintenance) {
	m.s.maint = make(map[string]model.NodeMaintenance, len(list))
	for _, nm := range list {
		m.s.maint[nm.NodeName] = nm
	}
}

// current is the node under the nodes pane's cursor.
func (m Model) current() (model.Node, bool) { return m.nodes().current(&m.s) }

// targets are the selected nodes, or the one under the cursor.
func (m Model) targets() []string { return m.nodes().targets(&m.s) }

// typingLine: a filter or the command line is being typed.
func (m *Model) typingLine() bool {
	l, onList := m.top().(*listPane)
	return m.nodes().editing || m.commanding || onList && l.editing
}

func (m Model) running(node string) bool { return m.s.ops.running(node) }

// askQuit quits at once when nothing runs, else asks what to do with what runs.
func (m Model) askQuit() (tea.Model, tea.Cmd) {
	if len(m.s.ops.runningKeys()) > 0 || m.s.campaign.running() {
		m.push(&quitPane{})
		return m, nil
	}
	return m, tea.Quit
}

// heldBy is the first plan's note that another drainctl holds its node ("" when none does).
func heldBy(plans []model.Plan) string {
	for _, p := range plans {
		for _, r := range p.Reasons {
			if r.Code == model.HeldByOther && r.Severity == model.Notes {
				return r.Message
			}
		}
	}
	return ""
}
