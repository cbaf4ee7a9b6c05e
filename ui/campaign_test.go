package ui

import (
	"strings"
	"testing"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/sim/simtest"
)

// A campaign from the TUI: C on two selected nodes shows it for confirmation (nothing
// runs), y starts it, p pauses it after the current node (the next stays pending), p again
// resumes it, and both nodes come back.
func TestTUICampaignPausesAfterTheCurrentNode(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c1, c2 := c.Name("c1"), c.Name("c2")
	l := newLive(t, c, c.Engine("tui@campaign", nil))
	l.selectNodes(c1, c2)
	l.keys("C")
	if l.m.screen != campaignScreen || l.m.campaign.roll == nil || l.m.campaign.started {
		t.Fatalf("C: screen %v, status %q", l.m.screen, l.m.status)
	}
	if v := l.m.View(); !strings.Contains(v, "y starts it") || strings.Count(v, " pending ") != 2 {
		t.Errorf("the confirmation does not show the campaign:\n%s", v)
	}
	if n := c.Muts.N.Load(); n != 0 {
		t.Fatalf("proposing the campaign changed the cluster (%d calls)", n)
	}
	l.keys("y")
	rec := func() model.Campaign { return l.m.campaign.roll.Record() }
	l.drain(c1+" started", func() bool { return rec().Nodes[0].Phase.Started() })
	l.keys("p")
	l.drain("the campaign paused after "+c1, func() bool { return rec().State == model.CampaignPaused })
	if r := rec(); r.Nodes[0].Phase != model.PhaseDone || r.Nodes[1].Phase != model.PhasePending {
		t.Fatalf("paused: %+v", r.Nodes)
	}
	if v := l.m.View(); !strings.Contains(v, "1 done · 0 in progress · 1 left") {
		t.Errorf("the campaign screen while paused:\n%s", v)
	}
	// No node operation runs while paused, but the campaign does: q asks, w goes back.
	l.keys("q")
	if v := l.m.View(); l.m.screen != quitScreen || !strings.Contains(v, "a campaign") {
		t.Fatalf("q while the campaign is paused: screen %v\n%s", l.m.screen, v)
	}
	l.keys("w")
	l.keys("p")
	l.drain("the campaign done", func() bool { return rec().State == model.CampaignDone })
	for _, n := range rec().Nodes {
		if k := c.Node(n.Name); n.Phase != model.PhaseDone || !k.Schedulable {
			t.Errorf("%s: %s, schedulable %v", n.Name, n.Phase, k.Schedulable)
		}
	}
	if _, ok := l.m.s.ops.views[c1]; !ok {
		t.Errorf("no operation view for %s's evacuation", c1)
	}
}
