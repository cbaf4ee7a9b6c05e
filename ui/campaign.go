package ui

import (
	"context"
	"fmt"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/text"
)

// The campaign screen: a rolling maintenance of the selected nodes (--auto roll in the
// TUI). C proposes it for the selected nodes; the screen shows what it will do (resuming an
// unfinished campaign of the same nodes) until y starts it; then each node's phase, the
// counts and the ETA, and the current node's operation log. p pauses after the current
// node (and resumes); enter opens the current node's operation view.
//
// Before y, the proposal takes the node plan's overrides (F, D, E, L, M, S, O) and the step
// run on each emptied node (! types --exec, W toggles --wait-ready, w the reason): each
// proposes the campaign again, every node planned anew, and y waits for that.

// campaignState is the campaign proposed, running or watched in this view (one at a time):
// it outlives its screen, which shows it (campaignPane).
type campaignState struct {
	run     *campaign.Campaign
	opts    campaign.Options  // the options run was made with
	next    *campaign.Options // options asked for, while the campaign is proposed again
	seq     int               // the last proposal asked for: an older answer is dropped
	input   lineInput         // the step's command (!) or the reason (w), being typed
	started bool
	ended   bool
	err     error
	cancel  context.CancelFunc
	log     []logLine
	// watching: the campaign on screen runs in another process, shown from its record as
	// last read (campaignwatch.go); watchSeq numbers the watches.
	watching  bool
	watched   model.Campaign
	watchedAt time.Time
	watchSeq  int
}

// campaignPane is the campaign screen: it shows and steers the view's campaign.
type campaignPane struct{}

// typingNow: a line is being typed, every key goes to it.
func (*campaignPane) typingNow(s *shared) bool { return s.campaign.input.typing() }

// running reports whether a campaign was started here and has not ended.
func (p *campaignState) running() bool { return p.started && !p.ended }

// Messages of the campaign.
type (
	campaignReady struct {
		run   *campaign.Campaign
		o     campaign.Options
		err   error
		again bool // a proposal with other options, replacing the one on screen
		seq   int
	}
	campaignDone struct{ err error }
)

const campaignKey = "campaign"

// proposeCampaign reads (or creates) the campaign of the targets in a Cmd; the screen then
// shows it for confirmation.
func (m Model) proposeCampaign(targets []string) (tea.Model, tea.Cmd) {
	switch {
	case m.eng == nil:
		m.setStatus("no cluster", true)
		return m, nil
	case m.s.campaign.run != nil && m.s.campaign.running():
		return m.goTo(&campaignPane{}), nil // one campaign at a time: show the running one
	case len(targets) == 0:
		m.setStatus("nothing selected", true)
		return m, nil
	}
	// Said at once: each node is planned in the background (seconds at 5,000 nodes).
	m.setStatus(fmt.Sprintf("planning a campaign over %d node(s)…", len(targets)), false)
	o := m.s.opts.Campaign
	o.Nodes, o.Run = targets, ops.RunOptions{Policy: m.s.opts.Policy}
	return m, m.newCampaign(o, false, 0)
}

// reproposeCampaign makes the proposal on screen again with other options: each node is
// planned anew, and y waits for it.
func (m Model) reproposeCampaign(o campaign.Options) (tea.Model, tea.Cmd) {
	if m.s.campaign.run == nil || m.s.campaign.started {
		return m, nil
	}
	m.s.campaign.seq++
	m.s.campaign.next = &o
	return m, m.newCampaign(o, true, m.s.campaign.seq)
}

func (m Model) newCampaign(o campaign.Options, again bool, seq int) tea.Cmd {
	eng, ctx, bus, observe := m.eng, m.ctx, m.bus, m.s.opts.Observe
	return func() tea.Msg {
		r, err := campaign.New(ctx, eng, o, func(ev ops.Event) {
			bus.push(campaignTag(ev))
			if observe != nil {
				observe(ev)
			}
		})
		return campaignReady{run: r, o: o, err: err, again: again, seq: seq}
	}
}

// campaignTag routes a campaign's events: its own to the campaign screen, each node operation's
// to that node's operation view (created when its plan arrives).
func campaignTag(ev ops.Event) tagged {
	if _, ok := ev.(ops.CampaignEvent); ok {
		return tagged{ev: ev, key: campaignKey}
	}
	return tagged{ev: ev, key: ev.NodeName(), campaign: true}
}

func (m Model) campaignReady(msg campaignReady) (tea.Model, tea.Cmd) {
	if msg.again {
		p := &m.s.campaign
		if p.run == nil || p.started || msg.seq != p.seq {
			return m, nil // dropped, started or asked again since: not this answer
		}
		p.next = nil
		if msg.err != nil { // the proposal on screen stays, with its options
			m.setStatus("campaign: "+firstLine(text.SafeErr(msg.err)), true)
			return m, nil
		}
		p.run, p.opts = msg.run, msg.o
		m.setStatus("", false)
		return m, nil
	}
	if msg.err != nil {
		m.setStatus("campaign: "+firstLine(text.SafeErr(msg.err)), true)
		return m, nil
	}
	m.s.campaign = campaignState{run: msg.run, opts: msg.o}
	m.push(&campaignPane{})
	m.setStatus("", false) // the "planning…" said at C: the proposal is on screen now
	return m, nil
}

