package campaign

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/opcmd"
	"github.com/drainctl/drainctl/ops/poll"
)

// Health gates (kured's shape): before each node of a campaign starts, the campaign's window
// must be open, the fleet must not be hurting already (a node outside the campaign down, a
// budget stuck at zero), the operator's gate command must exit 0 and no alert matching
// --gate-alerts may fire in Prometheus. While one does not hold, no new node starts (the
// nodes in flight go on), the campaign says why (and until when, for a window), and it checks
// again until it holds.

// AlertSource says which alerts fire now (ops/prom reads Prometheus); String names it as it
// may be printed.
type AlertSource interface {
	Firing(ctx context.Context) ([]string, error)
	String() string
}

// GateOptions are a campaign's health gates.
type GateOptions struct {
	Cmd string // a shell command, {node} replaced; must exit 0
	// Alerts: while one of its alerts fires, no node starts (nil: no alert gate).
	Alerts AlertSource
	// Window: no node starts outside it (nil: any time).
	Window *Window
	// Budgets: no node starts while one of them holds it ([roll] budget: so many nodes
	// started within a window of time, of the campaign or of each value of a label).
	Budgets []model.RateBudget
	// PDBBlockedFor: a PodDisruptionBudget of the cluster that has allowed no disruption for
	// this long holds the campaign (0: never). A node outside the campaign that is NotReady
	// always does: a fleet already hurting does not get another node taken out.
	PDBBlockedFor time.Duration
}

// gateOpen waits until every gate holds for node; false when ctx ended or the campaign stops.
// It looks again every few polls, and when a rate budget holds the node, at the moment the
// budget frees: a campaign under a budget starts its nodes at the budget's pace, not a poll
// after it.
func (r *Campaign) gateOpen(ctx context.Context, node string) bool {
	every := max(r.e.PollInterval()*5, 250*time.Millisecond)
	waited, said := false, ""
	for {
		why, frees := r.gateClosed(ctx, node)
		if why == "" {
			if waited {
				r.note(node, model.PhasePending, "gates open: starting")
			}
			return true
		}
		waited = true
		if why = "waiting: " + why; why != said {
			r.note(node, model.PhasePending, why)
			said = why
		}
		r.mu.Lock()
		stopping := r.stopping != nil // said as a wait says it, then no wait
		r.mu.Unlock()
		if stopping {
			return false
		}
		wait := every
		if !frees.IsZero() {
			wait = min(every, max(0, frees.Sub(r.e.Now())))
		}
		if !poll.Sleep(ctx, wait) {
			return false
		}
	}
}

// gateClosed says why a gate does not hold now ("" when every one does), and when a rate
// budget that holds it frees (zero: no budget holds it).
func (r *Campaign) gateClosed(ctx context.Context, node string) (string, time.Time) {
	g := r.o.Gates
	if w := g.Window; w != nil && !w.Open(r.e.Now()) {
		next := w.NextOpen(r.e.Now()).In(w.loc)
		return fmt.Sprintf("outside the window %s: it opens %s", w, next.Format("Mon 2006-01-02 15:04 MST")), time.Time{}
	}
	if why := r.ownersWindow(ctx, node); why != "" { // owners_ahead.go
		return why, time.Time{}
	}
	if why, frees := r.rateHeld(node); why != "" {
		return why, frees
	}
	if why := r.fleetHurting(); why != "" {
		return why, time.Time{}
	}
	if g.Cmd != "" {
		// The first run for a node says that it started; later runs (every few seconds while
		// the gate is closed) speak only through the reason they give.
		r.saidMu.Lock() // the herald asks too (an owner's move-now)
		first := !r.gateSaid[node]
		r.gateSaid[node] = true
		r.saidMu.Unlock()
		err := r.e.RunOperator(ctx, opcmd.Gate, g.Cmd, node, "", func(line string) {
			if first && strings.HasPrefix(line, string(opcmd.Gate)+" started") {
				r.note(node, model.PhasePending, line)
			}
		})
		if err != nil {
			return err.Error(), time.Time{}
		}
	}
	if g.Alerts != nil {
		firing, err := g.Alerts.Firing(ctx)
		switch {
		case err != nil: // a gate that cannot be read is closed: the fleet's health is unknown
			return "Prometheus gate: " + err.Error(), time.Time{}
		case len(firing) > 0:
			return "alert firing: " + strings.Join(firing, ", "), time.Time{}
		}
	}
	return "", time.Time{}
}

// fleetHurting says why the cluster is already hurting ("" when it is not): a node outside
// the campaign NotReady and not cordoned (a failure nobody has taken in hand: a cordoned one
// is someone's maintenance or recovery), or a PodDisruptionBudget that has allowed no disruption for longer
// than PDBBlockedFor (the campaign's own nodes' budgets go to 0 for a while as they drain:
// the bound lets that pass).
func (r *Campaign) fleetHurting() string {
	ours := map[string]bool{}
	for _, n := range r.Record().Nodes {
		ours[n.Name] = true
	}
	var down []string
	for _, n := range r.e.KubeNodes() {
		if !ours[n.Name] && !n.Ready && n.Schedulable {
			down = append(down, n.Name)
		}
	}
	if len(down) > 0 {
		return fmt.Sprintf("%d node(s) outside the campaign NotReady: %s", len(down), strings.Join(down, ", "))
	}
	bound := r.o.Gates.PDBBlockedFor
	if bound <= 0 {
		return ""
	}
	now := r.e.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pdbZero == nil {
		r.pdbZero = map[string]time.Time{}
	}
	seen := map[string]bool{}
	var stuck []string
	for _, p := range r.e.PDBs() {
		key := p.Namespace + "/" + p.Name
		if p.DisruptionsAllowed > 0 || p.ExpectedPods == 0 {
			continue
		}
		seen[key] = true
		since, ok := r.pdbZero[key]
		if !ok {
			r.pdbZero[key] = now
			continue
		}
		if now.Sub(since) >= bound {
			stuck = append(stuck, fmt.Sprintf("%s (since %s)", key, since.Format("15:04:05")))
		}
	}
	for key := range r.pdbZero {
		if !seen[key] {
			delete(r.pdbZero, key)
		}
	}
	if len(stuck) > 0 {
		return fmt.Sprintf("PodDisruptionBudget(s) allowing no disruption for over %s: %s", bound, strings.Join(stuck, ", "))
	}
	return ""
}

// rateHeld says which rate budget holds node back now, and when it frees ("" when none
// does), from the campaign's record: its nodes' starts, this run's and the runs' before it.
func (r *Campaign) rateHeld(node string) (string, time.Time) {
	rec, now := r.Record(), r.e.Now()
	for _, b := range r.o.Gates.Budgets {
		domain := domainOf(r.e, node, b.Per)
		var started []time.Time
		for _, n := range rec.Nodes {
			if b.Per == "" || domainOf(r.e, n.Name, b.Per) == domain {
				started = append(started, n.Started)
			}
		}
		if held, frees := b.Holds(now, started, len(started)); held {
			scope := "of the campaign's nodes"
			if b.Per != "" {
				scope = fmt.Sprintf("of the nodes with %s=%s", b.Per, domain)
			}
			return fmt.Sprintf("rate budget %q holds it: %d %s started within %s; it frees at %s", b.Raw, b.Limit(len(started)), scope,
				b.Window, frees.Format("15:04:05")), frees
		}
	}
	return "", time.Time{}
}

// budgetsOf are the rate budgets as written, for the campaign's record (its ETA keeps them).
func budgetsOf(bs []model.RateBudget) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Raw)
	}
	return out
}
