package ops

import (
	"time"

	"github.com/drainctl/drainctl/model"
)

// Event is everything the engine reports. The set is sealed: the TUI and the plain printer
// each switch over it once. Events are values; none points into engine state.
type Event interface {
	event()
	Time() time.Time
	NodeName() string
}

// Base carries what every event has.
type Base struct {
	At   time.Time `json:"at"`
	Node string    `json:"node,omitempty"`
}

func (b Base) event()           {}
func (b Base) Time() time.Time  { return b.At }
func (b Base) NodeName() string { return b.Node }

// PlanReady: the plan the operation is about to run.
type PlanReady struct {
	Base
	Plan model.Plan `json:"plan"`
}

// Step states.
const (
	StepStarted = "started"
	StepDone    = "done"
	StepSkipped = "skipped" // already as it should be
	StepFailed  = "failed"
	StepStopped = "stopped" // interrupted at a safe point
)

// StepEvent: a plan step changed state.
type StepEvent struct {
	Base
	Step   model.StepKind `json:"step"`
	State  string         `json:"state"`
	Detail string         `json:"detail,omitempty"`
}

// Pod eviction states.
const (
	PodEvicting = "evicting" // eviction requested
	PodBlocked  = "blocked"  // refused by a PDB; will retry
	PodEvicted  = "evicted"  // accepted; terminating
	PodGone     = "gone"     // no longer on the node
	PodFailed   = "failed"
)

// PodEvent: one pod's eviction moved on.
type PodEvent struct {
	Base
	Pod     string `json:"pod"`
	State   string `json:"state"`
	PDB     string `json:"pdb,omitempty"`
	Attempt int    `json:"attempt"`
	Message string `json:"message,omitempty"`
}

// Migration states, beyond Nova's own (queued, preparing, running, post-migrating).
const (
	MigRequested = "requested"
	MigCompleted = "completed"
	MigFailed    = "failed"
	MigAborted   = "aborted"
	MigForced    = "force-complete"
	MigRetrying  = "retrying"
	MigSkipped   = "skipped"
)

// MigrationEvent: a VM's live migration moved on, or made progress. Progress events are
// coalesced per VM by consumers that fall behind; transitions never are.
type MigrationEvent struct {
	Base
	VM        string        `json:"vm"`
	VMID      string        `json:"vmID"`
	State     string        `json:"state"`
	Source    string        `json:"source"`
	Dest      string        `json:"dest,omitempty"`
	Attempt   int           `json:"attempt"`
	Total     int64         `json:"totalBytes,omitempty"`
	Processed int64         `json:"processedBytes,omitempty"`
	Remaining int64         `json:"remainingBytes,omitempty"`
	Rate      float64       `json:"rateBytesPerSec,omitempty"`
	ETA       time.Duration `json:"etaNs,omitempty"`
	Stalled   bool          `json:"stalled,omitempty"`
	Message   string        `json:"message,omitempty"`
}

// Progress reports whether the event is a progress sample rather than a transition.
func (m MigrationEvent) Progress() bool { return m.State == "running" && m.Total > 0 }

// NodeChanged: the engine changed the node's state (cordoned, compute disabled…).
type NodeChanged struct {
	Base
	What string `json:"what"`
}

// RunDone: the operation ended; the report says what happened to each pod and VM.
type RunDone struct {
	Base
	Report Report `json:"report"`
}

// Results.
const (
	ResultDone        = "done"
	ResultFailed      = "failed"
	ResultRefused     = "refused"
	ResultInterrupted = "interrupted"
)

// Report is the final account of an operation.
type Report struct {
	Op       model.OpKind   `json:"op"`
	Node     string         `json:"node,omitempty"`
	Result   string         `json:"result"`
	Error    string         `json:"error,omitempty"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Pods     []PodReport    `json:"pods"`
	VMs      []VMReport     `json:"vms"`
	Reasons  []model.Reason `json:"reasons,omitempty"`
}

// PodReport is one pod's eviction.
type PodReport struct {
	Pod      string        `json:"pod"`
	Result   string        `json:"result"` // gone, failed, interrupted
	Attempts int           `json:"attempts"`
	Blocked  int           `json:"blockedByPDB"` // 429s received
	Duration time.Duration `json:"durationNs"`
	Message  string        `json:"message,omitempty"`
}

// VMReport is one VM's migration.
type VMReport struct {
	VM       string        `json:"vm"`
	VMID     string        `json:"vmID"`
	Result   string        `json:"result"` // completed, failed, aborted, skipped, interrupted
	Source   string        `json:"source"`
	Dest     string        `json:"dest,omitempty"`
	Attempts int           `json:"attempts"`
	Bytes    int64         `json:"bytes"`
	Duration time.Duration `json:"durationNs"`
	Message  string        `json:"message,omitempty"`
}
