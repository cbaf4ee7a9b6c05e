package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/drainctl/drainctl/model"
)

// The failover reserve ([recover] reserve_label), as Masakari's and InstanceHA's reserved
// hosts: nodes labelled KEY=true are kept empty of tenants' VMs for a dead host's. Their
// nova-compute is disabled with a reason naming the reserve (model.ReservePrefix), so no move
// nor boot lands there: Nova's scheduler turns down even a host named to it
// (TestConformanceEvacuationToANamedHost). The failover room counts their room. A recovery
// enables them and rebuilds there first (Nova's host on evacuate, drainctl's pick), and they
// lose the label: they take tenants' VMs from then on. The dead host, back and empty, takes
// the label in their place. The label is the reserve's only record: every process sees it.

// ReserveReason is the disabled_reason of a reserve's nova-compute.
func (e *Engine) ReserveReason() string {
	return model.ReservePrefix + " (label " + e.cfg.Recover.ReserveLabel + "=true): kept empty for a dead host's VMs"
}

// labelledReserve says the node carries the reserve's label.
func (e *Engine) labelledReserve(k model.KubeNode) bool {
	return e.cfg.Recover.ReserveLabel != "" && k.Labels[e.cfg.Recover.ReserveLabel] == "true"
}

// hasReserve says whether the reserve is anyone's to take for k's recovery: a node of inv
// labelled, with a compute service, or one taken already by the recovery of k this one
// resumes (its journal). Without one, a recovery's plan lists no step for it.
func (e *Engine) hasReserve(k model.KubeNode, inv model.Inventory) bool {
	if j, ok := ReadJournal(k); ok && len(j.Reserve) > 0 {
		return true
	}
	return slices.ContainsFunc(inv.Nodes, func(n model.Node) bool {
		return n.Name != k.Name && n.Kube != nil && n.Compute != nil && e.labelledReserve(*n.Kube)
	})
}

// labelledReserve says the run's node carries the reserve's label (the cache).
func (r *runner) labelledReserve() bool {
	k, ok := r.e.kube.Node(r.plan.Node)
	return ok && r.e.labelledReserve(k)
}

// HoldReserve keeps the reserve as its label says, in one pass (the controller's, at each
// resync): a labelled node's nova-compute disabled with the reserve's reason (and, with
// reserve_cordon, the node cordoned); a service left disabled with that reason whose node
// no longer carries the label, enabled. Each label is read from the API server before its
// service changes. It returns a line for each change and for each reserve not empty.
func (e *Engine) HoldReserve(ctx context.Context) ([]string, error) {
	if e.cfg.Recover.ReserveLabel == "" || e.nova == nil {
		return nil, nil
	}
	svcs, err := e.nova.ComputeServices(ctx, "")
	if err != nil {
		return nil, err
	}
	byHost := map[string]model.ComputeService{}
	for _, s := range svcs {
		byHost[s.Host] = s
	}
	var said []string
	for _, cached := range e.kube.Nodes() {
		host := e.inv.mapper.Host(cached)
		svc, ok := byHost[host]
		if !ok || (!e.labelledReserve(cached) && !svc.Reserved()) {
			continue
		}
		k, found, err := e.kube.NodeFresh(ctx, cached.Name)
		if err != nil {
			return said, err
		}
		if !found {
			continue
		}
		line, err := e.holdOne(ctx, k, svc)
		if err != nil {
			return said, err
		}
		if line != "" {
			said = append(said, cached.Name+": "+line)
		}
	}
	return said, nil
}

// holdOne holds one node's part of the reserve, as k (read now) and svc say.
func (e *Engine) holdOne(ctx context.Context, k model.KubeNode, svc model.ComputeService) (string, error) {
	if !e.labelledReserve(k) {
		if svc.Enabled || !strings.HasPrefix(svc.DisabledReason, model.ReservePrefix) {
			return "", nil
		}
		if _, err := e.nova.SetServiceEnabled(ctx, svc, true, ""); err != nil {
			return "", err
		}
		return "no longer labelled " + e.cfg.Recover.ReserveLabel + "=true: nova-compute enabled, no longer the failover reserve", nil
	}
	vms, err := e.nova.Servers(ctx, svc.Host)
	if err != nil {
		return "", err
	}
	if svc.Enabled && len(vms) > 0 {
		// A label is a claim: a host that runs tenants' VMs is no reserve, whoever labelled it
		// (a node's own kubelet, a mistake). It is flagged, never taken out of service.
		return fmt.Sprintf("labelled %s=true but Nova shows %d VM(s) on it: not the failover reserve, nova-compute left "+
			"enabled (empty it, or take the label away)", e.cfg.Recover.ReserveLabel, len(vms)), nil
	}
	var said []string
	if svc.Enabled {
		now, err := e.nova.SetServiceEnabled(ctx, svc, false, e.ReserveReason())
		if err != nil {
			return "", err
		}
		e.inv.ServiceSet(now)
		said = append(said, "nova-compute disabled: the failover reserve")
	}
	if e.cfg.Recover.ReserveCordon && k.Schedulable {
		taint := model.Taint{Key: e.cfg.Policy.TaintKey, Value: "failover-reserve", Effect: "NoSchedule"}
		if err := e.kube.Cordon(ctx, k.Name, taint); err != nil {
			return "", err
		}
		said = append(said, "cordoned (reserve_cordon)")
	}
	if len(vms) > 0 {
		said = append(said, fmt.Sprintf("the failover reserve holds %d VM(s): not empty (drainctl evacuate empties it); "+
			"a recovery does not take it", len(vms)))
	}
	return strings.Join(said, "; "), nil
}