// startCampaign runs the confirmed campaign in the background; quitting waits for it like for
// any operation (it stops at a safe point and its record says where).
func (m Model) startCampaign() (tea.Model, tea.Cmd) {
	ctx, cancel := context.WithCancel(m.ctx)
	m.s.campaign.started, m.s.campaign.cancel = true, cancel
	// The selection was the campaign's: once it runs, u and e act on the cursor again, not on
	// the campaign's nodes left selected.
	m.nodes().selected = map[string]bool{}
	m.s.ops.campaignCancel, m.s.ops.campaignName = cancel, m.s.campaign.run.Record().Name
	r := m.s.campaign.run
	ended := m.s.ops.begin()
	return m, func() tea.Msg {
		defer ended()
		defer cancel()
		return campaignDone{r.Run(ctx)}
	}
}

// record keeps the campaign's own events as its log.
func (p *campaignState) record(ev ops.CampaignEvent) {
	line := text.Sprintf("%s", ev.State)
	bad := ev.State == model.CampaignFailed || ev.Phase == model.PhaseFailed
	if ev.Node != "" {
		line = text.Sprintf("%s %s", ev.Node, ev.Phase)
	}
	// A campaign's stop is explained once, in the title (the error Run returns); its log
	// says when.
	stop := ev.Node == "" && (ev.State == model.CampaignStopped || ev.State == model.CampaignFailed)
	if ev.Message != "" && !stop {
		line += ": " + text.Safe(ev.Message)
	}
	p.log = append(p.log, logLine{ev.At, line, bad})
	if len(p.log) > 200 {
		p.log = p.log[len(p.log)-200:]
	}
}

// stepsLine is what the campaign does at each node, its step (--exec, --wait-ready) included.
func stepsLine(o campaign.Options) string {
	step := ""
	switch {
	case o.Exec != "" && o.WaitReady:
		step = " → run the command, wait for the reboot"
	case o.Exec != "":
		step = " → run the command"
	case o.WaitReady:
		step = " → wait for the reboot"
	}
	home := ""
	if o.ReturnVMs {
		home = " → its VMs brought home, beside the next nodes"
	}
	return "each node: capacity check (the rest must absorb it) → evacuate" + step + " → uncordon → verify it takes work again" + home
}

// campaignFlags are the command-line flags the proposal runs with: the overrides, then the step.
func campaignFlags(o campaign.Options) []string {
	on := text.GivenFlags(o.Run.Policy.Given())
	if o.Exec != "" {
		on = append(on, "--exec "+text.ShellWord(ops.ShownCommand(o.Exec, "")))
	}
	if o.WaitReady {
		on = append(on, "--wait-ready")
	}
	if o.ReturnVMs {
		on = append(on, "--return-vms")
	}
	if o.Run.Why != "" {
		on = append(on, "--reason "+text.ShellWord(o.Run.Why))
	}
	return on
}

// current is the node the campaign works now (the first in progress), or "".
func current(c model.Campaign) string {
	for _, n := range c.Nodes {
		if n.Phase.Started() && !n.Phase.Finished() {
			return n.Name
		}
	}
	return ""
}

func (*campaignPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	p := &s.campaign
	if p.run == nil && !p.watching {
		return goHome{}, true
	}
	if !p.input.typing() {
		return nil, false
	}
	field, value, done := p.input.key(msg)
	if !done {
		return nil, true
	}
	o := p.asked()
	switch field {
	case "exec":
		if value == o.Exec {
			return nil, true
		}
		o.Exec = value
	case "why":
		if value == o.Run.Why {
			return nil, true
		}
		o.Run.Why = value
	}
	return reproposeCampaign{o}, true
}

// asked is the options of the latest proposal asked for (on screen, or on its way).
func (p *campaignState) asked() campaign.Options {
	if p.next != nil {
		return *p.next
	}
	return p.opts
}

// bindings: before y, the proposal (y starts it, esc drops it, the overrides and the step
// propose it again); then p pauses and resumes, and enter opens the current node's operation.
func (*campaignPane) bindings(s *shared) []action {
	p := &s.campaign
	k := s.keys
	if p.watching {
		return []action{{key: k.Back, do: func() intent { return goHome{} }}, show(k.Help)}
	}
	if !p.started {
		return p.proposalBindings(s)
	}
	enter := action{key: k.Enter, disabled: "no node in progress"}
	if p.run != nil {
		if n := current(p.run.Record()); n != "" {
			enter.disabled, enter.do = "", func() intent { return showOp{n} }
		}
	}
	back := action{key: k.Back, do: func() intent { return goHome{} }}
	if p.ended {
		return []action{enter, back, show(k.Help)}
	}
	pause := action{key: k.Pause, do: func() intent {
		if p.run.Paused() {
			p.run.Resume()
			return showStatus{"campaign resumed", false}
		}
		p.run.Pause()
		return showStatus{"pausing: no new node starts after the current one", false}
	}}
	return []action{pause, enter, back, show(k.Help)}
}

