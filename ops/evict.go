package ops

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/poll"
)

// evict removes the node's evictable pods (or, with carriers, the pods that carried the
// VMs). kubectl's drain filters choose the pods; drainctl evicts them itself: a bounded
// number of eviction requests in flight, every PDB refusal reported and retried as soon as
// the budget allows (or after an exponential backoff with jitter), and a pod known gone
// from the informer, never polled.
func (r *runner) evict(ctx context.Context, carriers bool) (string, error) {
	e, p := r.e, r.plan
	pol := r.ro.Policy
	keep := func(pod model.Pod) bool {
		v, _ := policy.ClassifyPod(pod, pol)
		if carriers {
			return v != policy.Later
		}
		return v != policy.Evict
	}
	pods, refusals, err := e.kube.PodsForDeletion(ctx, p.Node, DrainFilterOptions{Force: pol.Force,
		IgnoreDaemonSets: pol.IgnoreDaemonSets, DeleteEmptyDirData: pol.DeleteEmptyDirData}, keep)
	if err != nil {
		return "", err
	}
	if len(refusals) > 0 {
		msgs := make([]string, len(refusals))
		for i, e := range refusals {
			msgs[i] = e.Error()
		}
		return "", fmt.Errorf("kubectl's drain filters refuse: %s", strings.Join(msgs, "; "))
	}
	if len(pods) == 0 {
		return "no pods to evict", nil
	}
	var grace *int64
	if g := e.cfg.Policy.GracePeriod.D(); g > 0 {
		s := int64(g.Seconds())
		grace = &s
	}
	// The cap is on eviction requests in flight, not on pods terminating: a pod that takes
	// its grace period to stop holds no slot while it does.
	slots := make(chan struct{}, e.cfg.Concurrency.Evictions)
	// Order groups (drain-order labels, [[drain.order]]): each group is gone before the
	// next starts; a group with a pod left stops the step there.
	gone := 0
	groups := policy.GroupByOrder(pods, pol)
	for gi, g := range groups {
		n, failed := r.evictGroup(ctx, g.Pods, grace, slots)
		gone += n
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if len(failed) > 0 {
			where := ""
			if len(groups) > 1 {
				where = fmt.Sprintf(" in order group %d (%d of %d groups done)", g.Order, gi, len(groups))
			}
			return "", fmt.Errorf("%d of %d pods not evicted%s: %s", len(failed), len(g.Pods), where, strings.Join(failed, "; "))
		}
	}
	if len(groups) > 1 {
		return fmt.Sprintf("%d pod(s) gone, in %d order groups", gone, len(groups)), nil
	}
	return fmt.Sprintf("%d pod(s) gone", gone), nil
}

// evictGroup evicts pods together and waits until each is gone or failed.
func (r *runner) evictGroup(ctx context.Context, pods []model.Pod, grace *int64, slots chan struct{}) (gone int, failed []string) {
	results := make(chan PodReport, len(pods))
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- r.evictOne(ctx, pod, grace, slots)
		}()
	}
	wg.Wait()
	close(results)
	for res := range results {
		r.report.Pods = append(r.report.Pods, res)
		if res.Result == PodGone {
			gone++
		} else {
			failed = append(failed, res.Pod+": "+res.Message)
		}
	}
	return gone, failed
}

