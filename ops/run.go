package ops

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
)

// Run carries out a plan, reporting through emit (which must not block for long: the TUI's
// adapter buffers and coalesces). It refuses a plan with blockers before changing anything,
// skips steps the cluster already shows done, and records where it stands on the node.
// Cancelling ctx stops at the next safe point: no new eviction or migration starts,
// migrations already running are left to finish in Nova, and the journal says "interrupted".
func (e *Engine) Run(ctx context.Context, plan model.Plan, ro RunOptions, emit func(Event)) (Report, error) {
	ro = e.asCredentials(ro)
	r := &runner{e: e, plan: plan, ro: ro, emit: emit,
		report: Report{Op: plan.Op, Node: plan.Node, Started: e.now(), Pods: []PodReport{}, VMs: []VMReport{}}}
	emit(NewPlanReady(e.now(), plan))
	err := r.run(ctx)
	r.report.Finished = e.now()
	for _, v := range r.report.VMs {
		r.report.BytesCopied += v.Bytes
	}
	switch {
	case err == nil:
		r.report.Result = ResultDone
	case errors.As(err, new(*RefusedError)), errors.As(err, new(*LeaseHeldError)):
		r.report.Result = ResultRefused
	case errors.As(err, new(*Interrupted)):
		r.report.Result = ResultInterrupted
	default:
		r.report.Result = ResultFailed
	}
	if err != nil {
		if still := r.stillStopped(ctx); still != "" {
			err = fmt.Errorf("%w; %s", err, still)
		}
		r.report.Error = err.Error()
	}
	if traitsOf(plan.Op).rebuilds && r.lease.holding {
		r.saveLedger(ctx, string(r.report.Result), nil)
	}
	emit(NewRunDone(e.now(), r.report))
	return r.report, err
}

func (r *runner) run(ctx context.Context) error {
	e, p := r.e, r.plan
	if b := p.Blockers(); len(b) > 0 {
		r.report.Reasons = b
		return &RefusedError{Reasons: b}
	}
	if !p.Pending() {
		for _, s := range p.Steps {
			r.step(s.Kind, StepSkipped, nothingToDo(s))
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeouts.Operation.D())
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r.lease.stop = stop
	t := traitsOf(p.Op)
	if t.leases { // the operations that abort and rollback stop
		defer e.track(p.Node, func() { stop(nil) })()
	}
	// Cordon and evacuate hold the lease for their whole run; rollback takes it once the
	// operation it stops has stopped (its abort step).
	defer func() {
		// The renewal stops before the release: a renewal after it would take the lease again.
		stop(nil)
		r.lease.keepers.Wait()
		if !r.lease.holding || t.keepsLease || r.ro.KeepLease {
			return // a cordoned (or recovered) node keeps its lease until uncordon
		}
		rctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		_ = e.kube.ReleaseLease(rctx, p.Node, e.o.Holder)
	}()
	if t.leases {
		if err := r.holdLease(ctx, stop); err != nil {
			return err
		}
		if t.rebuilds { // the node is this run's: its recovery's ledger is too
			r.saveLedger(ctx, "running", nil)
		}
	}
	slotted := !t.empties // only what empties the node takes a slot
	for i := 0; i < len(p.Steps); i++ {
		s := p.Steps[i]
		if s.Kind == model.StepLease {
			continue
		}
		if s.Done && s.Kind != model.StepVerify {
			r.step(s.Kind, StepSkipped, nothingToDo(s))
			continue
		}
		if ctx.Err() != nil {
			return r.interrupted(ctx)
		}
		if !slotted && emptying(s.Kind) {
			slotted = true
			release, waited, others, err := r.takeSlot(ctx, stop)
			if err != nil {
				return r.interrupted(ctx)
			}
			defer release()
			if waited {
				if err := r.judgeAgain(ctx, others); err != nil {
					return err
				}
			}
		}
		var err error
		if beside, ok := r.alongside(p.Steps, i); ok {
			i++
			err = r.together(ctx, s, beside)
		} else {
			err = r.oneStep(ctx, s)
		}
		if err != nil {
			return err
		}
	}
	if t.endPhase != "" {
		r.journal(t.endPhase, "")
	}
	return nil
}

// oneStep runs one step, says how it ended, and records a failure on the node.
func (r *runner) oneStep(ctx context.Context, s model.Step) error {
	r.step(s.Kind, StepStarted, s.Detail)
	detail, err := r.do(ctx, s.Kind)
	if err == nil {
		r.step(s.Kind, StepDone, detail)
		return nil
	}
	if ctx.Err() != nil {
		r.step(s.Kind, StepStopped, "interrupted")
		return r.interrupted(ctx)
	}
	r.step(s.Kind, StepFailed, err.Error())
	if errors.As(err, new(*RefusedError)) {
		r.report.Reasons = err.(*RefusedError).Reasons
		return err // refused before anything changed (a recovery's fence): nothing to record
	}
	r.journal(PhaseFailed, err.Error())
	return err
}

// alongside is the step the plan runs beside step i (its planner chose it: a campaign's
// pods evicted while its VMs move).
func (r *runner) alongside(steps []model.Step, i int) (model.Step, bool) {
	if i+1 >= len(steps) {
		return model.Step{}, false
	}
	next := steps[i+1]
	return next, next.Beside && !next.Done
}

// together runs two steps at once. Each runs to its end, as it would one after the other
// (a failed eviction does not leave VM moves unfollowed); the run fails with the first of
// them, in the plan's order, that failed; an interruption stops both.
func (r *runner) together(ctx context.Context, a, b model.Step) error {
	r.mu.Lock()
	r.beside = true
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.beside = false; r.mu.Unlock() }()
	steps := [2]model.Step{a, b}
	var errs [2]error
	var wg sync.WaitGroup
	for i, s := range steps {
		r.step(s.Kind, StepStarted, s.Detail)
		wg.Add(1)
		go func() {
			defer wg.Done()
			detail, err := r.do(ctx, s.Kind)
			switch {
			case err == nil:
				r.step(s.Kind, StepDone, detail)
			case ctx.Err() != nil:
				r.step(s.Kind, StepStopped, "interrupted")
			default:
				r.step(s.Kind, StepFailed, err.Error())
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return r.interrupted(ctx)
	}
	for _, err := range errs {
		if err != nil {
			r.journal(PhaseFailed, err.Error())
			return err
		}
	}
	return nil
}

// nothingToDo says why a step the plan marked done is not run: done by an earlier run, or
// never needed (no pod to evict); its detail says which, as the plan's [-] line does. "already
// done" was said of steps that never ran.
func nothingToDo(s model.Step) string { return "nothing to do (" + s.Detail + ")" }

// do runs one step.
func (r *runner) do(ctx context.Context, kind model.StepKind) (string, error) {
	f, ok := r.e.steps[kind]
	if !ok {
		return "", fmt.Errorf("step %s is not implemented", kind)
	}
	return f(r, ctx)
}
