package notify

import (
	"fmt"
	"strings"
	"sync"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// Campaigns picks, from a campaign's events, the notices a person on call must know: it
// started, a node is stuck past its deadline, a node was quarantined, it finished (done,
// failed or stopped). A campaign paused or interrupted is no notice: a person did that.
type Campaigns struct {
	mu    sync.Mutex                     // a campaign's nodes report from their own goroutines
	state map[string]model.CampaignState // campaign -> its last state seen
}

// Observer is an emit function that tells each notice of the events it sees.
func (c *Campaigns) Observer(tell func(Notice)) func(ops.Event) {
	return func(ev ops.Event) {
		for _, n := range c.Notices(ev) {
			tell(n)
		}
	}
}

// Notices are the notices the event makes (none for most).
func (c *Campaigns) Notices(ev ops.Event) []Notice {
	e, ok := ev.(ops.CampaignEvent)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		c.state = map[string]model.CampaignState{}
	}
	var out []Notice
	say := func(kind model.NoticeKind, node, msg string) {
		out = append(out, Notice{Kind: kind, Campaign: e.Campaign, Node: node, Message: msg, At: e.At})
	}
	last := c.state[e.Campaign]
	c.state[e.Campaign] = e.State
	switch {
	// Started, or resumed after an interruption; a resume after a pause is a person's, and no notice.
	case e.State == model.CampaignRunning && last != model.CampaignRunning && last != model.CampaignPaused:
		msg := fmt.Sprintf("campaign %s started: %d node(s) to do", e.Campaign, e.Left+e.InProgress)
		if e.Done > 0 {
			msg = fmt.Sprintf("campaign %s resumed: %d node(s) done, %d to do", e.Campaign, e.Done, e.Left+e.InProgress)
		}
		say(model.NoticeCampaignStarted, "", msg)
	case e.State != last && (e.State == model.CampaignDone || e.State == model.CampaignFailed || e.State == model.CampaignStopped):
		msg := fmt.Sprintf("campaign %s %s: %d node(s) done, %d left", e.Campaign, e.State, e.Done, e.Left)
		if e.Message != "" {
			msg += ": " + e.Message
		}
		say(model.NoticeCampaignFinished, "", msg)
	}
	switch {
	case e.PastDeadline:
		say(model.NoticeNodePastDeadline, e.Node, fmt.Sprintf("campaign %s: %s %s", e.Campaign, e.Node, e.Message))
	case e.Phase == model.PhaseSkipped && strings.HasPrefix(e.Message, model.HeldByOwners):
		say(model.NoticeNodeHeldByOwners, e.Node, fmt.Sprintf("campaign %s: %s %s", e.Campaign, e.Node, e.Message))
	case e.Phase == model.PhaseQuarantined:
		say(model.NoticeNodeQuarantined, e.Node, fmt.Sprintf("campaign %s: %s quarantined: %s", e.Campaign, e.Node, e.Message))
	}
	return out
}
