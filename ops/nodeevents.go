package ops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
)

// NodeEvents records Kubernetes Events on a Node (ops/kube.Client does).
type NodeEvents interface {
	NodeEvent(ctx context.Context, node, eventType, reason, message string)
}

// recordSteps returns an emit that also records, as Events on the node (what `kubectl
// describe node` shows), each step that finished or failed and each VM that moved or could
// not: the in-cluster modes' account of what they did. Progress samples are not recorded.
func recordSteps(ctx context.Context, events NodeEvents, emit func(Event)) func(Event) {
	if events == nil {
		return emit
	}
	record := func(node, typ, reason, msg string) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		events.NodeEvent(ctx, node, typ, reason, msg)
	}
	return func(ev Event) {
		emit(ev)
		switch ev := ev.(type) {
		case StepEvent:
			switch ev.State {
			case StepDone:
				record(ev.Node, "Normal", "Drainctl"+camel(ev.Step), ev.Detail)
			case StepFailed:
				record(ev.Node, "Warning", "Drainctl"+camel(ev.Step)+"Failed", ev.Detail)
			}
		case MigrationEvent:
			switch ev.State {
			case MigCompleted:
				record(ev.Node, "Normal", "DrainctlVMMigrated", fmt.Sprintf("VM %s live-migrated from %s to %s", ev.VM, ev.Source, ev.Dest))
			case MigFailed, MigAborted:
				record(ev.Node, "Warning", "DrainctlVMNotMigrated", fmt.Sprintf("VM %s: %s: %s", ev.VM, ev.State, ev.Message))
			}
		}
	}
}

// camel turns a step's name into an Event reason: "disable-compute" -> "DisableCompute".
func camel(k model.StepKind) string {
	var b strings.Builder
	for _, part := range strings.Split(string(k), "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
