package ops

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/drainctl/drainctl/model"
)

// Batch is one operation planned on several targets together: the TUI's selection, the
// nodes of one --auto command, the daemon's and the proxy's work. Its rules live here and
// nowhere else: an evacuation counts the batch's other nodes as leaving, a batch with any
// blocker is refused whole before anything changes, and its plans start in order, at most
// concurrency.nodes at once (the node slots in slots.go bound every evacuation of the engine,
// batch or not, across processes).
type Batch struct {
	Op    model.OpKind
	Run   RunOptions // as the plans were made (Leaving set for an evacuation)
	Plans []model.Plan
}

// Blockers are every plan's blockers.
func (b Batch) Blockers() []model.Reason {
	var out []model.Reason
	for _, p := range b.Plans {
		out = append(out, p.Blockers()...)
	}
	return out
}

// PlanBatch plans op on every target from one read of the cluster (as Plan reads for one);
// it changes nothing.
func (e *Engine) PlanBatch(ctx context.Context, op model.OpKind, targets []string, ro RunOptions) (Batch, error) {
	if traitsOf(op).empties { // they leave the fleet together
		ro.Leaving = targets
	}
	b := Batch{Op: op, Run: ro, Plans: make([]model.Plan, 0, len(targets))}
	inv, err := e.readFor(ctx, op, targets, ro) // one read for the batch: its plans are judged together
	if err != nil {
		return b, err
	}
	for _, t := range targets {
		p, err := e.planRead(ctx, inv, op, t, ro)
		if err != nil {
			return b, err
		}
		b.Plans = append(b.Plans, p)
	}
	return b, nil
}

// RunBatch runs the batch's plans, at most concurrency.nodes at once, in the order given
// (a plan waits for a slot before it starts). A batch with blockers is refused whole, with
// nothing changed. emitFor gives each plan its emit (a view routes events by plan). The
// error is the one that tells a script the most (see Worst); each plan's report is in
// reports, in the batch's order.
func (e *Engine) RunBatch(ctx context.Context, b Batch, emitFor func(model.Plan) func(Event)) (reports []Report, err error) {
	if r := b.Blockers(); len(r) > 0 {
		return nil, &RefusedError{Reasons: r}
	}
	reports = make([]Report, len(b.Plans))
	errs := make([]error, len(b.Plans))
	sem := make(chan struct{}, max(1, e.cfg.Concurrency.Nodes))
	var wg sync.WaitGroup
	for i, p := range b.Plans {
		select { // take the slots in order, so the first plans run first
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = &Interrupted{Node: p.Node, Phase: "queue", Cause: ctx.Err()}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			reports[i], errs[i] = e.Run(ctx, p, b.Run, emitFor(p))
		}()
	}
	wg.Wait()
	return reports, Worst(errs)
}

// Worst picks the error that tells a script the most: usage, then interrupted (work left to
// resume), then failed, then refused. Several errors become one BatchError around it.
func Worst(errs []error) error {
	rank := func(err error) int {
		switch {
		case errors.As(err, new(*UsageError)):
			return 4
		case errors.As(err, new(*Interrupted)), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return 3
		case errors.As(err, new(*RefusedError)), errors.As(err, new(*LeaseHeldError)):
			return 1
		}
		return 2
	}
	var out error
	n := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		n++
		if out == nil || rank(err) > rank(out) {
			out = err
		}
	}
	if n > 1 {
		return &BatchError{Worst: out, Failed: n}
	}
	return out
}

// BatchError is a batch in which several plans did not finish; it unwraps to the worst.
type BatchError struct {
	Worst  error
	Failed int
}

func (b *BatchError) Error() string {
	return fmt.Sprintf("%d nodes did not finish; first: %v", b.Failed, b.Worst)
}
func (b *BatchError) Unwrap() error { return b.Worst }
