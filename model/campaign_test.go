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