// evictOne evicts one pod and waits until it is gone.
func (r *runner) evictOne(ctx context.Context, pod model.Pod, grace *int64, slots chan struct{}) PodReport {
	e := r.e
	rep := PodReport{Pod: pod.Key()}
	start := e.now()
	parent := ctx // cancelled: the operation stops; our own deadline: this pod failed
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeouts.Eviction.D())
	defer cancel()
	changes, unsubscribe := e.kube.Subscribe()
	defer unsubscribe()
	emit := func(state PodState, pdb, msg string) {
		r.emit(NewPodEvent(e.now(), r.plan.Node, pod.Key(), state, pdb, rep.Attempts, msg))
	}
	fail := func(msg string) PodReport {
		rep.Result, rep.Message, rep.Duration = PodFailed, msg, e.now().Sub(start)
		emit(PodFailed, "", msg)
		return rep
	}
	lastPDB := ""
	var heldSince time.Time // the first time a budget held the pod (zero: none did)
	held := func(pdb string) {
		lastPDB = pdb
		if heldSince.IsZero() {
			heldSince = e.now()
		}
	}
	// ended reports how the pod's wait ended once ctx is done.
	ended := func(what string) PodReport {
		if parent.Err() != nil {
			rep.Result, rep.Message = PodInterrupted, "interrupted "+what
			return rep
		}
		if lastPDB != "" {
			e.pace.observe(paceBudgets, e.now().Sub(heldSince), true)
			return fail(
				fmt.Sprintf(
					"timed out after %s and %d refusal(s) by PodDisruptionBudget %s",
					e.cfg.Timeouts.Eviction,
					rep.Blocked,
					lastPDB,
				),
			)
		}
		return fail(fmt.Sprintf("timed out after %s %s", e.cfg.Timeouts.Eviction, what))
	}
	backoff := e.o.Backoff
	gate := r.gate(pod)
	for {
		// A budget's pods go while it allows, as the informer last saw it, less the
		// evictions sent that it does not show yet (on every node this engine empties):
		// when it opens, as many go as it allows, not a herd of 429s.
		pdb, ok := gate.reserve(r, pod)
		if !ok {
			held(pdb.Name)
			emit(PodBlocked, pdb.Name, "waiting for the budget to allow a disruption")
			// The informer shows the budget reopening; the timer is only a safety net (a
			// budget whose status is never written), so it can be long.
			if !r.waitBudget(ctx, changes, pod.Namespace, pdb.Name, max(backoff, 10*time.Second)) {
				return ended("while waiting for PDB " + pdb.Name)
			}
			backoff = min(backoff*2, 30*time.Second)
			continue // every pod waiting on it wakes; each reserves again, and only what it allows goes
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			gate.release()
			return ended("before its eviction")
		}
		if r.stillHolder(ctx) != nil {
			<-slots
			gate.release()
			return ended("before its eviction (lease lost)")
		}
		rep.Attempts++
		emit(PodEvicting, "", "")
		err := e.kube.Evict(ctx, pod, grace, r.ro.Policy.DisableEviction)
		<-slots
		if err == nil {
			r.awaitBudgetSeen(ctx, changes, pod, pdb)
		}
		gate.release()
		var be *BudgetError
		switch {
		case err == nil:
		case errors.As(err, &be):
			rep.Blocked++
			pdb := be.PDB
			if pdb == "" && len(pod.PDBs) > 0 {
				pdb = pod.PDBs[0]
			}
			held(pdb)
			emit(PodBlocked, pdb, be.Message)
			if !r.waitBudget(ctx, changes, pod.Namespace, pdb, backoff) {
				return ended("while waiting for PDB " + pdb)
			}
			backoff = min(backoff*2, 30*time.Second)
			continue
		case errors.As(err, new(*TransientError)):
			emit(PodRetrying, "", err.Error())
			if !poll.Sleep(ctx, backoff) {
				return ended("while retrying its eviction")
			}
			backoff = min(backoff*2, 30*time.Second)
			continue
		default:
			if ctx.Err() != nil {
				return ended("while evicting")
			}
			return fail(err.Error())
		}
		emit(PodEvicted, "", "")
		if !heldSince.IsZero() {
			e.pace.observe(paceBudgets, e.now().Sub(heldSince), false)
		}
		for {
			if uid, ok := e.kube.PodUID(pod.NodeName, pod.Namespace, pod.Name); !ok || uid != pod.UID {
				rep.Result, rep.Duration = PodGone, e.now().Sub(start)
				emit(PodGone, "", "")
				return rep
			}
			select {
			case <-changes:
			case <-ctx.Done():
				return ended("while the pod was terminating")
			}
		}
	}
}

// budgetGate counts the evictions under one PodDisruptionBudget that are sent but not yet
// shown spent by the informer, on every node this engine empties.
type budgetGate struct {
	mu     sync.Mutex
	unseen int
}

// gate is the pod's first PDB's gate (nil for a pod under none: nothing to count).
func (r *runner) gate(pod model.Pod) *budgetGate {
	if len(pod.PDBs) == 0 || r.ro.Policy.DisableEviction {
		return nil
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	key := pod.Namespace + "/" + pod.PDBs[0]
	if e.budgets[key] == nil {
		e.budgets[key] = &budgetGate{}
	}
	return e.budgets[key]
}

// reserve takes one of the disruptions the budget allows now; false (and the budget) when it
// allows none beyond the evictions already under way.
func (g *budgetGate) reserve(r *runner, pod model.Pod) (model.PDB, bool) {
	if g == nil {
		return model.PDB{}, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	pdb, ok := r.budgetOf(pod)
	if ok && pdb.DisruptionsAllowed-int32(g.unseen) <= 0 {
		return pdb, false
	}
	g.unseen++
	return pdb, true
}

// release gives back a reservation: its eviction is shown spent, refused, or not sent.
func (g *budgetGate) release() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.unseen--
	g.mu.Unlock()
}

func (r *runner) budgetOf(pod model.Pod) (model.PDB, bool) {
	if len(pod.PDBs) == 0 || r.ro.Policy.DisableEviction {
		return model.PDB{}, false
	}
	return r.e.kube.PDB(pod.Namespace, pod.PDBs[0])
}

// awaitBudgetSeen keeps the reservation, after a successful eviction, until the informer
// shows this pod's eviction spent: the budget's status lists it among its disrupted pods (the
// API server writes it with the decrement), or the pod is gone (its controller then counts
// it as missing). Another pod's decrement is not this one's: counting it so let twenty
// nodes' evictions run ahead of the budget into 429s. The timer is a safety net.
func (r *runner) awaitBudgetSeen(ctx context.Context, changes <-chan struct{}, pod model.Pod, before model.PDB) {
	if before.Name == "" {
		return
	}
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	for {
		if uid, there := r.e.kube.PodUID(pod.NodeName, pod.Namespace, pod.Name); !there || uid != pod.UID ||
			r.e.kube.Disrupted(pod.Namespace, before.Name, pod.Name) {
			return
		}
		select {
		case <-changes:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// waitBudget waits until the PDB allows a disruption again (seen through the informer) or
// the backoff (with ±20% jitter) passes; false when ctx ends first.
func (r *runner) waitBudget(ctx context.Context, changes <-chan struct{}, ns, pdb string, backoff time.Duration) bool {
	jitter := time.Duration(float64(backoff) * (0.8 + 0.4*rand.Float64()))
	timer := time.NewTimer(jitter)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-changes:
			if b, ok := r.e.kube.PDB(ns, pdb); ok && b.DisruptionsAllowed > 0 {
				return true
			}
		}
	}
}
