package nova

import "github.com/drainctl/drainctl/model"

// The one place Nova's server statuses and task states are named: a server is read into a
// phase and a task here, and the engine decides by those. A status or task Nova adds is a
// row here; one not named is PhaseOther or TaskOther, which the engine leaves alone.

var phaseOf = map[string]model.VMPhase{
	"ACTIVE":        model.PhaseRunning,
	"SHUTOFF":       model.PhaseStopped,
	"PAUSED":        model.PhasePaused,
	"ERROR":         model.PhaseBroken,
	"MIGRATING":     model.PhaseMovingLive,
	"RESIZE":        model.PhaseMovingCold,
	"VERIFY_RESIZE": model.PhaseAwaitingConfirm,
	"REVERT_RESIZE": model.PhaseReverting,
	"REBUILD":       model.PhaseRebuilding,
}

var taskWords = map[string]model.VMTask{
	"":                             model.TaskNone,
	"migrating":                    model.TaskMigrating,
	"resize_prep":                  model.TaskColdPrep,
	"resize_migrating":             model.TaskColdMigrating,
	"resize_migrated":              model.TaskColdMigrated,
	"resize_finish":                model.TaskColdFinish,
	"resize_reverting":             model.TaskColdReverting,
	"resize_confirming":            model.TaskColdConfirming,
	"rebuilding":                   model.TaskRebuilding,
	"rebuild_block_device_mapping": model.TaskRebuilding,
	"rebuild_spawning":             model.TaskRebuilding,
	"powering-off":                 model.TaskPoweringOff,
}

// taskOf is what a server's task_state says Nova is doing to it (a status not in phaseOf is
// PhaseOther, the map's zero; a task not in taskWords is TaskOther, not TaskNone).
func taskOf(taskState string) model.VMTask {
	if t, ok := taskWords[taskState]; ok {
		return t
	}
	return model.TaskOther
}

// deletedStatus: the server is gone (what changes-since shows of a deleted one).
func deletedStatus(status string) bool { return status == "DELETED" || status == "SOFT_DELETED" }
