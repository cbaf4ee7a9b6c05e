package model

import "testing"

// A cold move's tasks are its steps in order, and only those; a VM is busy while any task is
// under way; every phase has a name of its own.
func TestAColdMovesTasksAreItsStepsInOrder(t *testing.T) {
	steps := []VMTask{TaskColdPrep, TaskColdMigrating, TaskColdMigrated, TaskColdFinish}
	if len(steps) != ColdSteps {
		t.Fatalf("ColdSteps %d, want %d", ColdSteps, len(steps))
	}
	for i, task := range steps {
		if task.ColdStep() != i+1 || !task.InColdMove() {
			t.Errorf("task %d: step %d, in a cold move %v; want step %d", task, task.ColdStep(), task.InColdMove(), i+1)
		}
	}
	for _, task := range []VMTask{TaskNone, TaskOther, TaskMigrating, TaskColdReverting, TaskColdConfirming, TaskRebuilding, TaskPoweringOff} {
		if task.ColdStep() != 0 {
			t.Errorf("task %d is step %d of a cold move", task, task.ColdStep())
		}
	}
	if !TaskColdReverting.InColdMove() || TaskMigrating.InColdMove() || TaskRebuilding.InColdMove() {
		t.Error("InColdMove: the cold move's tasks only")
	}
	if (VM{Phase: PhaseRunning}).Busy() || !(VM{Phase: PhaseRunning, Task: TaskOther}).Busy() {
		t.Error("Busy is a task under way")
	}
	if !PhaseReverting.InColdMove() || PhaseMovingLive.InColdMove() {
		t.Error("VMPhase.InColdMove: moving cold, awaiting its confirm, reverting")
	}
	names := map[string]VMPhase{}
	for p := PhaseOther; p <= PhaseRebuilding; p++ {
		if other, dup := names[p.String()]; dup {
			t.Errorf("phases %d and %d share the name %q", p, other, p.String())
		}
		names[p.String()] = p
	}
}
