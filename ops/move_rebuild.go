package ops

import (
	"context"

	"github.com/drainctl/drainctl/model"
)

// The rebuild mover: Nova's evacuate action, rebuilding a dead host's VM elsewhere (from its
// image, or its shared disk), followed by the server.

func requestRebuild(r *runner, ctx context.Context, run *vmRun, dest string) error {
	return r.e.nova.Evacuate(ctx, run.vm.ID, dest)
}

// pollRebuild follows one evacuation by its server: REBUILD while it is rebuilt, then its
// host is another one. A server still on the dead host with no task has failed (or not
// started yet): its evacuation record says which.
func (r *runner) pollRebuild(ctx context.Context, run *vmRun) (MigState, string, error) {
	e := r.e
	vm, err := e.nova.Server(ctx, run.vm.ID)
	if err != nil {
		return "", "", err
	}
	switch {
	case vm.Phase == model.PhaseRebuilding || vm.Busy():
		r.moveTask(run, vm, MigRebuilding)
	case vm.Host != run.vm.Host && vm.Host != "":
		run.dest = vm.Host
		if run.mid == 0 {
			run.mid = r.e.evacuationID(ctx, run.vm.ID, run.vm.Host)
		}
		if vm.Phase == model.PhaseBroken {
			return MigFailed, "rebuilt on " + vm.Host + " but went to ERROR: " + vm.Fault, nil
		}
		return MigCompleted, "now " + string(vm.Status) + " on " + vm.Host, nil
	default:
		recs, err := e.nova.MigrationsOf(ctx, vm.ID)
		if err != nil {
			return "", "", err
		}
		if recs = run.recordsOf(recs); len(recs) > 0 && recs[0].Type == model.MigrationTypeEvacuation &&
			recs[0].Status == model.MigrationFailed {
			run.mid = recs[0].ID
			return MigFailed, r.actionError(ctx, run, "evacuation failed"), nil
		}
	}
	return r.unstoppableOverdue(run, "not rebuilt")
}

// evacuationID is the ID of Nova's evacuation record of the server from source, for the
// recovery's ledger (os-migrations' newest first); 0 when it cannot be read: the ledger goes
// without it, the VM is rebuilt either way.
func (e *Engine) evacuationID(ctx context.Context, server, source string) int64 {
	recs, err := e.nova.MigrationsOf(ctx, server)
	if err != nil {
		return 0
	}
	for _, m := range recs {
		if m.Type == model.MigrationTypeEvacuation && m.SourceCompute == source {
			return m.ID
		}
	}
	return 0
}
