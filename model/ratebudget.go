package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate budgets ([roll] budget, #57.2): at most so many of a campaign's nodes start within any
// window of time, "25% per 10m" of the campaign's nodes, or "1 per zone per 1h" of each value
// of a node label (zone stands for topology.kubernetes.io/zone), beside --parallel and the
// window: Karpenter's disruption budgets, over time.

// RateBudget is one of them.
type RateBudget struct {
	Raw     string
	Count   int     // "N per": at most N
	Percent float64 // "P% per": at most P% of the nodes (of the domain), rounded up, at least 1
	Per     string  // a node label key: the budget holds each of its values apart ("": the campaign's)
	Window  time.Duration
}

// ZoneLabel is what "per zone" names.
const ZoneLabel = "topology.kubernetes.io/zone"

// ParseRateBudget reads "N per WINDOW", "P% per WINDOW", or either "per LABEL per WINDOW".
func ParseRateBudget(raw string) (RateBudget, error) {
	b := RateBudget{Raw: raw}
	f := strings.Fields(raw)
	if (len(f) != 3 && len(f) != 5) || f[1] != "per" || (len(f) == 5 && f[3] != "per") {
		return b, fmt.Errorf("%q is not a budget: write \"N per WINDOW\", \"P%% per WINDOW\" or add \"per LABEL\" "+
			"(e.g. \"25%% per 10m\", \"1 per zone per 1h\")", raw)
	}
	if p, ok := strings.CutSuffix(f[0], "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || !(v > 0 && v <= 100) { // NaN too
			return b, fmt.Errorf("%q: the share must be above 0%% and at most 100%%, got %q", raw, f[0])
		}
		b.Percent = v
	} else if n, err := strconv.Atoi(f[0]); err != nil || n < 1 {
		return b, fmt.Errorf("%q: the count must be a whole number of at least 1, got %q", raw, f[0])
	} else {
		b.Count = n
	}
	if len(f) == 5 {
		b.Per = f[2]
		if b.Per == "zone" {
			b.Per = ZoneLabel
		}
		if !labelKey.MatchString(b.Per) {
			return b, fmt.Errorf("%q: %q is no node label key (e.g. zone, topology.kubernetes.io/zone)", raw, f[2])
		}
	}
	d, err := time.ParseDuration(f[len(f)-1])
	if err != nil || d < time.Second || d > 30*24*time.Hour {
		return b, fmt.Errorf("%q: the window must be a duration from 1s to 720h, such as 10m or 1h, got %q", raw, f[len(f)-1])
	}
	b.Window = d
	return b, nil
}

// Limit is how many of members nodes may start within a window.
func (b RateBudget) Limit(members int) int {
	if b.Percent > 0 {
		return max(1, int(b.Percent*float64(members)/100+0.999999))
	}
	return b.Count
}

// Holds says whether the budget holds a node back at now, given when its domain's nodes
// started (zero: not yet) of members, and when it frees (the oldest start in the window
// leaving it).
func (b RateBudget) Holds(now time.Time, started []time.Time, members int) (bool, time.Time) {
	var in []time.Time
	for _, t := range started {
		if !t.IsZero() && now.Sub(t) < b.Window {
			in = append(in, t)
		}
	}
	if len(in) < b.Limit(members) {
		return false, time.Time{}
	}
	oldest := in[0]
	for _, t := range in {
		if t.Before(oldest) {
			oldest = t
		}
	}
	return true, oldest.Add(b.Window)
}

// Least is the least time members nodes take to start under the budget: a window for each
// full batch but the first.
func (b RateBudget) Least(members int) time.Duration {
	if members == 0 {
		return 0
	}
	l := b.Limit(members)
	return time.Duration((members+l-1)/l-1) * b.Window
}

// RateFloor is what a rate budget does to a campaign's forecast: the least time it takes.
type RateFloor struct {
	Budget string        `json:"budget"`
	Least  time.Duration `json:"least"`
}
