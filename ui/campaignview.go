package ui

import (
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// render draws the campaign as its record stands (pausing: a pause was asked for).
func (p *campaignState) render(s *shared, c model.Campaign, pausing bool) string {
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
		state = fmt.Sprintf(
			"stopped before the first node: %d node(s) refused at the check, each beside its blockers (esc, then C proposes it again)",
			p.refused(),
		)
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
		b.WriteString(
			st.Muted.Render(
				truncate(text.Sprintf("record %s, read %s · run by %s", written, p.watchedAt.Format("15:04:05"), c.Holder), width),
			) + "\n",
		)
	}
	if !p.started && !p.watching {
		for _, l := range wrap(stepsLine(p.asked()), width) {
			b.WriteString(l + "\n")
		}
		if on := campaignFlags(p.asked()); len(on) > 0 {
			writeWrapped(&b, width, st.Danger, "runs with: "+strings.Join(on, " "))
		}
		keys := "F D E L M toggle the overrides for every node, H brings the VMs home"
		if len(leaveBlocking(nil, p.blockers())) > 0 || len(p.asked().Run.Policy.SkipVMs) > 0 {
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
		if w := p.asked().Gates.Window; w != nil { // [roll] window: kept here as roll keeps it
			writeWrapped(&b, width, st.Muted, "no node starts outside the window "+w.String()+" ([roll] window)")
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
		if n.Phase == model.PhasePending && !p.started { // what it would lose for good, and each VM's note, before y
			for _, r := range fc[n.Name].Losses {
				writeWrapped(&b, width, st.Danger, "      LOST FOR GOOD "+text.Reason(r))
			}
			writeNotes(&b, width, s.height, fc[n.Name].VMNotes, st)
			if nf := fc[n.Name]; nf.OwnersWindow != "" {
				writeWrapped(&b, width, st.Muted, "      taken after the other nodes: "+text.Safe(nf.OwnersWindow))
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

// noteLabel heads a VM's note in a campaign's proposal: DOWNTIME for a VM that stops.
func noteLabel(r model.Reason) string {
	if r.Code == model.Downtime {
		return "DOWNTIME "
	}
	return "notes "
}

// writeNotes writes a node's VM notes (a VM stopped and moved cold, an owner's word, a lock),
// as its plan says them; on a short screen one line names them (the DOWNTIME first), so the
// proposal keeps its header and keys in view.
func writeNotes(b *strings.Builder, width, height int, notes []model.Reason, st *Styles) {
	if height >= 40 {
		for _, r := range notes {
			style := st.Muted
			if r.Code == model.Downtime {
				style = st.Danger
			}
			writeWrapped(b, width, style, "      "+noteLabel(r)+text.Reason(r))
		}
		return
	}
	var down, other []string
	for _, r := range notes {
		if r.Code == model.Downtime {
			down = append(down, text.Safe(r.Object))
		} else {
			other = append(other, text.Safe(r.Object))
		}
	}
	if len(down) > 0 {
		b.WriteString(st.Danger.Render(truncate("      DOWNTIME "+strings.Join(down, ", "), width)) + "\n")
	}
	if len(other) > 0 {
		b.WriteString(st.Muted.Render(truncate(fmt.Sprintf("      notes on %d VM(s): %s (a taller screen shows why)", len(other),
			strings.Join(other, ", ")), width)) + "\n")
	}
}
