package ops

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// The pace: how many moves drainctl keeps under way at once, within migrations_per_cluster,
// raised and lowered by what it measures of the control planes, as TCP's congestion window is
// (additive increase, multiplicative decrease). Every answer of each control plane the pace
// follows (paceSignals) is timed; each paceWindow, a window in which one of them answered
// slowly (its 90th percentile above paceSlow, and above paceBaseline times its own quickest
// window's: a cloud whose answers are slow on a good day is not struggling) or failed (5xx, 429
// or none, more than paceFailing of them) halves the pace, and a healthy window in which the
// pace held a move back raises it by a tenth of the cap. The caps are the operator's bounds;
// the pace only keeps drainctl below them while a control plane is struggling (a mass
// maintenance is what overloads nova-api and its database first; the moves' leases and
// evictions load the API server too).

const (
	paceWindow  = 3 * time.Second
	paceSlow    = time.Second
	paceFailing = 0.01
	// paceBaseline is how many times its best window's p90 a control plane may answer in
	// before the pace calls it slow.
	paceBaseline = 4
)

// paceSignal is a control plane the pace follows.
type paceSignal int

const (
	paceCloud paceSignal = iota
	paceKube
	paceSignalCount
)

// paceSignals name them, in the order a window judges them (the first struggling one says
// why the pace was halved).
var paceSignals = [paceSignalCount]string{
	paceCloud: "the cloud",      // Nova and Placement: every request of ops/nova
	paceKube:  "the API server", // Kubernetes: every request but a watch and an informer's list (ops/kube)
}

// signalWindow is what one control plane answered in the window, and its quickest window.
type signalWindow struct {
	best   time.Duration // the quickest window's p90 (0: none yet)
	took   []time.Duration
	failed int
}

// pace is the engine's pace; its zero value (no cap) never holds a move.
type pace struct {
	mu      sync.Mutex
	max     int // migrations_per_cluster
	limit   int
	window  time.Duration // paceWindow
	slow    time.Duration // paceSlow
	signals [paceSignalCount]signalWindow
	began   time.Time // this window's
	held    bool      // the pace held a move back in this window
	why     string
	changed time.Time
	clock   func() time.Time
}

func newPace(max int, window, slow time.Duration, clock func() time.Time) *pace {
	return &pace{max: max, limit: max, window: window, slow: slow, began: clock(), clock: clock}
}

// observe counts one answer of a control plane: how long it took, and its status (0: none
// came).
func (p *pace) observe(sig paceSignal, took time.Duration, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roll()
	w := &p.signals[sig]
	w.took = append(w.took, took)
	if status == 0 || status == 429 || status >= 500 {
		w.failed++
	}
}

// observer is observe for one control plane, as its client tells answers.
func (p *pace) observer(sig paceSignal) func(time.Duration, int) {
	return func(took time.Duration, status int) { p.observe(sig, took, status) }
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
	held := p.held
	p.began, p.held = now, false
	if p.max <= 0 {
		return
	}
	limit, why, healthy := p.limit, "", true
	said := "" // the first control plane that answered, for a raise's why
	for sig := range p.signals {
		w := &p.signals[sig]
		took, failed, n := w.took, w.failed, len(w.took)
		w.took, w.failed = w.took[:0], 0
		if n == 0 {
			continue
		}
		slices.Sort(took)
		p90 := took[(n*9)/10]
		if w.best == 0 || p90 < w.best {
			w.best = p90
		}
		name := paceSignals[sig]
		switch {
		case !healthy: // halved by a control plane before: said once
		case float64(failed) > paceFailing*float64(n):
			healthy, limit, why = false, max(1, p.limit/2), fmt.Sprintf("%d of %d answers of %s failed: halved", failed, n, name)
		case p90 > max(p.slow, paceBaseline*w.best):
			healthy, limit = false, max(1, p.limit/2)
			why = fmt.Sprintf("%s's p90 %s over %d answers: halved", name, p90.Round(10*time.Millisecond), n)
		case said == "":
			said = fmt.Sprintf("%s's p90 %s over %d answers", name, p90.Round(10*time.Millisecond), n)
		}
	}
	if healthy && said != "" && held && p.limit < p.max {
		limit, why = min(p.max, p.limit+max(1, p.max/10)), said+": raised"
	}
	if limit != p.limit {
		p.limit, p.why, p.changed = limit, why, now
	}
}
