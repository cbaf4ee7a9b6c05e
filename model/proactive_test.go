package model

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Each trigger holds only as it says: a condition True on the node; nova-compute disabled by
// another tool, not by drainctl; nova-compute down while the node is Ready (a dead machine is
// automatic recovery's, not a degrading host).
func TestProactiveTriggers(t *testing.T) {
	ours := func(r string) bool { return strings.HasPrefix(r, "drainctl: ") }
	all := []string{"KernelDeadlock", NovaDisabled, NovaDown}
	node := func(conds []string, enabled bool, reason string, up, ready bool) Node {
		return Node{Name: "n", Kube: &KubeNode{Name: "n", Ready: ready, Conditions: conds},
			Compute: &ComputeService{Host: "n", Enabled: enabled, DisabledReason: reason, Up: up}}
	}
	for _, tc := range []struct {
		desc string
		n    Node
		want []string
	}{
		{"healthy", node(nil, true, "", true, true), nil},
		{"KernelDeadlock", node([]string{"KernelDeadlock"}, true, "", true, true), []string{"KernelDeadlock"}},
		{"a condition not named", node([]string{"MemoryECC"}, true, "", true, true), nil},
		{"disabled by another tool", node(nil, false, "hw-health: ECC", true, true), []string{NovaDisabled}},
		{"disabled by drainctl", node(nil, false, "drainctl: evacuate by x", true, true), nil},
		{"down, the node Ready", node(nil, true, "", false, true), []string{NovaDown}},
		{"down, the node NotReady", node(nil, true, "", false, false), nil},
		{"all at once, in the configuration's order", node([]string{"KernelDeadlock"}, false, "ops", false, true), all},
	} {
		if got := ProactiveTriggers(tc.n, all, ours); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.desc, got, tc.want)
		}
	}
}

// A record answers its own episode's triggers once it ended; a refusal, a run left running,
// other triggers, or an episode cleared do not.
func TestAProactiveRecordAnswersItsEpisode(t *testing.T) {
	k := []string{"KernelDeadlock"}
	for _, tc := range []struct {
		rec  Proactive
		want bool
	}{
		{Proactive{Triggers: k, Outcome: "done"}, true},
		{Proactive{Triggers: k, Outcome: "notified"}, true},
		{Proactive{Triggers: k, Outcome: "failed"}, true},
		{Proactive{Triggers: k, Outcome: "refused"}, false},
		{Proactive{Triggers: k, Outcome: "running"}, false},
		{Proactive{Triggers: []string{NovaDown}, Outcome: "done"}, false},
		{Proactive{Triggers: k, Outcome: "done", Cleared: time.Now()}, false},
	} {
		if got := tc.rec.Handled(k); got != tc.want {
			t.Errorf("%+v answers KernelDeadlock: %v, want %v", tc.rec, got, tc.want)
		}
	}
}
