package model

import "time"

// After a maintenance the cloud is skewed: the nodes done first carry the others' VMs. A
// node's evacuation records each VM it moved away (VMLeft, in the node's journal); once the
// node is back and proven, those VMs may be brought home (VMReturn says what became of each).

// VMLeft is a VM an operation moved off its node: where to, how, and as what flavor, so a
// return can tell a VM moved, resized or deleted since from one still where it was sent.
type VMLeft struct {
	ID     string     `json:"id"`
	Name   string     `json:"name"`
	To     string     `json:"to"` // the host it was sent to
	Method MoveMethod `json:"method"`
	Flavor string     `json:"flavor,omitempty"`
	At     time.Time  `json:"at"` // when its move ended
	// MigrationID and MigrationUUID name Nova's record of the move (a live move and a
	// rebuild by ID, a cold move by UUID): a return needs the VM's newest completed move to
	// be this one, not merely some move from home (the record is a claim anyone who may patch
	// the Node could write).
	MigrationID   int64  `json:"migrationID,omitempty"`
	MigrationUUID string `json:"migrationUUID,omitempty"`
}

// VMReturn is what became of bringing one VM home: Home, or Why not; Pending while it is
// yet to be tried (a campaign's record keeps it across a restart).
type VMReturn struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Home    bool   `json:"home,omitempty"`
	Pending bool   `json:"pending,omitempty"`
	Why     string `json:"why,omitempty"`
}

// ReturnsDone counts the returns home and those that ended otherwise.
func ReturnsDone(rs []VMReturn) (home, not, pending int) {
	for _, r := range rs {
		switch {
		case r.Pending:
			pending++
		case r.Home:
			home++
		default:
			not++
		}
	}
	return home, not, pending
}
