package model

import "testing"

// Every status the engine acts on has its own phase, named back as Nova names it; a status
// the engine does not know is PhaseOther, which no step acts on.
func TestEveryStatusTheEngineActsOnHasAPhase(t *testing.T) {
	seen := map[VMPhase]VMStatus{}
	for _, st := range []VMStatus{VMActive, VMShutoff, VMBroken, VMMigrating, VMResizing, VMVerifyResize, VMRevertResize, VMRebuilding} {
		p := VM{Status: st}.Phase()
		if p == PhaseOther {
			t.Errorf("%s has no phase", st)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share phase %d", st, other, p)
		}
		seen[p] = st
		if p.String() != string(st) {
			t.Errorf("phase of %s is named %q", st, p.String())
		}
	}
	for _, st := range []VMStatus{VMPaused, "SHELVED_OFFLOADED", ""} {
		if p := (VM{Status: st}).Phase(); p != PhaseOther {
			t.Errorf("%q: phase %v, want PhaseOther", st, p)
		}
	}
	if !(VM{Status: VMRevertResize}).Phase().InColdMove() || (VM{Status: VMMigrating}).Phase().InColdMove() {
		t.Error("InColdMove: RESIZE, VERIFY_RESIZE, REVERT_RESIZE only")
	}
	if (VM{Status: VMActive}).Busy() || !(VM{Status: VMActive, TaskState: "migrating"}).Busy() {
		t.Error("Busy is the task state")
	}
}
