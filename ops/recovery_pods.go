package ops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
)

// A dead node's pods: deleted by Kubernetes under the out-of-service taint, force-deleted when it does not.

// podsGone waits until Kubernetes has deleted the dead node's pods (the out-of-service
// taint's effect); those still there after [recover] pods_gone_within are force-deleted
// (the machine is fenced: none of their containers can still run).
func (r *runner) podsGone(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	r.journal(PhaseWaitingPods, "")
	changes, cancel := e.kube.Subscribe()
	defer cancel()
	deadline := e.now().Add(e.cfg.Recover.PodsGoneWithin.D())
	seen := map[string]bool{} // the plan's pods, gone since, are reported gone too
	for _, pod := range p.Pods {
		seen[pod.Key()] = true
	}
	forced := 0
	for {
		left := r.deadPods()
		now := map[string]bool{}
		for _, pod := range left {
			now[pod.Key()] = true
			seen[pod.Key()] = true
		}
		for key := range seen {
			if !now[key] {
				delete(seen, key)
				r.emit(NewPodEvent(e.now(), p.Node, key, PodGone, "", 0, "deleted"))
			}
		}
		if len(left) == 0 {
			if forced > 0 {
				return fmt.Sprintf("the node's pods are gone (%d force-deleted by drainctl)", forced), nil
			}
			return "the node's pods are gone", nil
		}
		if forced == 0 && e.now().After(deadline) && r.ro.Automatic {
			// Automatic recovery deletes no pod (the controller is not granted it): the
			// out-of-service taint has Kubernetes' pod garbage collector delete them once the
			// node is NotReady. The machine is fenced, so none of them runs: the VMs go on.
			var names []string
			for _, pod := range left {
				names = append(names, pod.Key())
			}
			return fmt.Sprintf(
				"%d pod(s) still shown after %s, left to Kubernetes (the out-of-service taint deletes them once the node is NotReady): %s",
				len(left),
				e.cfg.Recover.PodsGoneWithin,
				strings.Join(names, ", "),
			), nil
		}
		if forced == 0 && e.now().After(deadline) {
			if err := r.stillHolder(ctx); err != nil {
				return "", err
			}
			if r.stopUnlessFenced(ctx) { // as before every destructive step: interrupted, recorded
				return "", context.Cause(ctx)
			}
			var names []string
			for _, pod := range left {
				if err := e.kube.Evict(ctx, pod, new(int64), true); err != nil {
					return "", err
				}
				names = append(names, pod.Key())
			}
			forced = len(left)
			r.nodeChanged(
				fmt.Sprintf(
					"force-deleted %d pod(s) Kubernetes had not deleted after %s: %s",
					forced,
					e.cfg.Recover.PodsGoneWithin,
					strings.Join(names, ", "),
				),
			)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-changes:
		case <-time.After(e.o.Poll):
		}
	}
}

// deadPods are the node's pods that do not tolerate the out-of-service taint (a mirror pod is
// the kubelet's own: it stays).
func (r *runner) deadPods() []model.Pod { return deadPods(r.e.kube.PodsOn(r.plan.Node)) }

func deadPods(pods []model.Pod) []model.Pod {
	var out []model.Pod
	for _, pod := range pods {
		if !policy.Outlives(pod) && !pod.Mirror {
			out = append(out, pod)
		}
	}
	return out
}
