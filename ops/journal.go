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
	// request: a rerun confirms these (and only these) when it finds them in VERIFY_RESIZE.
	ColdMoves []string `json:"coldMoves,omitempty"`
	// Fenced: how a recovery proved the machine off, by whom and when; a rerun trusts it.
	Fenced string `json:"fenced,omitempty"`
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
