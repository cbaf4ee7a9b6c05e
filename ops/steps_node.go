package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/drainctl/drainctl/model"
)

// The steps that work the node itself and its service: cordon, disable, migrate, evict, abort, enable, uncordon, release.

func (r *runner) cordon(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	r.journal(PhaseCordoned, "")
	k, _ := e.kube.Node(p.Node)
	if !k.Schedulable && k.HasTaint(e.cfg.Policy.TaintKey) {
		return "already cordoned", nil
	}
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	if err := e.kube.Cordon(ctx, p.Node, model.Taint{Key: e.cfg.Policy.TaintKey, Value: "drainctl", Effect: "NoSchedule"}); err != nil {
		return "", err
	}
	r.nodeChanged("cordoned")
	return "unschedulable, tainted " + e.cfg.Policy.TaintKey, nil
}

func (r *runner) disableCompute(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	svc, ok, err := r.computeService(ctx)
	switch {
	case err != nil:
		return "", err
	case !ok && (e.nova == nil || p.Host == ""):
		return "no compute service", nil
	case !ok || !svc.Enabled:
		return "already disabled", nil
	}
	reason := ComputeReason(p.Op, e.o.Holder, r.ro.Why, e.now())
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	now, err := e.nova.SetServiceEnabled(ctx, svc, false, reason)
	if err != nil {
		return "", err
	}
	e.inv.ServiceSet(now) // no plan of this process sends a VM there any more
	r.nodeChanged("nova-compute disabled: " + reason)
	return reason, nil
}

func (r *runner) migrateVMs(ctx context.Context) (string, error) {
	if r.e.nova == nil || r.plan.Host == "" {
		return "no VMs: no compute service", nil
	}
	r.journal(PhaseMigrating, "")
	return r.migrate(ctx)
}

func (r *runner) evictStep(ctx context.Context, carriers bool) (string, error) {
	r.mu.Lock()
	beside := r.beside
	r.mu.Unlock()
	if !beside { // beside the VMs' moves, the journal keeps saying "migrating"
		r.journal(PhaseEvicting, "")
	}
	return r.evict(ctx, carriers)
}

// abort stops the operation working the node, wherever it runs: one of this process stops
// at once; another process is asked (a request on the node) and waited for. Then its
// migrations in progress are aborted, and a rollback takes the node's lease for the steps
// that put it back.
func (r *runner) abort(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	if done := e.Cancel(p.Node); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if err := r.stopHolder(ctx); err != nil {
		return "", err
	}
	if traitsOf(p.Op).leaseAfterAbort {
		if err := r.holdLease(ctx, r.lease.stop); err != nil {
			return "", err
		}
	}
	defer r.clearCancel(context.WithoutCancel(ctx))
	if e.nova == nil || p.Host == "" {
		return "no migrations", nil
	}
	var said []string
	for _, m := range moverOrder { // each method's moves undone its way: live aborted, cold reverted
		if undo := moverOf(m).undo; undo != nil {
			s, err := undo(r, ctx)
			if err != nil {
				return "", err
			}
			if s != "" {
				said = append(said, s)
			}
		}
	}
	return strings.Join(said, "; "), nil
}

func (r *runner) enableCompute(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	svc, ok, err := r.computeService(ctx)
	switch {
	case err != nil:
		return "", err
	case !ok && (e.nova == nil || p.Host == ""):
		return "no compute service", nil
	case !ok || svc.Enabled:
		return "already enabled", nil
	case svc.Reserved():
		return "left disabled: the failover reserve (" + svc.DisabledReason + ")", nil
	case !DisabledByDrainctl(svc) && !r.ro.ForceCompute:
		return fmt.Sprintf("left disabled: someone else disabled it (%q); the force override re-enables it", svc.DisabledReason), nil
	case canaryFailed(svc) && !r.canaryRun.passed && !r.ro.ForceCompute:
		return fmt.Sprintf(
			"left disabled: %s; uncordon runs the canary again (the force override enables it unproven)",
			svc.DisabledReason,
		), nil
	}
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	if r.labelledReserve() { // labelled the reserve meanwhile: held as it, never put to work for a moment
		if _, err := e.nova.SetServiceEnabled(ctx, svc, false, e.ReserveReason()); err != nil {
			return "", err
		}
		return "left disabled: the node is labelled the failover reserve (its reason now the reserve's)", nil
	}
	now, err := e.nova.SetServiceEnabled(ctx, svc, true, "")
	if err != nil {
		return "", err
	}
	e.inv.ServiceSet(now) // a host back at work: the next plan by host (a campaign's next node) may send VMs there
	r.nodeChanged("nova-compute enabled")
	return "enabled", nil
}

func (r *runner) uncordon(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	k, _ := e.kube.Node(p.Node)
	if e.cfg.Recover.ReserveCordon && e.labelledReserve(k) {
		return "left cordoned: the failover reserve (reserve_cordon)", nil
	}
	if j, ok := ReadJournal(k); ok && traitsOf(p.Op).restoresCordon && !j.WasSchedulable {
		// The node was cordoned before drainctl came: only the taint goes.
		if !k.HasTaint(e.cfg.Policy.TaintKey) {
			return "was cordoned before: left cordoned", nil
		}
	}
	if k.Schedulable && !k.HasTaint(e.cfg.Policy.TaintKey) {
		return "already schedulable", nil
	}
	if err := e.kube.Uncordon(ctx, p.Node, e.cfg.Policy.TaintKey); err != nil {
		return "", err
	}
	r.nodeChanged("uncordoned")
	return "schedulable", nil
}

func (r *runner) release(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	r.clearCancel(ctx)
	if k, ok := e.kube.Node(p.Node); ok {
		if j, ok := ReadJournal(k); ok && j.Fenced != "" {
			// A recovery's proof ends with it. Not deleted (an identity that may not): it
			// proves nothing once the node has been Ready anyway.
			if err := e.kube.DeleteRecord(ctx, fenceKey(p.Node)); err != nil {
				r.nodeChanged("fence record left (it proves nothing once the node is Ready): " + err.Error())
			}
		}
	}
	if err := e.kube.SetAnnotation(ctx, p.Node, JournalAnnotation, ""); err != nil {
		return "", err
	}
	if err := e.kube.ReleaseLease(ctx, p.Node, e.o.Holder); err != nil {
		return "", err
	}
	return "journal cleared, lease released", nil
}