func (*campaignPane) view(s *shared) string {
	p := &s.campaign
	if p.watching {
		return p.render(s, p.watched, false)
	}
	if p.run == nil {
		return s.st.Muted.Render("no campaign")
	}
	return p.render(s, p.run.Record(), p.run.Paused())
}

func (p *campaignState) proposalBindings(s *shared) []action {
	k := s.keys
	confirm := action{key: k.Confirm, do: func() intent { return startCampaign{} }}
	if p.next != nil {
		confirm.disabled = "planning every node again with the new options: y when it is on screen"
	}
	// The toggles are hidden from the footer (a line of the proposal names them): the footer
	// keeps y, the step's keys and esc.
	toggle := func(b Binding, f func(*campaign.Options)) action {
		return action{key: b, hidden: true, do: func() intent {
			o := p.asked()
			o.Run.Policy.SkipVMs = slices.Clone(o.Run.Policy.SkipVMs)
			f(&o)
			o.Run.ForceCompute = o.Run.Policy.Force
			return reproposeCampaign{o}
		}}
	}
	out := []action{
		confirm,
		toggle(k.ToggleForce, func(o *campaign.Options) { o.Run.Policy.Force = !o.Run.Policy.Force }),
		toggle(k.ToggleEmptyDir, func(o *campaign.Options) { o.Run.Policy.DeleteEmptyDirData = !o.Run.Policy.DeleteEmptyDirData }),
		toggle(k.ToggleEviction, func(o *campaign.Options) { o.Run.Policy.DisableEviction = !o.Run.Policy.DisableEviction }),
		toggle(k.ToggleLastNode, func(o *campaign.Options) { o.Run.Policy.AllowLastNode = !o.Run.Policy.AllowLastNode }),
		toggle(k.ToggleCold, func(o *campaign.Options) { o.Run.Policy.ColdMigrateRunning = !o.Run.Policy.ColdMigrateRunning }),
	}
	// S leaves every VM that blocks any node where it is (by ID, as --skip-vm), beside those
	// left already; with none blocking, none: as in a node's plan.
	if blockers := p.blockers(); len(leaveBlocking(nil, blockers)) > 0 || len(p.asked().Run.Policy.SkipVMs) > 0 {
		out = append(out, toggle(k.ToggleSkipVMs, func(o *campaign.Options) {
			o.Run.Policy.SkipVMs = leaveBlocking(o.Run.Policy.SkipVMs, blockers)
		}))
	}
	// O moves each VM whose own policy blocks a node anyway (by ID, as --override-vm-policy),
	// or, given already, none; with nothing to override it says why, never nothing.
	overridable := p.policyBlocked()
	if len(overridable) > 0 || len(p.asked().Run.Policy.OverrideVMPolicies) > 0 {
		out = append(out, toggle(k.ToggleVMPolicy, func(o *campaign.Options) {
			if len(o.Run.Policy.OverrideVMPolicies) > 0 {
				o.Run.Policy.OverrideVMPolicies = nil
				return
			}
			o.Run.Policy.OverrideVMPolicies = overridable
		}))
	} else if len(p.asked().Run.Policy.SkipVMs) > 0 {
		out = append(out, action{key: k.ToggleVMPolicy, hidden: true, do: func() intent {
			return showStatus{text: "O: no VM's own policy blocks a node now: S leaves them where they are (S again, then O, to move them)",
				bad: true}
		}})
	}
	wait := toggle(k.WaitReady, func(o *campaign.Options) { o.WaitReady = !o.WaitReady })
	wait.hidden = false
	home := toggle(k.ToggleReturnVMs, func(o *campaign.Options) { o.ReturnVMs = !o.ReturnVMs })
	out = append(out, wait, home,
		action{key: k.Exec, do: func() intent {
			p.input.open("exec", "on each emptied node, run: ", p.asked().Exec, 400)
			return nil
		}},
		action{key: k.Why, hidden: true, do: func() intent {
			p.input.open("why", "reason: ", p.asked().Run.Why, 120)
			return nil
		}},
		action{key: k.Back, do: func() intent { return dropCampaign{} }},
	)
	return out
}

// policyBlocked are the VMs (IDs) whose own maintenance policy blocks a node of the proposal.
func (p *campaignState) policyBlocked() []string {
	var out []string
	for _, r := range p.blockers() {
		if r.Code == model.VMAsksToStay || r.Code == model.VMPolicyUnknown {
			out = append(out, firstNonEmpty(r.ObjectID, r.Object))
		}
	}
	return out
}

// refused is how many nodes of the proposal their check would refuse.
func (p *campaignState) refused() int {
	n := 0
	if p.run != nil {
		for _, nf := range p.run.Forecast().Nodes {
			if len(nf.Blockers) > 0 {
				n++
			}
		}
	}
	return n
}

// blockers are the blockers of the proposal's nodes.
func (p *campaignState) blockers() []model.Reason {
	var out []model.Reason
	if p.run != nil {
		for _, nf := range p.run.Forecast().Nodes {
			out = append(out, nf.Blockers...)
		}
	}
	return out
}
