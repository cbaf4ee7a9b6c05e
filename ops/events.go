package ops

import (
	"time"

	"github.com/drainctl/drainctl/model"
)

// Event is everything the engine reports. The set is sealed: only this package makes
// events (the header is unexported; other packages use the New… constructors), and every
// type switch over events names every type (TestEventSwitchesAreExhaustive). Events are
// values; none points into engine state.
type Event interface {
	isEvent()
	Time() time.Time
	NodeName() string
}

// header is what every event carries. Its fields are promoted, so JSON shows them inline.
type header struct {
	At   time.Time `json:"at"`
	Node string    `json:"node,omitempty"`
}

func (h header) isEvent()         {}
func (h header) Time() time.Time  { return h.At }
func (h header) NodeName() string { return h.Node }

// StepState is where a plan step stands.
type StepState string

// Step states.
const (
	StepStarted StepState = "started"
	StepDone    StepState = "done"
	StepSkipped StepState = "skipped" // already as it should be
	StepFailed  StepState = "failed"
	StepStopped StepState = "stopped" // interrupted at a safe point
	StepQueued  StepState = "queued"  // waiting for a node slot (concurrency.nodes)
)

// PodState is where one pod's eviction stands.
type PodState string

// Pod eviction states.
const (
	PodEvicting    PodState = "evicting" // eviction requested
	PodBlocked     PodState = "blocked"  // refused by a PDB; will retry
	PodEvicted     PodState = "evicted"  // accepted; terminating
	PodGone        PodState = "gone"     // no longer on the node
	PodFailed      PodState = "failed"
	PodRetrying    PodState = "retrying"    // the API server failed the request; tried again
	PodInterrupted PodState = "interrupted" // the operation stopped first
)

// MigState is where one VM's live migration stands: Nova's own statuses while it runs
// (model.MigrationStatus, converted with MigStateOf), and the engine's decisions.
type MigState string

// Migration states decided by the engine.
const (
	MigRequested   MigState = "requested"
	MigAdopted     MigState = "adopted" // already migrating when the engine came: followed
	MigCompleted   MigState = "completed"
	MigFailed      MigState = "failed"
	MigAborted     MigState = "aborted"
	MigForced      MigState = "force-complete"
	MigRetrying    MigState = "retrying"
	MigSkipped     MigState = "skipped"
	MigStalled     MigState = "stalled"
	MigInterrupted MigState = "interrupted" // left migrating in Nova when the operation stopped
	MigWaiting     MigState = "waiting"     // held before its request: its owner told, the lead not yet passed
	MigRunning     MigState = MigState(model.MigrationRunning)
	// A cold migration's phases, from the server (Nova's task states, then the engine's).
	MigVerifyResize MigState = "verify-resize" // moved; waits for confirmResize
	MigConfirming   MigState = "confirming"    // confirmResize asked
	MigReverted     MigState = "reverted"      // revertResize: back on its source
	MigRebuilding   MigState = "rebuilding"    // a rebuild elsewhere Nova shows no task of yet
)

// MigStateOf is Nova's status as a migration state.
func MigStateOf(s model.MigrationStatus) MigState { return MigState(s) }

// Result is how an operation ended.
type Result string

// Results.
const (
	ResultDone        Result = "done"
	ResultFailed      Result = "failed"
	ResultRefused     Result = "refused"
	ResultInterrupted Result = "interrupted"
)

// PlanReady: the plan the operation is about to run.
type PlanReady struct {
	header
	Plan model.Plan `json:"plan"`
}

// NewPlanReady announces a plan.
func NewPlanReady(at time.Time, p model.Plan) PlanReady {
	return PlanReady{header: header{At: at, Node: p.Node}, Plan: p}
}

// StepEvent: a plan step changed state.
type StepEvent struct {
	header
	Step   model.StepKind `json:"step"`
	State  StepState      `json:"state"`
	Detail string         `json:"detail,omitempty"`
}

// NewStepEvent reports a step's state.
func NewStepEvent(at time.Time, node string, step model.StepKind, state StepState, detail string) StepEvent {
	return StepEvent{header: header{At: at, Node: node}, Step: step, State: state, Detail: detail}
}

// PodEvent: one pod's eviction moved on.
type PodEvent struct {
	header
	Pod     string   `json:"pod"`
	State   PodState `json:"state"`
	PDB     string   `json:"pdb,omitempty"`
	Attempt int      `json:"attempt"`
	Message string   `json:"message,omitempty"`
}

// NewPodEvent reports a pod's eviction state.
func NewPodEvent(at time.Time, node, pod string, state PodState, pdb string, attempt int, msg string) PodEvent {
	return PodEvent{header: header{At: at, Node: node}, Pod: pod, State: state, PDB: pdb, Attempt: attempt, Message: msg}
}

// MigrationEvent: a VM's live migration moved on, or made progress. Progress events are
// coalesced per VM by consumers that fall behind; transitions never are.
type MigrationEvent struct {
	header
	VM     string           `json:"vm"`
	VMID   string           `json:"vmID"`
	Method model.MoveMethod `json:"method,omitempty"`
	State  MigState         `json:"state"`
	// Task is the task Nova shows on the VM when State is its word for it (a cold move's step,
	// a rebuild's), for the views to place it; the JSON says the word only.
	Task      model.VMTask `json:"-"`
	Source    string       `json:"source"`
	Dest      string       `json:"dest,omitempty"`
	Attempt   int          `json:"attempt"`
	Total     int64        `json:"totalBytes,omitempty"`
	Processed int64        `json:"processedBytes,omitempty"`
	Remaining int64        `json:"remainingBytes,omitempty"`
	Rate      float64      `json:"rateBytesPerSec,omitempty"` // the copy's link speed (Processed over time)
	// Converge is how fast Remaining falls: slower than Rate by what the guest rewrites. The
	// ETA is Remaining over it, so the two are shown together. Negative: Remaining grows;
	// zero: not measured yet (one sample).
	Converge float64       `json:"convergeBytesPerSec,omitempty"`
	ETA      time.Duration `json:"etaNs,omitempty"`
	Stalled  bool          `json:"stalled,omitempty"`
	Message  string        `json:"message,omitempty"`
}

