package ui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

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

// campaignPane is the campaign proposed or running in this view (one at a time).
type campaignPane struct {
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

// typingNow: a line is being typed, every key goes to it.
func (p *campaignPane) typingNow() bool { return p.input.typing() }

// running reports whether a campaign was started here and has not ended.
func (p *campaignPane) running() bool { return p.started && !p.ended }

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
	case m.campaign.run != nil && m.campaign.running():
		return m.goTo(campaignScreen), nil // one campaign at a time: show the running one
	case len(targets) == 0:
		m.setStatus("nothing selected", true)
		return m, nil
	}
	// Said at once: each node is planned in the background (seconds at 5,000 nodes).
	m.setStatus(fmt.Sprintf("planning a campaign over %d node(s)…", len(targets)), false)
	return m, m.newCampaign(campaign.Options{Nodes: targets, Run: ops.RunOptions{Policy: m.s.opts.Policy}}, false, 0)
}

// reproposeCampaign makes the proposal on screen again with other options: each node is
// planned anew, and y waits for it.
func (m Model) reproposeCampaign(o campaign.Options) (tea.Model, tea.Cmd) {
	if m.campaign.run == nil || m.campaign.started {
		return m, nil
	}
	m.campaign.seq++
	m.campaign.next = &o
	return m, m.newCampaign(o, true, m.campaign.seq)
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
		p := &m.campaign
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
	m.campaign = campaignPane{run: msg.run, opts: msg.o}
	m.push(campaignScreen)
	m.setStatus("", false) // the "planning…" said at C: the proposal is on screen now
	return m, nil
}

// startCampaign runs the confirmed campaign in the background; quitting waits for it like for
// any operation (it stops at a safe point and its record says where).
func (m Model) startCampaign() (tea.Model, tea.Cmd) {
	ctx, cancel := context.WithCancel(m.ctx)
	m.campaign.started, m.campaign.cancel = true, cancel
	// The selection was the campaign's: once it runs, u and e act on the cursor again, not on
	// the campaign's nodes left selected.
	m.nodes.selected = map[string]bool{}
	m.s.ops.campaignCancel, m.s.ops.campaignName = cancel, m.campaign.run.Record().Name
	r := m.campaign.run
	ended := m.s.ops.begin()
	return m, func() tea.Msg {
		defer ended()
		defer cancel()
		return campaignDone{r.Run(ctx)}
	}
}

