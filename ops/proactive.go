package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drainctl/drainctl/model"
)

// A degrading host's record (model.Proactive) is a record in drainctl's namespace, as a
// recovery's ledger is: the controller that acts writes it, a person reads it.

// ProactiveRecord is the record name of the node's proactive evacuation.
func ProactiveRecord(node string) string { return "proactive-" + node }

// SaveProactive writes the node's record.
func (e *Engine) SaveProactive(ctx context.Context, rec model.Proactive) error {
	return e.saveRecord(ctx, ProactiveRecord(rec.Node), rec)
}

// Proactive is the node's record, if one was written.
func (e *Engine) Proactive(ctx context.Context, node string) (model.Proactive, bool, error) {
	data, found, err := e.kube.Record(ctx, ProactiveRecord(node))
	if err != nil || !found {
		return model.Proactive{}, false, err
	}
	var p model.Proactive
	if err := json.Unmarshal(data, &p); err != nil {
		return model.Proactive{}, false, fmt.Errorf("record %s: %w", ProactiveRecord(node), err)
	}
	return p, true, nil
}

// ProactiveTriggers are the [proactive] conditions that hold on n (model.ProactiveTriggers):
// a nova-compute drainctl disabled itself (its reasons begin "drainctl: ") is not another
// tool's signal.
func ProactiveTriggers(n model.Node, conditions []string) []string {
	return model.ProactiveTriggers(n, conditions, func(reason string) bool {
		return strings.HasPrefix(reason, ReasonPrefix) || strings.HasPrefix(reason, CanaryFailedPrefix)
	})
}

// ProactiveNow are the [proactive] triggers on the node (its nova-compute on host) as the API
// server and Nova answer now, not as a cache had them: what a destructive step acts on is
// proved at that moment.
func (e *Engine) ProactiveNow(ctx context.Context, name, host string) ([]string, error) {
	k, found, err := e.kube.NodeFresh(ctx, name)
	if err != nil || !found {
		return nil, err
	}
	n := model.Node{Name: name, Kube: &k}
	s, ok, err := e.serviceOn(ctx, host)
	if err != nil {
		return nil, err
	}
	if ok {
		n.Compute = &s
	}
	return ProactiveTriggers(n, e.cfg.Proactive.Conditions), nil
}

// Ledger is a run's VMs as a ledger's moves: where each went, and how it ended.
func (r Report) Ledger() []model.VMMove {
	var out []model.VMMove
	for _, v := range r.VMs {
		out = append(out, v.ended(model.VMMove{VM: v.VM, VMID: v.VMID, Source: v.Source, Method: v.Method}))
	}
	return out
}

// Proactives are the nodes' records, by node: one read a pass.
func (e *Engine) Proactives(ctx context.Context) (map[string]model.Proactive, error) {
	recs, err := e.kube.Records(ctx, "proactive")
	if err != nil {
		return nil, err
	}
	out := make(map[string]model.Proactive, len(recs))
	for name, data := range recs {
		var p model.Proactive
		if json.Unmarshal(data, &p) != nil || ProactiveRecord(p.Node) != name {
			continue // unreadable, or naming another node: no answer for any (the node is acted on)
		}
		out[p.Node] = p
	}
	return out, nil
}
