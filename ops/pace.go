package ops

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// The pace: how many moves drainctl keeps under way at once, within migrations_per_cluster,
// raised and lowered by what it measures, as TCP's congestion window is (additive increase,
// multiplicative decrease). Every reading of each signal the pace follows (paceSignals: the
// control planes' answers, the live moves' copy, the budgets' waits) is timed; each
// paceWindow, a window in which one of them was slow (its 90th percentile above the row's
// floor, and above paceBaseline times its own quickest window's: a cloud whose answers are
// slow on a good day is not struggling) or failing (more than the row's share of readings)
// halves the pace, and a healthy window in which the pace held a move back raises it (by a
// tenth of the cap up to just below where it last broke, then one at a time: raise). The caps
// are the operator's bounds; the pace only keeps drainctl below them while something is
// struggling (a mass maintenance is what overloads nova-api and its database first; the
// moves' leases and evictions load the API server; moves sharing a link each copy slower and
// stop converging; pods waiting long on their budgets say the cluster is slow to run them
// again elsewhere, and more nodes emptied at once only adds to them).

const (
	paceWindow = 3 * time.Second
	paceSlow   = time.Second
	// paceBaseline is how many times its best window's p90 a signal may read before the pace
	// calls it slow.
	paceBaseline = 4
	// paceProbe is how many healthy windows that held a move the pace stays just below its
	// knee before it tries one more move at once.
	paceProbe = 5
)

// paceSignal is something the pace follows.
type paceSignal int

const (
	paceCloud paceSignal = iota
	paceKube
	paceMoves
	paceBudgets
	paceSignalCount
)

// paceRow is how the pace judges one signal's window.
type paceRow struct {
	name, unit, failure string // "the cloud", its readings ("answers"), a failed one's word ("failed")
	// floor: a p90 at or below it is never slow (paceSlowFloor: the engine's PaceSlow).
	floor time.Duration
	// failing: more than this share of the window's readings failed halves the pace.
	failing float64
	// conflicting: more than this share of the window's answers a 409 halves the pace (0: a
	// 409 says nothing of the control plane's health).
	conflicting float64
	// least: a window with fewer readings is not judged (one guest that never converges is
	// not the link's fault).
	least int
	// knee: a halving by this signal marks how many moves the path carries (the moves' own
	// copy: past the knee a shared link stops them converging), and the climb after it stays
	// below. A control plane slow or failing says it struggles now, not how many moves it
	// carries once well: after it the pace climbs back to the cap.
	knee bool
}

// statusConflict is HTTP's 409 (the engine keeps HTTP behind its ports: its clients tell it
// the status alone).
const statusConflict = 409

// paceSlowFloor in a row's floor stands for the engine's PaceSlow (a second by default).
const paceSlowFloor = -1

// paceSignals are the rows, in the order a window judges them (the first struggling one says
// why the pace was halved).
var paceSignals = [paceSignalCount]paceRow{
	// Nova and Placement: every request of ops/nova; failed: 5xx, 429 or no answer. A 409 is
	// a server (or a provider) busy with another request: a few are other actors' doing, many
	// are a cloud behind on its work (tasks not yet ended, allocations written concurrently).
	paceCloud: {name: "the cloud", unit: "answers", failure: "failed", floor: paceSlowFloor, failing: 0.01, conflicting: 0.1, least: 1},
	// Kubernetes: every request but a watch and an informer's list (ops/kube). Its 409s are
	// optimistic concurrency's: a write retried on a newer read, no sign of load.
	paceKube: {name: "the API server", unit: "answers", failure: "failed", floor: paceSlowFloor, failing: 0.01, least: 1},
	// Each poll of a live move copying: the time a GiB takes at its copy rate (against its own
	// best: a link's speed is the cloud's); failed: its remaining not falling. A lone move that
	// does not converge is its guest's doing, most moves not converging is the link's.
	paceMoves: {name: "the moves", unit: "polls", failure: "did not converge", floor: 0, failing: 0.5, least: 3, knee: true},
	// Each pod a budget held: how long, once evicted; failed: given up waiting.
	paceBudgets: {name: "the budgets", unit: "pods", failure: "were given up on", floor: time.Minute, failing: 0.01, least: 1},
}

// signalWindow is what one signal read in the window, and its quickest window.
type signalWindow struct {
	best   time.Duration // the quickest window's p90 (0: none yet)
	took   []time.Duration
	failed int
	// conflicted: the answers that were 409s (observer)
	conflicted int
}

// pace is the engine's pace; its zero value (no cap) never holds a move.
type pace struct {
	mu      sync.Mutex
	deaf    bool // [concurrency] static_caps: it hears nothing, and stays at the cap
	max     int  // migrations_per_cluster
	limit   int
	window  time.Duration // paceWindow
	slow    time.Duration // paceSlow
	signals [paceSignalCount]signalWindow
	began   time.Time // this window's
	held    bool      // the pace held a move back in this window
	calm    bool      // the last window judged was healthy (a halving after it begins a streak)
	knee    int       // the moves under way the last streak of halvings began at (0: never halved)
	back    int       // how far below the knee the pace climbs back to (broke)
	level   int       // the most moves under way told in this window (room)
	probing int       // healthy windows that held a move spent just below the knee
	why     string
	changed time.Time
	clock   func() time.Time
}

