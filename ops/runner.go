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

// The runner: one operation being run on its node, and what every step says through it (a
// step event, a change on the node, the journal). Below the steps and the run that orders
// them.

type runner struct {
	mu     sync.Mutex
	e      *Engine
	plan   model.Plan
	ro     RunOptions
	emit   func(Event)
	report Report
	phase  string
	lease  runLease
	// journaled is what this run did that its journal on the node keeps (under mu).
	journaled journaled
	recovery  recoveryRun
	canaryRun canaryRun
	said      saidOnce
	// beside: two steps run at once (together): the pods' step leaves the journal's phase to
	// the VMs' (under mu).
	beside bool
	// restarted: its restart-vms step ran: what drainctl stopped is started or said.
	restarted bool
	// recent is the cloud's recent moves as this poll round read them (nil: not yet): one
	// read for every move of the node the round polls, begun after the round began.
	recent []model.Migration
}

// runLease is the run's hold of its node's lease.
type runLease struct {
	// holding: this run took the node's lease (and releases it at the end unless it keeps
	// it). stop ends the run with a cause: a cancel request, a lost lease.
	holding bool
	stop    context.CancelCauseFunc
	stopped string         // the holder an abort or rollback stopped: its lease may be taken over
	keepers sync.WaitGroup // the lease's renewal and cancel watch
}

// journaled is what a run did that the node's journal keeps, so a rerun, an abort or the
// return knows it (under the runner's mu).
type journaled struct {
	cold     []ColdMove        // the cold moves this run asked for
	left     []model.VMLeft    // the VMs this run moved off the node
	restart  []string          // the VMs this run stops in place
	stopReqs map[string]string // each stop's request ID, by VM
	reserves []string          // the failover reserve's hosts a recovery took
}

// recoveryRun is what a recovery's run knows of its outage.
type recoveryRun struct {
	ledgerAt     string             // the moves the recovery's ledger was last written with
	settledTried map[string]bool    // an earlier run's moves asked of Nova (settled), once each
	proof        *model.FenceRecord // the fence this run proved or found for the outage
	outage       time.Time          // the outage it recovers, read once (runner.outageOf)
}

// canaryRun is what the canary proved of the host.
type canaryRun struct {
	passed bool            // this run's canary proved the host: its service may be enabled
	onHost map[string]bool // the servers on the host just before its service was enabled for it
}

// saidOnce is what the run said once, so it is not said again.
type saidOnce struct {
	groups      map[string]bool // what a VM group did to a VM (under mu)
	pace        time.Time       // when the pace last changed as this run said it (the pace holding its moves)
	lock        string          // the migrations lock's holder this run last said its moves wait on
	toldUnsaved bool            // the record of owners told could not be written
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
	if r.recovery.proof != nil { // a mirror for kubectl describe: the record in drainctl's namespace is the proof
		j.Fenced = r.recovery.proof.Text()
	}
	j.Phase, j.Updated, j.Error = phase, r.e.now(), errMsg
	r.mu.Lock()
	for _, c := range r.journaled.cold {
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
	for _, id := range r.journaled.restart {
		if !slices.Contains(j.Restart, id) {
			j.Restart = append(j.Restart, id)
		}
	}
	for _, h := range r.journaled.reserves {
		if !slices.Contains(j.Reserve, h) {
			j.Reserve = append(j.Reserve, h)
		}
	}
	for id, req := range r.journaled.stopReqs {
		if j.Stopped == nil {
			j.Stopped = map[string]string{}
		}
		j.Stopped[id] = req
	}
	for _, l := range r.journaled.left {
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

// nodeChanged says what changed on the node, as an event.
func (r *runner) nodeChanged(what string) {
	r.emit(NewNodeChanged(r.e.now(), r.plan.Node, what))
}
