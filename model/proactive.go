package model

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
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
	// MaxOut bounds the nodes out of service by [proactive] at once (quarantined or
	// evacuated, and not yet brought back by a person), a count ("1") or a share ("10%"); a
	// further degrading node is told of only, said, until one returns. MaxOutPerDomain bounds
	// them in each [recover] failure_domain too ("": no bound but MaxOut). One condition set on
	// every node (a bad rollout of node-problem-detector's rules) empties one node, not all.
	MaxOut          string `toml:"max_out"`
	MaxOutPerDomain string `toml:"max_out_per_domain"`
	// WaitOwnerLead: an evacuation waits [notify] owner_lead for the VMs' owners as any does;
	// false (the default), a degrading host's VMs are moved at once, their owners told.
	WaitOwnerLead bool `toml:"wait_owner_lead"`
}

// OutLimit is how many of n compute nodes [proactive] may have out at once.
func (c ProactiveConfig) OutLimit(n int) int { return shareOf(cmp.Or(c.MaxOut, "1"), n) }

// DomainOutLimit is how many of a failure domain's n nodes it may have out at once (0: none but
// OutLimit).
func (c ProactiveConfig) DomainOutLimit(n int) int {
	if c.MaxOutPerDomain == "" {
		return 0
	}
	return shareOf(c.MaxOutPerDomain, n)
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
	for _, l := range []struct{ key, v string }{{"proactive.max_out", c.MaxOut}, {"proactive.max_out_per_domain", c.MaxOutPerDomain}} {
		if l.v == "" {
			continue
		}
		m, _ := strings.CutSuffix(strings.TrimSpace(l.v), "%")
		if n, err := strconv.Atoi(m); err != nil || n < 1 || strings.Trim(m, "0123456789") != "" {
			return &FieldError{l.key, fmt.Sprintf("must be a count or a percentage of at least 1, got %s", Quoted(l.v)),
				`e.g. "1" or "10%": how many nodes [proactive] may have out of service at once`}
		}
	}
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