func newPace(max int, window, slow time.Duration, clock func() time.Time) *pace {
	return &pace{max: max, limit: max, window: window, slow: slow, began: clock(), clock: clock, calm: true}
}

// observe counts one reading of a signal: how long it took, and whether it failed.
func (p *pace) observe(sig paceSignal, took time.Duration, failed bool) {
	p.read(sig, took, failed, false)
}

// read counts one reading; conflicted: an answer that was a 409.
func (p *pace) read(sig paceSignal, took time.Duration, failed, conflicted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deaf {
		return
	}
	p.roll()
	w := &p.signals[sig]
	w.took = append(w.took, took)
	if failed {
		w.failed++
	}
	if conflicted {
		w.conflicted++
	}
}

// observer is observe for one control plane, as its client tells answers: its status 0 (none
// came), 429 or 5xx failed; a 409 conflicted (its row says whether that counts).
func (p *pace) observer(sig paceSignal) func(time.Duration, int) {
	return func(took time.Duration, status int) {
		p.read(sig, took, status == 0 || status == 429 || status >= 500, status == statusConflict)
	}
}

// room says whether one more move fits under the pace, with inFlight under way; a move held
// back counts for raising it.
func (p *pace) room(inFlight int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roll()
	p.level = max(p.level, min(inFlight, p.limit))
	if inFlight < p.limit {
		p.level = max(p.level, inFlight+1)
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
	// The moves under way at most in the window (the last count told, when none was): a
	// halving halves them, not a cap they never reached.
	level := p.limit
	if p.level > 0 {
		level = min(level, p.level)
	}
	p.level = 0
	limit, why, healthy, knee := p.limit, "", true, false
	said := "" // the first signal read, for a raise's why
	for sig := range p.signals {
		w, row := &p.signals[sig], paceSignals[sig]
		took, failed, conflicted, n := w.took, w.failed, w.conflicted, len(w.took)
		w.took, w.failed, w.conflicted = w.took[:0], 0, 0
		if n == 0 || n < row.least {
			continue
		}
		slices.Sort(took)
		p90 := took[(n*9)/10]
		if w.best == 0 || p90 < w.best {
			w.best = p90
		}
		floor := row.floor
		if floor == paceSlowFloor {
			floor = p.slow
		}
		failing := float64(failed) > row.failing*float64(n)
		conflicting := row.conflicting > 0 && float64(conflicted) > row.conflicting*float64(n)
		slow := p90 > max(floor, paceBaseline*w.best)
		knee = knee || (row.knee && (failing || conflicting || slow))
		switch {
		case !healthy: // halved by a signal before: said once
		case failing:
			healthy, limit = false, max(1, level/2)
			why = fmt.Sprintf("%d of %d %s of %s %s: halved", failed, n, row.unit, row.name, row.failure)
		case conflicting:
			healthy, limit = false, max(1, level/2)
			why = fmt.Sprintf("%d of %d %s of %s were conflicts (409): halved", conflicted, n, row.unit, row.name)
		case slow:
			healthy, limit = false, max(1, level/2)
			why = fmt.Sprintf("%s p90 %s over %d %s: halved", possessive(row.name), p90.Round(10*time.Millisecond), n, row.unit)
		case said == "":
			said = fmt.Sprintf("%s p90 %s over %d %s", possessive(row.name), p90.Round(10*time.Millisecond), n, row.unit)
		}
	}
	switch {
	case !healthy:
		if knee && (p.calm || p.knee == 0) { // a streak's first, by the moves: the path broke with level under way
			p.broke(level)
		}
		p.calm = false
	case said != "":
		p.calm = true
		if held && p.limit < p.max {
			if raised := p.raise(); raised != p.limit {
				limit, why = raised, said+": raised"
			}
		}
	}
	if limit != p.limit {
		p.limit, p.why, p.changed = limit, why, now
	}
}

// raise is the limit a healthy window that held a move raises the pace to: by a tenth of the
// cap up to below the moves under way it last broke at (the knee: moves that share a link
// stop converging past a number, all of them at once), then one more every paceProbe such
// windows, to find whether the knee has moved. Called with mu.
func (p *pace) raise() int {
	step := max(1, p.max/10)
	if p.knee == 0 || p.limit < p.knee-p.back {
		below := p.max
		if p.knee > 0 {
			below = p.knee - p.back
		}
		return min(below, p.limit+step)
	}
	if p.probing++; p.probing < paceProbe {
		return p.limit
	}
	p.probing = 0
	return min(p.max, p.limit+1)
}

// broke sets the knee where a streak of halvings began, level moves under way. Broken while
// probing above where it held, the knee is that level, and the pace holds one below it;
// broken at or below that (the knee moved down, or was never where it stopped), it steps back
// twice as far each time: a walk down one move at a time would stall every move under way
// at each step. Called with mu.
func (p *pace) broke(level int) {
	switch {
	case p.knee == 0 || level > p.knee-p.back:
		p.back = 1
	default:
		p.back *= 2
	}
	p.knee, p.probing = level, 0
}

// possessive is "the cloud's", "the moves'".
func possessive(name string) string {
	if strings.HasSuffix(name, "s") {
		return name + "'"
	}
	return name + "'s"
}