// NewMigrationEvent stamps a migration's payload (every field but the header) with its
// time and node.
func NewMigrationEvent(at time.Time, node string, payload MigrationEvent) MigrationEvent {
	payload.header = header{At: at, Node: node}
	return payload
}

// Progress reports whether the event is a progress sample rather than a transition.
func (m MigrationEvent) Progress() bool { return m.State == MigRunning && m.Total > 0 }

// NodeChanged: the engine changed the node's state (cordoned, compute disabled…).
type NodeChanged struct {
	header
	What string `json:"what"`
}

// NewNodeChanged reports a change the engine made to a node.
func NewNodeChanged(at time.Time, node, what string) NodeChanged {
	return NodeChanged{header: header{At: at, Node: node}, What: what}
}

// RunDone: the operation ended; the report says what happened to each pod and VM.
type RunDone struct {
	header
	Report Report `json:"report"`
}

// NewRunDone ends an operation with its report.
func NewRunDone(at time.Time, r Report) RunDone {
	return RunDone{header: header{At: at, Node: r.Node}, Report: r}
}

// Report is the final account of an operation.
type Report struct {
	Op       model.OpKind   `json:"op"`
	Node     string         `json:"node,omitempty"`
	Result   Result         `json:"result"`
	Error    string         `json:"error,omitempty"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Pods     []PodReport    `json:"pods"`
	VMs      []VMReport     `json:"vms"`
	Reasons  []model.Reason `json:"reasons,omitempty"`
	// Left are the VMs the operation left on the node knowingly (--skip-vm, --force), with
	// why: the node is not empty.
	Left []string `json:"left,omitempty"`
	// Returns: with --return-vms, each VM that left the node, home again or why not.
	Returns []model.VMReturn `json:"returns,omitempty"`
	// BytesCopied is the memory copied by every VM's live migrations, every attempt: the
	// sum of the VMs' Bytes.
	BytesCopied int64 `json:"bytesCopied"`
}

// PodReport is one pod's eviction.
type PodReport struct {
	Pod      string        `json:"pod"`
	Result   PodState      `json:"result"` // gone, failed, interrupted
	Attempts int           `json:"attempts"`
	Blocked  int           `json:"blockedByPDB"` // 429s received
	Duration time.Duration `json:"durationNs"`
	Message  string        `json:"message,omitempty"`
}

// VMReport is one VM's migration.
type VMReport struct {
	VM       string           `json:"vm"`
	VMID     string           `json:"vmID"`
	Method   model.MoveMethod `json:"method,omitempty"`
	Result   MigState         `json:"result"` // completed, failed, aborted, skipped, interrupted
	Source   string           `json:"source"`
	Dest     string           `json:"dest,omitempty"`
	Attempts int              `json:"attempts"`
	Bytes    int64            `json:"bytes"`            // copied, over all attempts
	Started  time.Time        `json:"started,omitzero"` // its last attempt asked of Nova
	Duration time.Duration    `json:"durationNs"`
	Message  string           `json:"message,omitempty"`
	Override model.Override   `json:"override,omitempty"` // what would have moved it (a failure)
	// MigrationID is Nova's migration record of the last attempt (os-migrations), when known.
	MigrationID int64 `json:"migrationID,omitempty"`
	// Told is when its owner was told ([notify] owner_lead), Lead how long before its request;
	// NotTold why Nova refused every notice (the lead was given all the same).
	// RequestID is Nova's request ID of its last move's request: the instance action its owner
	// sees in openstack server event list.
	RequestID string        `json:"requestID,omitempty"`
	Told      time.Time     `json:"told,omitzero"`
	Lead      time.Duration `json:"leadNs,omitempty"`
	NotTold   string        `json:"notTold,omitempty"`
}

// CampaignEvent: a rolling maintenance moved on: a node changed phase (Node set), the
// campaign changed state, or the operator's step printed a line (Message).
type CampaignEvent struct {
	header
	Campaign   string              `json:"campaign"`
	State      model.CampaignState `json:"state"`
	Phase      model.NodePhase     `json:"phase,omitempty"`
	Done       int                 `json:"done"`
	InProgress int                 `json:"inProgress"`
	Left       int                 `json:"left"`
	ETA        time.Duration       `json:"etaNs,omitempty"`
	Message    string              `json:"message,omitempty"`
	// PastDeadline: the node (Node) was not drained within the campaign's node deadline;
	// Message says what held it and what is done with it.
	PastDeadline bool `json:"pastDeadline,omitempty"`
}

// NewCampaignEvent reports the campaign c as it stands, about node (may be "").
func NewCampaignEvent(at time.Time, c model.Campaign, node string, phase model.NodePhase, msg string) CampaignEvent {
	done, inProgress, left := c.Count()
	var eta time.Duration
	if c.State == model.CampaignRunning || c.State == model.CampaignPaused {
		eta = c.ETAAt(at) // counted down while a node runs
	}
	return CampaignEvent{header: header{At: at, Node: node}, Campaign: c.Name, State: c.State, Phase: phase,
		Done: done, InProgress: inProgress, Left: left, ETA: eta, Message: msg}
}
