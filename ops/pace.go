package ops

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// The pace: how many moves drainctl keeps under way at once, within migrations_per_cluster,
// raised and lowered by what it measures of the cloud's control plane, as TCP's congestion
// window is (additive increase, multiplicative decrease). Every answer of Nova and Placement
// is timed; each paceWindow, a window whose answers were slow (the 90th percentile above
// paceSlow, and above paceBaseline times the quickest window's: a cloud whose answers are
// slow on a good day is not struggling) or failing (5xx, 429 or none, more than paceFailing of them) halves the pace, and
// a healthy window in which the pace held a move back raises it by a tenth of the cap. The
// caps are the operator's bounds; the pace only keeps drainctl below them while the control
// plane is struggling (a mass maintenance is what overloads nova-api and its database first).

const (
	paceWindow  = 3 * time.Second
	paceSlow    = time.Second
	paceFailing = 0.01
	// paceBaseline is how many times its best window's p90 the cloud may answer in before
	// the pace calls it slow.
	paceBaseline = 4
)

// pace is the engine's pace; its zero value (no cap) never holds a move.
type pace struct {
	mu      sync.Mutex
	max     int // migrations_per_cluster
	limit   int
	window  time.Duration // paceWindow
	slow    time.Duration // paceSlow
	best    time.Duration // the quickest window's p90 (0: none yet)
	began   time.Time     // this window's
	took    []time.Duration
	failed  int
	held    bool // the pace held a move back in this window
	why     string
	changed time.Time
	clock   func() time.Time
}

func newPace(max int, window, slow time.Duration, clock func() time.Time) *pace {
	return &pace{max: max, limit: max, window: window, slow: slow, began: clock(), clock: clock}
}

// observe counts one answer: how long it took, and its status (0: none came).
func (p *pace) observe(took time.Duration, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roll()
	p.took = append(p.took, took)
	if status == 0 || status == 429 || status >= 500 {
		p.failed++
	}
}

// room says whether one more move fits under the pace, with inFlight under way; a move held
// back counts for raising it.
func (p *pace) room(inFlight int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roll()
	if inFlight < p.limit {
		return true
	}
	p.held = true
	return false
}

// Pace is how many moves the engine keeps under way at once now, of its cap, why it was last
// changed and when ("" and zero: never).
type Pace struct {
	Limit, Max int
	Why        string
	Changed    time.Time
}

// String says the pace as a line: "8 of 10 moves at once (Nova p90 2.1 s over 140 answers)".
func (s Pace) String() string {
	out := fmt.Sprintf("%d of %d moves at once", s.Limit, s.Max)
	if s.Why != "" {
		out += " (" + s.Why + ")"
	}
	return out
}

func (p *pace) state() Pace {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roll()
	return Pace{Limit: p.limit, Max: p.max, Why: p.why, Changed: p.changed}
}

// roll ends the window when it is due, and decides on it. Called with mu.
func (p *pace) roll() {
	now := p.clock()
	if now.Sub(p.began) < p.window {
		return
	}
	n := len(p.took)
	took, failed, held := p.took, p.failed, p.held
	p.began, p.took, p.failed, p.held = now, p.took[:0], 0, false
	if n == 0 || p.max <= 0 {
		return
	}
	slices.Sort(took)
	p90 := took[(n*9)/10]
	if p.best == 0 || p90 < p.best {
		p.best = p90
	}
	limit, why := p.limit, ""
	switch {
	case float64(failed) > paceFailing*float64(n):
		limit, why = max(1, p.limit/2), fmt.Sprintf("%d of %d answers of the cloud failed: halved", failed, n)
	case p90 > max(p.slow, paceBaseline*p.best):
		limit, why = max(1, p.limit/2), fmt.Sprintf("the cloud's p90 %s over %d answers: halved", p90.Round(10*time.Millisecond), n)
	case held && p.limit < p.max:
		limit = min(p.max, p.limit+max(1, p.max/10))
		why = fmt.Sprintf("the cloud's p90 %s over %d answers: raised", p90.Round(10*time.Millisecond), n)
	}
	if limit != p.limit {
		p.limit, p.why, p.changed = limit, why, now
	}
}
