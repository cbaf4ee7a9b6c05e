package nova

import (
	"testing"

	"github.com/drainctl/drainctl/model"
)

// Every status the engine acts on has a phase of its own, and every task it follows a task;
// a status or task it does not know is PhaseOther or TaskOther, which no step acts on. (The
// conformance tests read the same words off the real Nova and the simulator.)
func TestEveryStatusTheEngineActsOnHasAPhase(t *testing.T) {
	seen := map[model.VMPhase]string{}
	for st := range phaseOf {
		p := phaseOf[st]
		if p == model.PhaseOther {
			t.Errorf("%s has no phase", st)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share phase %v", st, other, p)
		}
		seen[p] = st
	}
	for _, st := range []string{"SUSPENDED", "SHELVED_OFFLOADED", "RESCUE", ""} {
		if p := phaseOf[st]; p != model.PhaseOther {
			t.Errorf("%q: phase %v, want another status", st, p)
		}
	}
	for word, want := range map[string]model.VMTask{
		"": model.TaskNone, "migrating": model.TaskMigrating, "resize_migrated": model.TaskColdMigrated,
		"rebuild_spawning": model.TaskRebuilding, "image_snapshot": model.TaskOther, "powering-off": model.TaskPoweringOff,
	} {
		if got := taskOf(word); got != want {
			t.Errorf("task %q: %d, want %d", word, got, want)
		}
	}
}
