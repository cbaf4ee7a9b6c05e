package model

import (
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
	if eta := c.ETA(); eta != time.Minute {
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
