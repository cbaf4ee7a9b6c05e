package ops

import (
	"context"
	"sync"

	"github.com/drainctl/drainctl/model"
)

// movers is the table of the ways a VM is handled, one row per method, each in its own file
// (move_live.go, move_cold.go, move_rebuild.go; restart.go for a restart in place): how the
// run takes it in, how its move is requested and followed until it ends, what a kill leaves
// to adopt, what it falls back to when Nova refuses the method, how an abort undoes it, and
// what the rest of the house reads of it (model.MoveFacts: the plan's words, the views' rows,
// the metrics). A new method (a shelve-offload, say) is a file and a row; the engine and the
// views read the rows and name no method.
func moverTable() map[model.MoveMethod]mover {
	return map[model.MoveMethod]mover{
		model.MoveLive: {begin: queued, request: requestLive, poll: (*runner).pollLive, refused: refusedLive,
			fallback: (*runner).coldInstead, undo: (*runner).abortLive, destChecked: true, requestID: true, verb: "live-migrate",
			MoveFacts: model.MoveFacts{Leaves: true, Copies: true, Default: true, Notice: "live-migration"}},
		model.MoveCold: {begin: queued, request: requestCold, poll: (*runner).pollCold, adopt: (*runner).adoptCold,
			undo: (*runner).revertColdSaid, requestID: true, verb: "cold-migrate (then confirm)",
			MoveFacts: model.MoveFacts{Leaves: true, Named: true, Notice: "cold-migration", Pane: model.PaneColdSteps}},
		model.MoveRebuild: {begin: queued, request: requestRebuild, poll: (*runner).pollRebuild, deadHost: true,
			MoveFacts: model.MoveFacts{Leaves: true, Pane: model.PaneRebuild}},
		model.MoveFollow: {begin: (*runner).follow, theirs: true, MoveFacts: model.MoveFacts{Leaves: true}},
		model.MoveStays: {begin: (*runner).stays,
			MoveFacts: model.MoveFacts{Stays: true, Named: true, Pane: model.PaneWord, Word: "stays on the node"}},
		model.MoveRestart: {begin: (*runner).queueStop, request: requestStop, poll: (*runner).pollStop,
			runningOnly: true, notListed: true, asks: "stopping it for restart-in-place",
			MoveFacts: model.MoveFacts{InPlace: true, Named: true, Notice: "restart-in-place", Pane: model.PaneWord,
				Word: "restarted in place"}},
	}
}

var (
	moversOnce sync.Once
	movers     map[model.MoveMethod]mover
)

// moverOf is the method's row; made where first read (its rows reach back to it through
// the runner), as the operations' table is.
func moverOf(m model.MoveMethod) mover {
	moversOnce.Do(func() { movers = moverTable() })
	return movers[m]
}

// MoveFactsOf is what the house reads of a method's row (none for "", a VM on no host).
func MoveFactsOf(m model.MoveMethod) model.MoveFacts { return moverOf(m).MoveFacts }

// moverOrder is the order an abort undoes the methods in (and the adopters run in).
// A plan counts them in this order too ("3 live, 1 cold, 1 restart, 1 stays").
var moverOrder = []model.MoveMethod{model.MoveLive, model.MoveCold, model.MoveRebuild, model.MoveFollow, model.MoveRestart, model.MoveStays}

type mover struct {
	// begin takes the VM into the run: queued for its request, followed as the move under
	// way it is, accounted for as staying, stopped in place. A failure it returns is the VM's.
	begin func(r *runner, ctx context.Context, run *vmRun, reason *model.Reason, q *moveQueue) *model.Reason
	// request asks Nova for the move, to dest ("": Nova's scheduler chooses).
	request func(r *runner, ctx context.Context, run *vmRun, dest string) error
	// poll reads the move once: an outcome (completed, failed, aborted) once it has ended,
	// "" while it goes on.
	poll func(r *runner, ctx context.Context, run *vmRun) (MigState, string, error)
	// adopt finds the moves of this method a killed run left under way that the host's
	// server list no longer shows, and follows them.
	adopt func(r *runner, ctx context.Context, listed []model.VM, q *moveQueue) error
	// refused says whether Nova's answer to the request says the VM cannot move this way at
	// all (retrying it does not help).
	refused func(err error) bool
	// fallback, once Nova said the VM cannot move this way, queues it by another method
	// (true) or says the override that would (false, "": none).
	fallback func(r *runner, run *vmRun, msg string, pending *[]*vmRun) (bool, model.Override)
	// undo stops or reverts the node's moves of this method (abort, rollback), and says
	// what it did ("": nothing to say).
	undo func(r *runner, ctx context.Context) (string, error)
	// MoveFacts: what the plan, the views, the controllers and the metrics read of it.
	model.MoveFacts
	// requestID: its request's ID is kept (Nova's x-openstack-request-id), the proof a later
	// step asks of Nova (a stop keeps its own with its journal).
	requestID bool
	// deadHost: it acts on a dead host's disks: the fence must still hold when it is asked,
	// the start lock is held longer, and a group's budget does not hold it (said over).
	deadHost bool
	// destChecked: Nova's scheduler checks a named destination when it acts (enabled, up,
	// room: a live move's since 2.30) and turns one down with NoValidHost, the VM left where
	// it was (TestConformanceARequestedHostDisabledIsTurnedDown); drainctl reads it no more
	// before the request.
	destChecked bool
	// runningOnly: it acts on a running VM only; one found not running when its request is
	// due is taken in by begin again (left as it is).
	runningOnly bool
	asks        string // what its request's event says it asks ("": the move its method names)
	verb        string // what a plan of one VM's move says it does ("live-migrate vm-a to …")
	// theirs: a move already under way, someone else's: followed to its end, never asked.
	theirs bool
	// notListed: Nova lists no migration of it, so the start lock is not held until one is
	// listed; the journal, written before the request, is what other processes count.
	notListed bool
}

// queued waits for its request, under the caps.
func queued(_ *runner, _ context.Context, run *vmRun, _ *model.Reason, q *moveQueue) *model.Reason {
	q.pending = append(q.pending, run)
	return nil
}

// The poll tail every mover shares.
