package ops

import (
	"context"
	"fmt"

	"github.com/drainctl/drainctl/model"
)

// movers is the table of the ways a VM moves, one row per method, each in its own file
// (move_live.go, move_cold.go, move_rebuild.go): how its move is requested, how it is
// followed until it ends, and whether it copies bytes the view counts. A new method (a
// shelve-offload, say) is a file and a row.
var movers = map[model.MoveMethod]mover{
	model.MoveLive:    {request: requestLive, poll: (*runner).pollLive, copies: true},
	model.MoveCold:    {request: requestCold, poll: (*runner).pollCold},
	model.MoveRebuild: {request: requestRebuild, poll: (*runner).pollRebuild},
}

type mover struct {
	request func(r *runner, ctx context.Context, run *vmRun, dest string) error
	// poll reads the move once: an outcome (completed, failed, aborted) once it has ended,
	// "" while it goes on.
	poll   func(r *runner, ctx context.Context, run *vmRun) (MigState, string, error)
	copies bool // its progress is bytes copied (a live migration's memory)
}

// request asks Nova to move the VM by its method.
func (r *runner) request(ctx context.Context, run *vmRun, dest string) error {
	return movers[run.method].request(r, ctx, run, dest)
}

// pollOne reads one move under way, by its method.
func (r *runner) pollOne(ctx context.Context, run *vmRun) (MigState, string, error) {
	return movers[run.method].poll(r, ctx, run)
}

// The poll tail every mover shares.

// moveState records the move's new state once, as an event.
func (r *runner) moveState(run *vmRun, st MigState, msg string) {
	if st != run.state {
		run.state = st
		r.emitVM(run, st, msg)
	}
}

// actionError is why Nova's move of the VM failed (its instance action's error), or
// fallback when Nova does not say; it notes on run whether Nova said it cannot move live.
func (r *runner) actionError(ctx context.Context, run *vmRun, fallback string) string {
	f, err := r.e.nova.LastActionError(ctx, run.vm.ID, run.method)
	if err != nil || f.Message == "" {
		return fallback
	}
	run.cannotLive = f.CannotLive
	return f.Message
}

// unstoppableOverdue fails a move Nova cannot stop (a cold move, a rebuild) once it has run
// past timeouts.migration; "" while it is within.
func (r *runner) unstoppableOverdue(run *vmRun, what string) (MigState, string, error) {
	if d := r.e.cfg.Timeouts.Migration.D(); r.e.now().Sub(run.started) > d {
		run.settled = true // still Nova's: asking again would race it
		return MigFailed, fmt.Sprintf("%s after %s (timeouts.migration); Nova cannot stop it: follow it with openstack server show", what, d), nil
	}
	return "", "", nil
}
