package model

import (
	"fmt"
	"testing"
	"time"
)

// A campaign's running ETA counts only the nodes it will run: one the forecast expects to
// skip (left untouched at its check) costs nothing.
func TestACampaignsETALeavesOutTheNodesItSkips(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	c := Campaign{Parallel: 1, Nodes: []CampaignNode{
		{Name: "a", Phase: PhaseDone, Started: t0, Finished: t0.Add(time.Minute)},
		{Name: "b", Phase: PhasePending},
		{Name: "c", Phase: PhasePending, Skip: true},
		{Name: "d", Phase: PhasePending, Skip: true},
	}}
	if eta := c.ETAAt(t0.Add(time.Minute)); eta != time.Minute { // ETA() went into ETAAt, one way to count
		t.Errorf("ETA %s; want 1m (one node left to run, two to skip)", eta)
	}
}

// The forecast held against the nodes done: only the done ones with a forecast count.
func TestACampaignsForecastAgainstTheNodesDone(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	c := Campaign{Nodes: []CampaignNode{
		{Name: "a", Phase: PhaseDone, Started: t0, Finished: t0.Add(50 * time.Second), Expected: 40 * time.Second},
		{Name: "b", Phase: PhaseDone, Started: t0, Finished: t0.Add(30 * time.Second), Expected: 20 * time.Second},
		{Name: "c", Phase: PhaseEvacuating, Started: t0, Expected: 20 * time.Second},
		{Name: "d", Phase: PhaseDone, Started: t0, Finished: t0.Add(time.Minute)}, // made before forecasts were kept
	}}
	if f, took, n := c.ForecastError(); f != time.Minute || took != 80*time.Second || n != 2 {
		t.Errorf("forecast %s, took %s over %d node(s); want 1m, 1m20s over 2", f, took, n)
	}
	if f, took, n := (Campaign{}).ForecastError(); f != 0 || took != 0 || n != 0 {
		t.Errorf("no node done: %s %s %d", f, took, n)
	}
}

// A campaign's ETA keeps the floor of its rate budgets, as its forecast counted it: four
// nodes at 1 per 10m, the first started a minute ago, are not done before the last may start,
// 29 minutes from now, whatever the nodes' own time says.
func TestACampaignsETAKeepsItsRateBudgets(t *testing.T) {
	now := time.Now()
	c := Campaign{Parallel: 1, Expected: 4 * time.Minute, Budgets: []string{"1 per 10m"}, Nodes: []CampaignNode{
		{Name: "a", Phase: PhaseEvacuating, Started: now.Add(-time.Minute)},
		{Name: "b", Phase: PhasePending}, {Name: "c", Phase: PhasePending}, {Name: "d", Phase: PhasePending},
	}}
	if eta := c.ETAAt(now); eta < 29*time.Minute {
		t.Errorf("ETA %v; want at least 29m (the last node may start 29 minutes from now)", eta)
	}
	c.Budgets = nil
	if eta := c.ETAAt(now); eta > 5*time.Minute {
		t.Errorf("ETA without budgets %v; want the forecast's", eta)
	}
}

// A per-label rate budget holds each value's nodes apart: two nodes of one rack under "1 per
// rack per 30m" put the second's start 30 minutes after the first's, and the ETA says so (the
// demo's campaign read "eta 9m46s" with its rack's budget holding the next node for 30m); nodes
// of two racks go together.
func TestACampaignsETAKeepsAPerLabelBudget(t *testing.T) {
	now := time.Now()
	rack := func(v string) map[string]string { return map[string]string{"rack": v} }
	c := Campaign{Parallel: 1, Expected: 2 * time.Minute, Budgets: []string{"25% per 10m", "1 per rack per 30m"}, Nodes: []CampaignNode{
		{Name: "a", Phase: PhaseDone, Started: now.Add(-2 * time.Minute), Finished: now.Add(-time.Minute), Budgets: rack("r2")},
		{Name: "b", Phase: PhasePending, Budgets: rack("r2")},
	}}
	if eta := c.ETAAt(now); eta < 28*time.Minute {
		t.Errorf("ETA %v; want at least 28m (b's rack frees 28 minutes from now)", eta)
	}
	c.Nodes[1].Budgets = rack("r3")
	if eta := c.ETAAt(now); eta > 10*time.Minute {
		t.Errorf("ETA %v with b in another rack; want the campaign-wide budget's 8m and b's time", eta)
	}
}

// The running ETA lays the nodes still to run into the slots as they free: four slots whose
// nodes began 9, 7, 3 and 1 minutes ago (ten minutes a node) free in 1, 3, 7 and 9 minutes,
// and the two nodes pending take the first two, done 13 minutes from now. Counted in rounds
// (two of ten minutes, less the longest run so far) it read 11 minutes.
func TestACampaignsETALaysItsNodesIntoTheSlotsAsTheyFree(t *testing.T) {
	now := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	c := Campaign{Parallel: 4}
	for i := range 8 {
		start := now.Add(time.Duration(-60+i) * time.Minute)
		c.Nodes = append(c.Nodes, CampaignNode{Name: fmt.Sprint("done-", i), Phase: PhaseDone, Started: start, Finished: start.Add(10 * time.Minute)})
	}
	for _, ago := range []int{9, 7, 3, 1} {
		c.Nodes = append(c.Nodes, CampaignNode{Name: fmt.Sprint("running-", ago), Phase: PhaseEvacuating, Started: now.Add(-time.Duration(ago) * time.Minute)})
	}
	c.Nodes = append(c.Nodes, CampaignNode{Name: "next", Phase: PhasePending}, CampaignNode{Name: "last", Phase: PhasePending})
	if eta := c.ETAAt(now); eta != 13*time.Minute {
		t.Errorf("ETA %v; want 13m (the pending two in the slots freeing in 1 and 3 minutes)", eta)
	}
}

// A node its VMs' owners hold (their window opens in an hour, or their lead ends then) starts
// no sooner: the ETA is that hour and the node's time, not the nodes' time alone.
func TestACampaignsETAWaitsForTheOwners(t *testing.T) {
	now := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	c := Campaign{Parallel: 2, Nodes: []CampaignNode{
		{Name: "a", Phase: PhaseDone, Started: now.Add(-20 * time.Minute), Finished: now.Add(-10 * time.Minute)},
		{Name: "held", Phase: PhasePending, NotBefore: now.Add(time.Hour)},
		{Name: "b", Phase: PhasePending},
	}}
	if eta := c.ETAAt(now); eta != 70*time.Minute {
		t.Errorf("ETA %v; want 1h10m (held starts in an hour, takes ten minutes)", eta)
	}
	c.Nodes[1].NotBefore = now.Add(-time.Minute) // the window opened already
	if eta := c.ETAAt(now); eta != 10*time.Minute {
		t.Errorf("ETA %v once the owners' hold is past; want 10m (both at once)", eta)
	}
}