// reservesReady are the reserve's hosts a recovery may take now, each proven at this moment:
// its node labelled (read from the API server), its service running and disabled with the
// reserve's reason, no VM on it as Nova shows, not the dead host. A reserve passed over is said.
func (r *runner) reservesReady(ctx context.Context) (ready []model.ComputeService, passed []string, err error) {
	e := r.e
	svcs, err := e.nova.ComputeServices(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	for _, s := range svcs {
		if !s.Reserved() || s.Host == r.plan.Host {
			continue // before the node is looked up: that walks every node
		}
		node := e.inv.NodeOf(s.Host)
		if node == "" {
			continue
		}
		k, ok, err := e.kube.NodeFresh(ctx, node)
		if err != nil {
			return nil, nil, err
		}
		if !ok || !e.labelledReserve(k) {
			continue
		}
		vms, err := e.nova.Servers(ctx, s.Host)
		if err != nil {
			return nil, nil, err
		}
		if len(vms) > 0 {
			passed = append(passed, fmt.Sprintf("%s not taken: Nova shows %d VM(s) on it", s.Host, len(vms)))
			continue
		}
		ready = append(ready, s)
	}
	return ready, passed, nil
}

// takeReserve enables the reserve for the recovery's rebuilds: each host proven ready now
// is enabled, named in the journal (a resumed recovery takes the same ones; the node, back,
// is the reserve in their place) and unlabelled: it takes tenants' VMs from now on, this
// recovery's first (pickDestination).
func (r *runner) takeReserve(ctx context.Context) (string, error) {
	e := r.e
	if k, ok := e.kube.Node(r.plan.Node); ok {
		if j, ok := ReadJournal(k); ok {
			r.journaled.reserves = slices.Clone(j.Reserve) // taken by the run this one resumes
		}
	}
	ready, passed, err := r.reservesReady(ctx)
	if err != nil {
		return "", err
	}
	also := ""
	if len(passed) > 0 {
		also = "; the reserve " + strings.Join(passed, ", ")
	}
	if len(ready) == 0 && len(r.journaled.reserves) == 0 {
		return "no failover reserve ready (none labelled " + e.cfg.Recover.ReserveLabel + "=true, up, held and empty): Nova's room " +
			"elsewhere" + also, nil
	}
	for _, s := range ready {
		if err := r.stillHolder(ctx); err != nil {
			return "", err
		}
		now, err := e.nova.SetServiceEnabled(ctx, s, true, "")
		if err != nil {
			return "", err
		}
		e.inv.ServiceSet(now)
		if !slices.Contains(r.journaled.reserves, s.Host) {
			r.mu.Lock()
			r.journaled.reserves = append(r.journaled.reserves, s.Host)
			r.mu.Unlock()
		}
		r.journalAgain()
		if err := e.kube.SetLabel(ctx, e.inv.NodeOf(s.Host), e.cfg.Recover.ReserveLabel, ""); err != nil {
			return "", err
		}
		r.nodeChanged("the failover reserve " + s.Host + " enabled for the rebuilds")
	}
	return "the failover reserve " + strings.Join(r.journaled.reserves, ", ") + " enabled: the VMs are rebuilt there first" + also, nil
}

// tookReserve says the recovery took host from the reserve.
func (r *runner) tookReserve(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.journaled.reserves, host)
}

// beReserve makes the recovered node, back and proven empty (no VM Nova shows on its host),
// the reserve in place of the ones its recovery took: labelled, its service disabled with
// the reserve's reason. One that is not empty is said so and returns as any node.
func (r *runner) beReserve(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	svc, ok, err := r.computeService(ctx)
	if err != nil || !ok {
		return "no compute service: not the failover reserve", err
	}
	vms, err := e.nova.Servers(ctx, p.Host)
	if err != nil {
		return "", err
	}
	if len(vms) > 0 {
		return fmt.Sprintf("not the failover reserve: Nova shows %d VM(s) on %s", len(vms), p.Host), nil
	}
	if err := e.kube.SetLabel(ctx, p.Node, e.cfg.Recover.ReserveLabel, "true"); err != nil {
		return "", err
	}
	now, err := e.nova.SetServiceEnabled(ctx, svc, false, e.ReserveReason())
	if err != nil {
		return "", err
	}
	e.inv.ServiceSet(now)
	r.nodeChanged("the failover reserve now")
	return "the failover reserve now: labelled " + e.cfg.Recover.ReserveLabel + "=true, nova-compute left disabled", nil
}
