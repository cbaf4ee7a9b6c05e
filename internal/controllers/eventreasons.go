package controllers

import (
	"strings"

	"github.com/drainctl/drainctl/model"
)

// EventReason is the reason of an Event drainctl records on a Node (kubectl describe node).
type EventReason = string

// The reasons, each of one place that records it; docs/reference.md lists them from here.
const (
	EventStarted          EventReason = "DrainctlStarted"         // the daemon began emptying a cordoned node, or putting one back
	EventDone             EventReason = "DrainctlDone"            // the daemon's operation on the node ended done
	EventFailed           EventReason = "DrainctlFailed"          // the daemon's operation on the node failed: its message says why
	EventPlanFailed       EventReason = "DrainctlPlanFailed"      // the daemon could not plan the node's operation
	EventVMMigrated       EventReason = "DrainctlVMMigrated"      // a VM left the node (live, cold or rebuilt), from where to where
	EventVMNotMigrated    EventReason = "DrainctlVMNotMigrated"   // a VM's move failed or was aborted
	EventRecoveryStarted  EventReason = "DrainctlRecoveryStarted" // automatic recovery took the dead node up (its proof of death)
	EventRecoveryDone     EventReason = "DrainctlRecoveryDone"    // its VMs rebuilt elsewhere
	EventRecoveryFailed   EventReason = "DrainctlRecoveryFailed"  // it stopped: its message says where
	EventRecoveryRefused  EventReason = "DrainctlRecoveryRefused" // its plan was blocked: nothing changed
	EventRecoveryStorm    EventReason = "DrainctlRecoveryStorm"   // too many nodes unhealthy: nothing is fenced
	EventMaintenanceStart EventReason = "MaintenanceStarted"      // a NodeMaintenance began emptying the node
	EventMaintenanceDone  EventReason = "MaintenanceSucceeded"    // the NodeMaintenance emptied the node
	EventMaintenanceEnded EventReason = "MaintenanceEnded"        // the NodeMaintenance was deleted: the node restored
	EventMaintenanceError EventReason = "MaintenanceFailed"       // the NodeMaintenance's operation failed
)

// StepEventReason is a step's Event reason as the controllers' runs record it: "Drainctl"
// and the step in camel case ("disable-compute": DrainctlDisableCompute), "Failed" after it
// when it failed.
func StepEventReason(k model.StepKind, failed bool) EventReason {
	r := "Drainctl" + camel(string(k))
	if failed {
		r += "Failed"
	}
	return r
}

// NoticeEventReason is [proactive]'s Event reason for a notice kind ("proactive-done":
// DrainctlProactiveDone).
func NoticeEventReason(k model.NoticeKind) EventReason { return "Drainctl" + camel(string(k)) }

// camel turns a dashed name into camel case: "disable-compute" -> "DisableCompute".
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
