package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// NodeEvents records Kubernetes Events on a Node (ops/kube.Client does).
type NodeEvents interface {
	NodeEvent(ctx context.Context, node, eventType, reason, message string)
}

// recordSteps returns an emit that also records, as Events on the node (what `kubectl
// describe node` shows), each step that finished or failed and each VM that moved or could
// not: the in-cluster modes' account of what they did. Progress samples are not recorded.
func recordSteps(ctx context.Context, events NodeEvents, emit func(ops.Event)) func(ops.Event) {
	if events == nil {
		return emit
	}
	record := func(node, typ, reason, msg string) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		events.NodeEvent(ctx, node, typ, reason, msg)
	}
	return func(ev ops.Event) {
		emit(ev)
		switch ev := ev.(type) {
		case ops.StepEvent:
			switch ev.State {
			case ops.StepDone:
				record(ev.Node, "Normal", StepEventReason(ev.Step, false), ev.Detail)
			case ops.StepFailed:
				record(ev.Node, "Warning", StepEventReason(ev.Step, true), ev.Detail)
			}
		case ops.MigrationEvent:
			switch ev.State {
			case ops.MigCompleted:
				record(ev.Node, "Normal",
					EventVMMigrated, fmt.Sprintf("VM %s %s from %s to %s", ev.VM, moved[ev.Method], ev.Source, ev.Dest))
			case ops.MigFailed, ops.MigAborted:
				record(ev.Node, "Warning", EventVMNotMigrated, fmt.Sprintf("VM %s: %s: %s", ev.VM, ev.State, ev.Message))
			}
		case ops.PlanReady, ops.PodEvent, ops.NodeChanged, ops.RunDone, ops.CampaignEvent: // the daemon's account is steps and VMs
		}
	}
}

// moved says how a VM left, as its method did (a rebuild is no migration).
var moved = map[model.MoveMethod]string{model.MoveLive: "live-migrated", model.MoveCold: "cold-migrated", model.MoveRebuild: "rebuilt",
	"": "live-migrated"}
