package ui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/text"
)

// Watching a campaign run elsewhere (--auto roll, another operator's terminal): :campaign,
// when this TUI runs none, shows the newest unfinished campaign from its record on the
// cluster, read again every refresh while the screen is open. It is shown, never steered:
// pausing it and its nodes' operations belong to the process that runs it.

// campaignWatched is a read of the watched campaign's record; seq is the watch it belongs to.
type campaignWatched struct {
	c     model.Campaign
	found bool
	err   error
	seq   int
}

// openWatch reads the newest unfinished campaign's record; the screen opens when it arrives.
func (m Model) openWatch() (tea.Model, tea.Cmd) {
	if m.eng == nil {
		m.setStatus("no cluster", true)
		return m, nil
	}
	p := &m.s.campaign
	p.watchSeq++
	if p.watching && (p.watched.State == model.CampaignRunning || p.watched.State == model.CampaignPaused) {
		m = m.goTo(&campaignPane{}) // back to it, read again at once
		return m, m.readWatched(p.watched.Name, 0, m.s.campaign.watchSeq)
	}
	m.s.campaign = campaignState{watchSeq: p.watchSeq}
	return m, m.readWatched("", 0, m.s.campaign.watchSeq)
}

// readWatched reads the record of campaign name ("": the newest unfinished) after wait.
func (m Model) readWatched(name string, wait time.Duration, seq int) tea.Cmd {
	eng, ctx, limit := m.eng, m.ctx, m.s.opts.Refresh
	return func() tea.Msg {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, max(limit, time.Second))
		defer cancel()
		if name != "" {
			c, found, err := campaign.Get(ctx, eng, name)
			return campaignWatched{c, found, err, seq}
		}
		all, err := campaign.List(ctx, eng) // newest first
		for _, c := range all {
			if c.State == model.CampaignRunning || c.State == model.CampaignPaused {
				return campaignWatched{c, true, nil, seq}
			}
		}
		return campaignWatched{err: err, seq: seq}
	}
}

// watched takes a read of the watched record and asks for the next while the screen shows it.
func (m Model) watched(msg campaignWatched) (tea.Model, tea.Cmd) {
	p := &m.s.campaign
	if msg.seq != p.watchSeq || p.run != nil {
		return m, nil // an older watch, or a campaign of this TUI's own took the screen
	}
	if !p.watching { // the read :campaign asked for
		switch {
		case msg.err != nil:
			m.setStatus("reading the campaign records: "+firstLine(text.SafeErr(msg.err)), true)
			return m, nil
		case !msg.found:
			m.setStatus("no campaign runs: select nodes and press C", true)
			return m, nil
		}
		m.s.campaign = campaignState{watching: true, watched: msg.c, watchedAt: m.s.opts.Now(), watchSeq: p.watchSeq}
		m = m.goTo(&campaignPane{})
		return m, m.readWatched(msg.c.Name, m.s.opts.Refresh, p.watchSeq)
	}
	if paneIn[*campaignPane](&m) == nil {
		return m, nil // the watch ends when the way back no longer leads to it; :campaign starts it again
	}
	switch {
	case msg.err != nil:
		m.setStatus("reading campaign "+text.Safe(p.watched.Name)+": "+firstLine(text.SafeErr(msg.err)), true)
	case !msg.found:
		m.setStatus("the record of campaign "+text.Safe(p.watched.Name)+" is gone", true)
	default:
		p.watched, p.watchedAt = msg.c, m.s.opts.Now()
	}
	return m, m.readWatched(p.watched.Name, m.s.opts.Refresh, p.watchSeq)
}
