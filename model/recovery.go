package model

import "time"

// Recovery is a dead node's recovery as its record keeps it: where it stands, and its ledger,
// one move per VM of the node (Masakari's VMoves, for both layers' tool).
type Recovery struct {
	Node      string    `json:"node"`
	Host      string    `json:"host,omitempty"`
	Automatic bool      `json:"automatic"`
	Started   time.Time `json:"started"`
	// Outage is when the node went NotReady: the outage this recovery is of (a rerun in
	// another outage starts a ledger of its own).
	Outage   time.Time `json:"outage,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// By is who recovers (the first run's holder) and Options the overrides it was given: the
	// controller resumes only its own recovery, never a person's with its own options.
	By      string  `json:"by,omitempty"`
	Options []Given `json:"options,omitempty"`
	// Outcome: running, done, failed, refused (nothing changed), interrupted (a rerun resumes).
	Outcome string   `json:"outcome"`
	Error   string   `json:"error,omitempty"`
	Moves   []VMMove `json:"moves"`
}

// VMMove is one VM of a recovery: where it went, how, and how it ended.
type VMMove struct {
	VM     string     `json:"vm"`
	VMID   string     `json:"vmID"`
	Source string     `json:"source"`
	Dest   string     `json:"dest,omitempty"`
	Method MoveMethod `json:"method"`
	// Status: pending, ongoing, succeeded, failed, left (Reason says why it stays).
	Status   string        `json:"status"`
	Reason   string        `json:"reason,omitempty"`
	Started  time.Time     `json:"started,omitzero"`  // its rebuild asked of Nova
	Finished time.Time     `json:"finished,omitzero"` // seen ended
	Duration time.Duration `json:"durationNs,omitempty"`
	// MigrationID is Nova's evacuation record of the move (os-migrations), when known.
	MigrationID int64 `json:"migrationID,omitempty"`
}

// The statuses of a recovery's move.
const (
	MovePending   = "pending"
	MoveOngoing   = "ongoing"
	MoveSucceeded = "succeeded"
	MoveFailed    = "failed"
	MoveLeft      = "left"
)

// A person's now: the outcomes of a recovery that automatic recovery does not try again in
// the same outage (a failed fence is not run again by itself; a refusal is not paged again).
func (r Recovery) APersons() bool { return r.Outcome == "failed" || r.Outcome == "refused" }

// Storm is the storm guard's state, kept on the cluster: a controller that restarts (a new
// leader after a partition, which is what a storm often is) keeps the cooldown after it.
type Storm struct {
	Began time.Time `json:"began"`
	Ended time.Time `json:"ended,omitzero"` // zero while it holds
	Nodes []string  `json:"nodes"`
}

// RecoveryPause holds every automatic recovery, cluster-wide, until it is lifted (NodeHealthCheck's
// pauseRequests): a person's word, kept where no node can write it.
type RecoveryPause struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// RecoveryHold is something that holds automatic recovery, as the records on the cluster
// show it: cluster-wide (Node "": a pause, a storm, its cooldown) or one node's (its recovery
// in this outage failed or was refused: a person's now).
type RecoveryHold struct {
	Kind  string    `json:"kind"` // pause, storm, cooldown, failed, refused
	Node  string    `json:"node,omitempty"`
	Why   string    `json:"why"`
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"` // a cooldown's end; zero: until a person acts
}
