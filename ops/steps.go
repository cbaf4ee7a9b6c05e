package ops

import (
	"context"

	"github.com/drainctl/drainctl/model"
)

// stepFunc carries out one kind of plan step. Each re-reads the cluster first, so a step
// another actor already did is a no-op, and returns a line for the report.
type stepFunc func(r *runner, ctx context.Context) (string, error)

// stepTable is every step kind the engine knows; a plan step without an entry is a bug that
// TestEveryStepKindHasAFunction catches.
func stepTable() map[model.StepKind]stepFunc {
	return map[model.StepKind]stepFunc{
		model.StepCordon:         (*runner).cordon,
		model.StepDisableCompute: (*runner).disableCompute,
		model.StepMigrateVMs:     (*runner).migrateVMs,
		model.StepEvictPods:      func(r *runner, ctx context.Context) (string, error) { return r.evictStep(ctx, false) },
		model.StepEvictCarriers:  func(r *runner, ctx context.Context) (string, error) { return r.evictStep(ctx, true) },
		model.StepVerify:         (*runner).verify,
		model.StepAbort:          (*runner).abort,
		model.StepCanary:         (*runner).canary,
		model.StepEnableCompute:  (*runner).enableCompute,
		model.StepRestartVMs:     (*runner).restartVMs,
		model.StepUncordon:       (*runner).uncordon,
		model.StepRelease:        (*runner).release,
		model.StepFence:          (*runner).fence,
		model.StepForceDown:      (*runner).forceDown,
		model.StepOutOfService:   (*runner).outOfService,
		model.StepTakeReserve:    (*runner).takeReserve,
		model.StepRebuildVMs:     (*runner).rebuildVMs,
		model.StepBeReserve:      (*runner).beReserve,
		model.StepPodsGone:       (*runner).podsGone,
		model.StepForceUp:        (*runner).forceUp,
		model.StepInService:      (*runner).inService,
		model.StepReturnVMs:      (*runner).returnVMs,
	}
}
