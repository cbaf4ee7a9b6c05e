package ops

import (
	"context"

	"github.com/drainctl/drainctl/model"
)

// stays accounts for a VM that does not move. Left on purpose (an override the plan
// showed), it is reported and the node is "not empty"; one that became unmovable during the
// run (broken, locked meanwhile) is a failure, returned with its override.
func (r *runner) stays(_ context.Context, run *vmRun, reason *model.Reason, _ *moveQueue) (failure *model.Reason) {
	run.method = model.MoveStays
	if reason.Severity == model.Blocks {
		r.emitVM(run, MigFailed, reason.Message)
		bad := notMoved(run.vm, reason.Message, reason.Override)
		return &bad
	}
	r.report.VMs = append(
		r.report.VMs,
		VMReport{
			VM:      run.vm.Name,
			VMID:    run.vm.ID,
			Method:  model.MoveStays,
			Result:  MigSkipped,
			Source:  run.vm.Host,
			Message: reason.Message,
		},
	)
	r.report.Left = append(r.report.Left, run.vm.Name+": "+reason.Message)
	r.emitVM(run, MigSkipped, reason.Message)
	return nil
}