// record keeps the campaign's own events as its log.
func (p *campaignPane) record(ev ops.CampaignEvent) {
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

func (p *campaignPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	if p.run == nil && !p.watching {
		return goTo{nodesScreen}, true
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
func (p *campaignPane) asked() campaign.Options {
	if p.next != nil {
		return *p.next
	}
	return p.opts
}

// bindings: before y, the proposal (y starts it, esc drops it, the overrides and the step
// propose it again); then p pauses and resumes, and enter opens the current node's operation.
func (p *campaignPane) bindings(s *shared) []action {
	k := s.keys
	if p.watching {
		return []action{{key: k.Back, do: func() intent { return goTo{nodesScreen} }}, show(k.Help)}
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
	back := action{key: k.Back, do: func() intent { return goTo{nodesScreen} }}
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

func (p *campaignPane) view(s *shared) string {
	if p.watching {
		return p.render(s, p.watched, false)
	}
	if p.run == nil {
		return s.st.Muted.Render("no campaign")
	}
	return p.render(s, p.run.Record(), p.run.Paused())
}

func (p *campaignPane) proposalBindings(s *shared) []action {
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
	// S leaves every VM that blocks any node where it is (by ID, as --skip-vm), or, given
	// already, none: as in a node's plan.
	if skip := p.skippable(); len(skip) > 0 || len(p.asked().Run.Policy.SkipVMs) > 0 {
		out = append(out, toggle(k.ToggleSkipVMs, func(o *campaign.Options) {
			if len(o.Run.Policy.SkipVMs) > 0 {
				o.Run.Policy.SkipVMs = nil
				return
			}
			o.Run.Policy.SkipVMs = skip
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
			return showStatus{text: "O: no VM's own policy blocks a node now: S leaves them where they are (S again, then O, to move them)", bad: true}
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
func (p *campaignPane) policyBlocked() []string {
	return p.blockingVMs(func(r model.Reason) bool { return r.Code == model.VMAsksToStay || r.Code == model.VMPolicyUnknown })
}

// refused is how many nodes of the proposal their check would refuse.
func (p *campaignPane) refused() int {
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

// skippable is every VM that blocks a node of the proposal and --skip-vm would leave.
func (p *campaignPane) skippable() []string {
	return p.blockingVMs(func(r model.Reason) bool { return r.Override == model.OverrideSkipVM })
}

// blockingVMs are the VMs (IDs) of the blockers of the proposal's nodes that match.
func (p *campaignPane) blockingVMs(match func(model.Reason) bool) []string {
	var out []string
	if p.run == nil {
		return nil
	}
	for _, nf := range p.run.Forecast().Nodes {
		for _, r := range nf.Blockers {
			if match(r) {
				out = append(out, firstNonEmpty(r.ObjectID, r.Object))
			}
		}
	}
	return out
}

// render draws the campaign as its record stands (pausing: a pause was asked for).
func (p *campaignPane) render(s *shared, c model.Campaign, pausing bool) string {
	st, width := s.st, s.width
	done, inProgress, left := c.Count()
	var b strings.Builder
	state := string(c.State)
	switch {
	case p.watching:
		state = fmt.Sprintf("%s · watched (esc leaves it running)", c.State)
	case !p.started && done > 0:
		state = fmt.Sprintf("unfinished: %d of %d done. y resumes it, esc cancels", done, len(c.Nodes))
	case !p.started:
		state = "y starts it, esc cancels"
	case p.ended && p.err != nil && done == 0 && inProgress == 0 && p.refused() > 0 && errors.As(p.err, new(*ops.RefusedError)):
		state = fmt.Sprintf("stopped before the first node: %d node(s) refused at the check, each beside its blockers (esc, then C proposes it again)", p.refused())
	case p.ended && p.err != nil:
		state += ": " + text.SafeErr(p.err)
	case c.State == model.CampaignPaused && !p.ended:
		state = "paused: no node in progress (p resumes)"
	case pausing && !p.ended:
		state = "pausing after the current node (p resumes)"
	case state == "":
		state = "starting"
	}
	title := text.Sprintf("campaign %s", c.Name)
	stateStyle := st.Muted
	if c.State == model.CampaignFailed || c.State == model.CampaignStopped {
		stateStyle = st.Error
	}
	// The state goes beside the title when it fits, else under it whole: a refusal's header
	// was cut at 160 columns too.
	if lipgloss.Width(title)+2+lipgloss.Width(state) <= width {
		b.WriteString(st.Title.Render(title) + "  " + stateStyle.Render(state) + "\n")
	} else {
		b.WriteString(st.Title.Render(truncate(title, width)) + "\n")
		writeWrapped(&b, width, stateStyle, "  "+state)
	}
	at := "one node at a time"
	if c.Parallel > 1 {
		at = fmt.Sprintf("%d nodes at a time", c.Parallel)
	}
	summary := fmt.Sprintf("%d done · %d in progress · %d left · %s", done, inProgress, left, at)
	if eta := c.ETAAt(s.opts.Now()); eta > 0 && (p.running() || p.watching) {
		summary += " · eta " + text.Duration(eta)
	}
	b.WriteString(truncate(summary, width) + "\n")
	if p.watching { // whose it is, and how fresh what is shown: a process killed mid-campaign leaves "running" behind
		written := "never written"
		if !c.Updated.IsZero() {
			written = fmt.Sprintf("written %s ago (%s)", text.Duration(max(0, p.watchedAt.Sub(c.Updated))), c.Updated.Format("15:04:05"))
		}
		b.WriteString(st.Muted.Render(truncate(text.Sprintf("record %s, read %s · run by %s", written, p.watchedAt.Format("15:04:05"), c.Holder), width)) + "\n")
	}
	if !p.started && !p.watching {
		for _, l := range wrap(stepsLine(p.asked()), width) {
			b.WriteString(l + "\n")
		}
		if on := campaignFlags(p.asked()); len(on) > 0 {
			writeWrapped(&b, width, st.Danger, "runs with: "+strings.Join(on, " "))
		}
		keys := "F D E L M toggle the overrides for every node, H brings the VMs home"
		if len(p.skippable()) > 0 || len(p.asked().Run.Policy.SkipVMs) > 0 {
			keys += ", S leaves the VMs that block"
		}
		if len(p.policyBlocked()) > 0 || len(p.asked().Run.Policy.OverrideVMPolicies) > 0 {
			keys += ", O moves the VMs whose own policy blocks anyway"
		}
		writeWrapped(&b, width, st.Muted, keys+"; w types the reason") // at 80 columns too: every key named
		switch {
		case p.input.typing():
			b.WriteString(p.input.view() + "\n")
		case p.next != nil:
			b.WriteString(st.Muted.Render("planning every node again…") + "\n")
		}
		if p.run != nil { // what it will cost (ops/campaign/forecast.go)
			f := p.run.Forecast()
			style := st.Muted
			if f.Short != "" {
				style = st.Error
			}
			writeWrapped(&b, width, style, text.ForecastLines(f)...)
		}
	}
	rows := max(3, (s.height-8)/2)
	cur := current(c)
	fc := map[string]model.NodeForecast{}
	if p.run != nil {
		for _, nf := range p.run.Forecast().Nodes {
			fc[nf.Node] = nf
		}
	}
	first := 0
	for i, n := range c.Nodes { // keep the current node in view
		if n.Name == cur {
			first = max(0, min(i-rows/2, len(c.Nodes)-rows))
		}
	}
	for i := first; i < len(c.Nodes) && i < first+rows; i++ {
		n := c.Nodes[i]
		// Until it starts, and when it stopped before the node, a node's refusal stays beside it.
		refusable := n.Phase == model.PhasePending && (!p.started || p.ended)
		mark := "  "
		if n.Name == cur {
			mark = "▸ "
		}
		took := ""
		switch {
		case n.Phase.Finished() && !n.Started.IsZero():
			took = text.Duration(n.Finished.Sub(n.Started))
		case n.Phase.Started() && !n.Started.IsZero():
			took = "since " + n.Started.Format("15:04:05")
		}
		detail := text.Safe(n.Error)
		switch {
		case n.Blocked != "":
			detail = "blocked: " + text.Safe(n.Blocked)
		case refusable && len(fc[n.Name].Blockers) > 0: // its check would refuse it
			detail = fmt.Sprintf("refused by %d blocker(s):", len(fc[n.Name].Blockers))
		case !p.started && fc[n.Name].Node != "":
			detail = text.NodeForecast(fc[n.Name])
		}
		line := fmt.Sprintf("%s%-*s %-11s %-10s %s", mark, s.nameWidth, fit(n.Name, s.nameWidth), n.Phase, took, detail)
		style := st.Muted
		switch n.Phase {
		case model.PhaseFailed:
			style = st.Error
		case model.PhaseDone:
			style = st.OK
		}
		if refusable && len(fc[n.Name].Blockers) > 0 {
			style = st.Error
		}
		if n.Name == cur {
			style = st.Selected
		}
		b.WriteString(style.Render(truncate(line, width)) + "\n")
		if refusable { // every blocker, wrapped under its node: the remedy is what the operator acts on
			for _, r := range fc[n.Name].Blockers {
				writeWrapped(&b, width, st.Error, "      "+text.Reason(r))
			}
		}
		if n.Phase == model.PhasePending && !p.started { // what it would lose for good, before y
			for _, r := range fc[n.Name].Losses {
				writeWrapped(&b, width, st.Danger, "      LOST FOR GOOD "+text.Reason(r))
			}
		}
	}
	if len(c.Nodes) > rows {
		b.WriteString(st.Muted.Render(fmt.Sprintf("  (%d nodes)", len(c.Nodes))) + "\n")
	}
	logRows := max(1, s.height-6-strings.Count(b.String(), "\n"))
	lines := p.log
	if v, ok := s.ops.views[cur]; ok { // the current node's operation, under the campaign's own lines
		lines = append(append([]logLine{}, lines...), v.log...)
	}
	writeLog(&b, lines, logRows, s)
	return strings.TrimRight(b.String(), "\n")
}
