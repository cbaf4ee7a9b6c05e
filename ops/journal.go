package ops

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
)

// JournalAnnotation is the node annotation where an operation records where it stands, so
// that a rerun (or another drainctl) resumes instead of starting over.
const JournalAnnotation = "drainctl.io/operation"

// ReasonPrefix starts every disabled_reason drainctl writes: only a service whose reason
// starts with it is re-enabled by uncordon (unless forced).
const ReasonPrefix = "drainctl: "

// Journal phases.
const (
	PhaseCordoned    = "cordoned"
	PhaseQueued      = "queued" // cordoned, nova-compute disabled, waiting for a node slot
	PhaseMigrating   = "migrating"
	PhaseEvicting    = "evicting"
	PhaseDone        = "done"
	PhaseInterrupted = "interrupted"
	PhaseFailed      = "failed"
	PhaseAborted     = "aborted"
	// A recovery's own phases (a dead host).
	PhaseFenced      = "fenced"
	PhaseRebuilding  = "rebuilding"
	PhaseWaitingPods = "waiting-pods"
)

// Journal is what the annotation holds.
type Journal struct {
	Op      model.OpKind `json:"op"`
	Phase   string       `json:"phase"`
	Holder  string       `json:"holder"`
	Started time.Time    `json:"started"`
	Updated time.Time    `json:"updated"`
	// WasSchedulable records the node's state before drainctl touched it, for rollback.
	WasSchedulable bool   `json:"wasSchedulable"`
	Error          string `json:"error,omitempty"`
	// ColdMoves are the VMs drainctl asked to cold-migrate off the node, written before each
	// request and completed with the migration's UUID once Nova has it: a rerun confirms or
	// reverts a VM in VERIFY_RESIZE only when os-migrations shows that same migration.
	ColdMoves []ColdMove `json:"coldMoves,omitempty"`
	// Fenced mirrors a recovery's fence record for kubectl describe. It proves nothing: the
	// record in drainctl's namespace does (ops/fence.go).
	Fenced string `json:"fenced,omitempty"`
	// Campaign names the campaign whose evacuation this is: a campaign resumes a node into
	// its step only while the node is still emptied under its own name.
	Campaign string `json:"campaign,omitempty"`
	// Left are the VMs moved off the node, each added as its move completes: what a return
	// (--return-vms) brings home.
	Left []model.VMLeft `json:"left,omitempty"`
	// Restart are the VMs (IDs) drainctl stopped on the node for restart-in-place, written
	// before each stop: the node's return starts them there again.
	Restart []string `json:"restart,omitempty"`
	// Stopped is each such stop's request ID, by VM ID (Nova keeps it as the stop's instance
	// action): a VM is started again only while its newest stop is this one.
	Stopped map[string]string `json:"stopped,omitempty"`
	// Reserve are the failover reserve's hosts a recovery took (enabled, unlabelled): the
	// node, back and empty, is the reserve in their place.
	Reserve []string `json:"reserve,omitempty"`
}

// ColdMove is one cold migration drainctl asked for.
type ColdMove struct {
	VM        string    `json:"vm"`
	Migration string    `json:"migration,omitempty"` // os-migrations' uuid, once read
	Requested time.Time `json:"requested"`
	// After is the newest migration ID Nova had for the VM just before drainctl asked (0:
	// none; nil: not read, a journal of an older drainctl). Nova makes the record after its
	// 202 (the conductor does), so the record of this request is found later as the VM's
	// first cold migration from its host above it: Nova's own order, not a clock.
	After *int64 `json:"after,omitempty"`
	// Source is the host the VM was asked to leave.
	Source string `json:"source,omitempty"`
	// Request is Nova's request ID of the move (its migrate instance action), journaled once
	// Nova answered: the proof a confirm or a revert asks of Nova, which a journal's writer
	// (the node's kubelet) cannot read, so cannot forge.
	Request string `json:"request,omitempty"`
}

// UnmarshalJSON reads a journal written before the migrations were named (a bare VM ID).
func (c *ColdMove) UnmarshalJSON(b []byte) error {
	var id string
	if json.Unmarshal(b, &id) == nil {
		*c = ColdMove{VM: id}
		return nil
	}
	type plain ColdMove
	return json.Unmarshal(b, (*plain)(c))
}

// Proves says whether the migration m is the one this record asked for: the same UUID. A
// request whose UUID was never read (killed between the request and the read right after
// it) proves nothing: its VM is left for the operator to confirm or revert, said so. Times
// are no proof: Nova's clock is not ours.
func (c ColdMove) Proves(m model.Migration) bool {
	return m.InstanceID == c.VM && c.Migration != "" && m.UUID == c.Migration
}

// Names says whether m is the record this request made, not yet named: the VM's cold
// migration from Source with an ID above After. Of those, the caller takes the oldest.
func (c ColdMove) Names(m model.Migration) bool {
	return c.Migration == "" && c.After != nil && m.InstanceID == c.VM && m.ID > *c.After &&
		m.SourceCompute == c.Source && (m.Type == model.MigrationTypeCold || m.Type == model.MigrationTypeResize)
}

// ReadJournal parses the node's annotation, if any.
func ReadJournal(n model.KubeNode) (Journal, bool) {
	raw, ok := n.Annotations[JournalAnnotation]
	if !ok {
		return Journal{}, false
	}
	var j Journal
	if json.Unmarshal([]byte(raw), &j) != nil {
		return Journal{}, false
	}
	return j, true
}

func (j Journal) encode() string {
	b, _ := json.Marshal(j)
	return string(b)
}

// ComputeReason is the disabled_reason drainctl writes: who, why and when.
func ComputeReason(op model.OpKind, holder, why string, at time.Time) string {
	s := fmt.Sprintf("%s%s by %s at %s", ReasonPrefix, op, holder, at.UTC().Format(time.RFC3339))
	if why != "" {
		s += ": " + why
	}
	return s
}

// DisabledByDrainctl reports whether a compute service's disabled_reason is drainctl's.
func DisabledByDrainctl(s model.ComputeService) bool {
	return !s.Enabled && strings.HasPrefix(s.DisabledReason, ReasonPrefix)
}
