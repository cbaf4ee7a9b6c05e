package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
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
	if traitsOf(plan.Op).rebuilds && r.holding {
		r.saveLedger(ctx, string(r.report.Result), nil)
	}
	emit(NewRunDone(e.now(), r.report))
	return r.report, err
}

type runner struct {
	ledgerAt     string          // the moves the recovery's ledger was last written with
	settledTried map[string]bool // an earlier run's moves asked of Nova (settled), once each
	mu           sync.Mutex
	e            *Engine
	plan         model.Plan
	ro           RunOptions
	emit         func(Event)
	report       Report
	phase        string
	// holding: this run took the node's lease (and releases it at the end unless it keeps
	// it). stop ends the run with a cause: a cancel request, a lost lease.
	holding bool
	stop    context.CancelCauseFunc
	stopped string             // the holder an abort or rollback stopped: its lease may be taken over
	keepers sync.WaitGroup     // the lease's renewal and cancel watch
	cold    []ColdMove         // the cold moves this run asked for (under mu), journaled
	proof   *model.FenceRecord // recover: the fence this run proved or found for the outage
	outage  time.Time          // recover: the outage it recovers, read once (runner.outageOf)
	// beside: two steps run at once (together): the pods' step leaves the journal's phase to
	// the VMs' (under mu).
	beside bool
	// canaryPassed: this run's canary proved the host; its service may be enabled.
	canaryPassed bool
	onHost       map[string]bool   // the servers on the host just before its service was enabled for the canary
	left         []model.VMLeft    // the VMs this run moved off the node (under mu), journaled
	restart      []string          // the VMs this run stops in place (under mu), journaled
	restarted    bool              // its restart-vms step ran: what drainctl stopped is started or said
	stopReqs     map[string]string // each stop's request ID, by VM (under mu), journaled
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
	r.stop = stop
	t := traitsOf(p.Op)
	if t.leases { // the operations that abort and rollback stop
		defer e.track(p.Node, func() { stop(nil) })()
	}
	// Cordon and evacuate hold the lease for their whole run; rollback takes it once the
	// operation it stops has stopped (its abort step).
	defer func() {
		// The renewal stops before the release: a renewal after it would take the lease again.
		stop(nil)
		r.keepers.Wait()
		if !r.holding || t.keepsLease || r.ro.KeepLease {
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

// currentPhase is the phase the journal was last written with.
func (r *runner) currentPhase() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phase
}

func (r *runner) step(kind model.StepKind, state StepState, detail string) {
	r.emit(NewStepEvent(r.e.now(), r.plan.Node, kind, state, detail))
}

// interrupted records on the node that the operation stopped at a safe point, and why when
// it was not the operator's own interruption (a cancel request, a lost lease).
func (r *runner) interrupted(ctx context.Context) error {
	during := r.currentPhase()
	if during == "" {
		during = "start"
	}
	cause := context.Cause(ctx)
	why := ""
	var req *CancelRequest
	switch {
	case errors.Is(cause, ErrLeaseLost):
		why = "lease lost"
		// Someone else may hold the node now: their journal is theirs to write.
		if k, ok := r.e.kube.Node(r.plan.Node); ok {
			if j, ok := ReadJournal(k); ok && j.Holder != r.e.o.Holder {
				return &Interrupted{Node: r.plan.Node, Phase: during, Cause: cause}
			}
		}
	case errors.As(cause, &req):
		why = req.Error()
	case cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded):
		// A stop with a cause of its own (the host alive, a stale fence, a refusal, a
		// deadline a caller set): the journal says it. The operator's own stop says nothing.
		why = cause.Error()
	}
	r.journal(PhaseInterrupted, why)
	return &Interrupted{Node: r.plan.Node, Phase: during, Cause: cause}
}

// journal records the phase on the node. It is written with a background context so that
// an interruption is recorded even after ctx is cancelled.
func (r *runner) journal(phase, errMsg string) {
	t := traitsOf(r.plan.Op)
	if r.plan.Node == "" || !t.journals {
		return
	}
	r.mu.Lock()
	r.phase = phase
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, ok := r.e.kube.Node(r.plan.Node)
	if !ok {
		return
	}
	j, had := ReadJournal(k)
	if !had {
		j = Journal{Op: r.plan.Op, Started: r.e.now(), WasSchedulable: k.Schedulable}
	}
	j.Holder = r.e.o.Holder // who wrote it last: the holder working the node
	if t.ownsJournal {
		j.Op = r.plan.Op
	}
	if r.proof != nil { // a mirror for kubectl describe: the record in drainctl's namespace is the proof
		j.Fenced = r.proof.Text()
	}
	j.Phase, j.Updated, j.Error = phase, r.e.now(), errMsg
	r.mu.Lock()
	for _, c := range r.cold {
		i := slices.IndexFunc(j.ColdMoves, func(o ColdMove) bool { return o.VM == c.VM && o.Requested.Equal(c.Requested) })
		if i < 0 {
			j.ColdMoves = append(j.ColdMoves, c)
		} else {
			j.ColdMoves[i] = c // its migration's UUID read since
		}
	}
	if r.ro.Campaign != "" {
		j.Campaign = r.ro.Campaign
	}
	for _, id := range r.restart {
		if !slices.Contains(j.Restart, id) {
			j.Restart = append(j.Restart, id)
		}
	}
	for id, req := range r.stopReqs {
		if j.Stopped == nil {
			j.Stopped = map[string]string{}
		}
		j.Stopped[id] = req
	}
	for _, l := range r.left {
		if i := slices.IndexFunc(j.Left, func(o model.VMLeft) bool { return o.ID == l.ID }); i >= 0 {
			j.Left[i] = l // moved again: where it went last is where a return finds it
		} else {
			j.Left = append(j.Left, l)
		}
	}
	r.mu.Unlock()
	// Retried (an API server restarting): a node must not be left with a stale phase.
	var err error
	for wait := 100 * time.Millisecond; ; wait *= 2 {
		if err = r.e.kube.SetAnnotation(ctx, r.plan.Node, JournalAnnotation, j.encode()); err == nil {
			r.emit(NewNodeChanged(r.e.now(), r.plan.Node, "journal: "+phase))
			return
		}
		if !poll.Sleep(ctx, wait) {
			break
		}
	}
	r.emit(NewNodeChanged(r.e.now(), r.plan.Node, fmt.Sprintf("journal NOT written (%s): %v", phase, err)))
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

// nodeChanged says what changed on the node, as an event.
func (r *runner) nodeChanged(what string) {
	r.emit(NewNodeChanged(r.e.now(), r.plan.Node, what))
}
