package model

import (
	"strings"
	"testing"
	"time"
)

func TestParseRateBudget(t *testing.T) {
	for raw, want := range map[string]RateBudget{
		"25% per 10m":        {Raw: "25% per 10m", Percent: 25, Window: 10 * time.Minute},
		"1 per zone per 1h":  {Raw: "1 per zone per 1h", Count: 1, Per: ZoneLabel, Window: time.Hour},
		"2 per rack per 30m": {Raw: "2 per rack per 30m", Count: 2, Per: "rack", Window: 30 * time.Minute},
	} {
		if got, err := ParseRateBudget(raw); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for raw, says := range map[string]string{"25% every 10m": "not a budget", "0 per 10m": "at least 1",
		"150% per 1h": "at most 100%", "1 per tomorrow": "a duration", "1 per zone": "a duration"} {
		if _, err := ParseRateBudget(raw); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: %v; want it to say %q", raw, err, says)
		}
	}
}

// "25% per 10m" of 20 nodes: 5 start within any 10 minutes; the sixth waits until the oldest
// of those leaves the window.
func TestARateBudgetHoldsUntilTheOldestStartLeavesTheWindow(t *testing.T) {
	b, _ := ParseRateBudget("25% per 10m")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	started := []time.Time{now.Add(-9 * time.Minute), now.Add(-3 * time.Minute), now.Add(-2 * time.Minute), now.Add(-time.Minute), now,
		{}, now.Add(-11 * time.Minute)}
	held, frees := b.Holds(now, started, 20)
	if !held || !frees.Equal(now.Add(time.Minute)) {
		t.Errorf("held %v until %v; want held until a minute from now", held, frees)
	}
	if held, _ := b.Holds(now.Add(time.Minute), started, 20); held {
		t.Errorf("a minute later: still held")
	}
}

// 20 nodes under "25% per 10m" start in four batches of five: 30 minutes at least; "1 per
// 1h" of one node takes none.
func TestARateBudgetsLeastTime(t *testing.T) {
	b, _ := ParseRateBudget("25% per 10m")
	if got := b.Least(20); got != 30*time.Minute {
		t.Errorf("20 nodes: %s; want 30m", got)
	}
	one, _ := ParseRateBudget("1 per 1h")
	if got := one.Least(1); got != 0 {
		t.Errorf("one node: %s; want 0", got)
	}
}
