package model

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ProactiveConfig is the [proactive] table: a degrading host emptied before it fails
// (vSphere Proactive HA). Nothing is watched by default.
type ProactiveConfig struct {
	// Conditions mark a host degrading: a node condition type whose status is True
	// (node-problem-detector's KernelDeadlock, ReadonlyFilesystem; a vendor's MemoryECC), or
	// Nova's own signals: "nova:disabled" (its nova-compute disabled by another tool, with the
	// reason it gave) and "nova:down" (its nova-compute down while the node is Ready).
	Conditions []string `toml:"conditions"`
	// Action: "notify" tells and changes nothing (the default); "quarantine" cordons the node
	// and disables its nova-compute, so that nothing new lands there; "evacuate" quarantines
	// it and moves its VMs and evicts its pods.
	Action string `toml:"action"`
}

// The actions, and Nova's signals as conditions.
const (
	ProactiveNotify     = "notify"
	ProactiveQuarantine = "quarantine"
	ProactiveEvacuate   = "evacuate"
	NovaDisabled        = "nova:disabled"
	NovaDown            = "nova:down"
)

// Op is the operation the action runs ("": none, notify).
func (c ProactiveConfig) Op() OpKind {
	switch c.Action {
	case ProactiveQuarantine:
		return OpCordon
	case ProactiveEvacuate:
		return OpEvacuate
	}
	return ""
}

func (c ProactiveConfig) validate() error {
	if a := c.Action; a != "" && a != ProactiveNotify && a != ProactiveQuarantine && a != ProactiveEvacuate {
		return &FieldError{"proactive.action", fmt.Sprintf("must be notify, quarantine or evacuate, got %q", a),
			"notify tells and changes nothing; quarantine cordons and disables; evacuate also empties the node"}
	}
	for _, cond := range c.Conditions {
		if strings.TrimSpace(cond) == "" {
			return &FieldError{"proactive.conditions", "an empty condition type", `e.g. ["KernelDeadlock", "nova:down"]`}
		}
		if strings.HasPrefix(cond, "nova:") && cond != NovaDisabled && cond != NovaDown {
			return &FieldError{"proactive.conditions", fmt.Sprintf("no Nova signal %q", cond),
				`Nova's are "nova:disabled" and "nova:down"`}
		}
	}
	return nil
}

// ProactiveTriggers are the conditions of cs that hold on node now, in cs's order: a node
// condition True, its nova-compute disabled by another tool (ours names reasons ours, as
// drainctl's own disables begin), or down while the node is Ready.
func ProactiveTriggers(n Node, cs []string, ours func(reason string) bool) []string {
	var out []string
	for _, c := range cs {
		var holds bool
		switch s := n.Compute; c {
		case NovaDisabled:
			holds = s != nil && !s.Enabled && !ours(s.DisabledReason)
		case NovaDown:
			holds = s != nil && !s.Up && n.Kube != nil && n.Kube.Ready
		default:
			holds = n.Kube != nil && slices.Contains(n.Kube.Conditions, c)
		}
		if holds {
			out = append(out, c)
		}
	}
	return out
}

// Proactive is a degrading host's record: what marked it, what was done, and the ledger of
// its VMs' moves (as a recovery's).
type Proactive struct {
	Node     string    `json:"node"`
	Triggers []string  `json:"triggers"`
	Action   string    `json:"action"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Cleared is when the triggers were first seen gone after it finished: the next ones are
	// another episode, acted on again.
	Cleared time.Time `json:"cleared,omitzero"`
	// Outcome: notified, running, done, failed (a person's now), refused (nothing changed:
	// tried again while the triggers hold).
	Outcome string   `json:"outcome"`
	Error   string   `json:"error,omitempty"`
	Moves   []VMMove `json:"moves,omitempty"`
}

// Handled says the record answers these triggers already: the same episode, not cleared,
// and ended (told, done, or failed: a person's now). A refusal is tried again while they
// hold; a run left running (its process gone) is resumed.
func (p Proactive) Handled(triggers []string) bool {
	ended := p.Outcome == "notified" || p.Outcome == "done" || p.Outcome == "failed"
	a, b := slices.Clone(p.Triggers), slices.Clone(triggers)
	slices.Sort(a)
	slices.Sort(b)
	return ended && p.Cleared.IsZero() && slices.Equal(a, b) // the same, in any order
}
