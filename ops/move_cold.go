package ops

import (
	"context"
	"fmt"

	"github.com/drainctl/drainctl/model"
)

// The cold mover: Nova's migrate action, journaled first as drainctl's (move_cold_records.go keeps those
// records), followed by the server (RESIZE, then VERIFY_RESIZE, confirmed when it is ours).
// Nova makes the migration's record after its 202 (the API casts to the conductor): the
// move is named by that record once it appears, read while the move goes on, and confirmed
// only once named.

func requestCold(r *runner, ctx context.Context, run *vmRun, dest string) error {
	if err := r.recordCold(run); err != nil {
		return err
	}
	run.ours, run.confirmed = true, false
	if err := r.e.nova.ColdMigrate(ctx, run.vm.ID, dest); err != nil {
		return err
	}
	r.journalColdRequest(run.vm.ID, r.e.nova.ActionRequest(run.vm.ID))
	return nil
}

// pollCold reads a cold move's server. It returns an outcome once the move has ended, ""
// while it goes on; it confirms drainctl's own move once the server waits in VERIFY_RESIZE
// (unless policy.confirm_cold = false).
func (r *runner) pollCold(ctx context.Context, run *vmRun) (MigState, string, error) {
	e := r.e
	vm, err := e.nova.Server(ctx, run.vm.ID)
	if err != nil {
		return "", "", err
	}
	if vm.Host != run.vm.Host && vm.Host != "" {
		run.dest = vm.Host
	}
	switch {
	case vm.Phase == model.PhaseAwaitingConfirm:
		switch {
		case !run.ours:
			return MigCompleted, "moved by someone else's cold migration, which waits for its confirm: left to them", nil
		case run.confirmed:
			return "", "", nil // the confirm is under way
		}
		// Named before it is confirmed or left: an abort reverts only a move its record proves
		// drainctl's (a poll that first saw VERIFY_RESIZE left the move unnamed, and unreverted).
		mine, named, why, err := r.ownCold(ctx, vm.ID, true)
		switch {
		case err != nil:
			return "", "", err
		case !named:
			// Nova has not shown the record of drainctl's request yet: no confirm before it.
			return r.unstoppableOverdue(run, "moved cold, but Nova never showed the migration record of drainctl's request, "+
				"so nothing proves the move waiting in VERIFY_RESIZE is drainctl's: left unconfirmed (openstack server "+
				"migration list --server "+vm.ID+")")
		case !mine:
			run.ours = false
			return MigCompleted, "moved by a cold migration nothing proves drainctl's (" + why + "), which waits for its " +
				"confirm: left unconfirmed for whoever asked (openstack server event list " + vm.ID + ")", nil
		case !e.cfg.Policy.ConfirmCold:
			return MigCompleted, "left in VERIFY_RESIZE (policy.confirm_cold = false): confirm it with openstack server migrate confirm",
				nil
		}
		r.moveState(run, MigVerifyResize, "")
		if err := e.nova.ConfirmResize(ctx, vm.ID); err != nil {
			return "", "", err
		}
		run.confirmed = true
		r.moveState(run, MigConfirming, "")
	case vm.Phase == model.PhaseMovingCold || vm.Busy():
		if vm.Busy() {
			r.moveTask(run, vm, "")
		}
		if run.ours && r.unnamed(vm.ID) { // named while it moves: a rerun after a kill can prove it
			if _, _, _, err := r.ownCold(ctx, vm.ID, false); err != nil {
				return "", "", err
			}
		}
	case vm.Phase == model.PhaseBroken:
		return MigFailed, "the server went to ERROR: " + vm.Fault, nil
	case vm.Host != run.vm.Host:
		msg := ""
		if vm.Phase != run.vm.Phase && run.vm.Status != "" {
			msg = fmt.Sprintf("now %s (was %s)", vm.Status, run.vm.Status)
		}
		return MigCompleted, msg, nil
	default: // back on its source, no task: failed or reverted; the record says which
		recs, err := e.nova.MigrationsOf(ctx, vm.ID)
		if err != nil {
			return "", "", err
		}
		if len(recs) > 0 && recs[0].Status == model.MigrationReverted {
			return MigAborted, "reverted", nil
		}
		return MigFailed, r.actionError(ctx, run, "cold migration failed"), nil
	}
	return r.unstoppableOverdue(run, "cold migration not done")
}
