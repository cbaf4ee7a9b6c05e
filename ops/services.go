package ops

import (
	"context"

	"github.com/drainctl/drainctl/model"
)

// A host's nova-compute service, read where a step decides on it.

// computeService re-reads the node's nova-compute service; false when it has none.
func (r *runner) computeService(ctx context.Context) (model.ComputeService, bool, error) {
	return r.e.serviceOn(ctx, r.plan.Host)
}

// serviceOn reads host's nova-compute service now: every decision on a service (disable it,
// send a VM there, bring one home, explain a wait) opens with this one read. False when
// there is no Nova, no host, or no service on it.
func (e *Engine) serviceOn(ctx context.Context, host string) (model.ComputeService, bool, error) {
	if e.nova == nil || host == "" {
		return model.ComputeService{}, false, nil
	}
	svcs, err := e.nova.ComputeServices(ctx, host)
	if err != nil || len(svcs) == 0 {
		return model.ComputeService{}, false, err
	}
	for _, s := range svcs {
		if s.Host == host {
			return s, true, nil
		}
	}
	return svcs[0], true, nil
}
