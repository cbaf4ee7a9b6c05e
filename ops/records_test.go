package ops

import (
	"encoding/json"
	"testing"

	"github.com/drainctl/drainctl/model"
)

// A journal's cold move proves a migration by its UUID alone: not a VM's later move by
// someone else, not one whose UUID was never read; an old journal (bare VM IDs) still reads.
func TestColdMoveProvesItsMigrationOnly(t *testing.T) {
	mine := ColdMove{VM: "vm-1", Migration: "m-1"}
	for _, tc := range []struct {
		m    model.Migration
		want bool
	}{
		{model.Migration{InstanceID: "vm-1", UUID: "m-1"}, true},
		{model.Migration{InstanceID: "vm-1", UUID: "m-2"}, false}, // a colleague's move of the same VM, after ours
		{model.Migration{InstanceID: "vm-2", UUID: "m-1"}, false},
	} {
		if got := mine.Proves(tc.m); got != tc.want {
			t.Errorf("Proves(%+v) = %v", tc.m, got)
		}
	}
	if (ColdMove{VM: "vm-1"}).Proves(model.Migration{InstanceID: "vm-1", UUID: "m-1"}) {
		t.Error("a move whose migration was never read proves one")
	}
	var j Journal
	if err := json.Unmarshal([]byte(`{"op":"evacuate","coldMoves":["vm-1",{"vm":"vm-2","migration":"m-9"}]}`), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.ColdMoves) != 2 || j.ColdMoves[0].VM != "vm-1" || j.ColdMoves[1].Migration != "m-9" {
		t.Errorf("journal: %+v", j.ColdMoves)
	}
}
