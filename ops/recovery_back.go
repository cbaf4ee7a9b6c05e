package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/poll"
)

// A recovered node's way back (uncordon): its service forced up once the host runs again, then the out-of-service taint removed.

// forceUp is the way back's first step: the machine runs again. Nova refuses to force the
// service up while evacuations from the host are "done" (its nova-compute has not
// restarted and cleaned up after them): that is waited for, and said. Then the service must
// report up. A VM Nova still shows on the host is reported.
func (r *runner) forceUp(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	up := false
	err := poll.Until(ctx, e.o.Poll, r.nodeChanged, func(ctx context.Context) (bool, string, error) {
		svc, ok, err := r.computeService(ctx)
		switch {
		case err != nil:
			return false, "", err
		case !ok:
			return true, "", nil
		case !svc.ForcedDown && svc.Up:
			up = true
			return true, "", nil
		case !svc.ForcedDown:
			return false, "nova-compute on " + p.Host + " forced up; waiting for it to report up", nil
		}
		_, err = e.nova.SetForcedDown(ctx, p.Host, false)
		var pending *EvacuationsPendingError
		switch {
		case errors.As(err, &pending):
			return false, "waiting: Nova refuses to " +
				"force nova-compute on " + p.Host + " up until it has restarted and cleaned up after the evacuations (their " +
				"records go from done to completed)", nil
		case err != nil:
			return false, "", err
		}
		r.nodeChanged("nova-compute forced up")
		return false, "", nil
	})
	switch {
	case err != nil:
		return "", err
	case !up:
		return "no compute service", nil
	}
	return r.stillOnHost(ctx, "up")
}

// stillOnHost reports the VMs Nova still shows on the host after its return. It proves the
// host clean too: the evacuated servers' allocations, which Nova kept on its provider while
// it was dead, must be gone now that its nova-compute has started (it frees them as it
// starts; waited for, bounded): a share left there would hold room no server uses.
func (r *runner) stillOnHost(ctx context.Context, detail string) (string, error) {
	vms, err := r.e.nova.Servers(ctx, r.plan.Host)
	if err != nil {
		return "", err
	}
	here := map[string]bool{}
	for _, vm := range vms {
		here[vm.ID] = true
	}
	held, _, err := r.placementHeld(ctx, here)
	if err != nil {
		return "", err
	}
	if len(held) > 0 {
		return "", fmt.Errorf(
			"nova-compute on %s is up again, but Nova has not freed its provider: %s",
			r.plan.Host,
			strings.Join(held, ", "),
		)
	}
	detail += "; its Placement provider holds nothing but its own VMs'"
	if len(vms) == 0 {
		return detail, nil
	}
	names := make([]string, len(vms))
	for i, vm := range vms {
		names[i] = vm.Name + " (" + string(vm.Status) + ")"
	}
	return detail + fmt.Sprintf("; Nova still shows %d VM(s) on %s: %s", len(vms), r.plan.Host, strings.Join(names, ", ")), nil
}

// inService takes the out-of-service taint away once the node is Ready again.
func (r *runner) inService(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	detail := ""
	err := poll.Until(ctx, e.o.Poll, r.nodeChanged, func(ctx context.Context) (bool, string, error) {
		k, ok := e.kube.Node(p.Node)
		switch {
		case !ok:
			return false, "", fmt.Errorf("node %s is gone", p.Node)
		case !k.HasTaint(policy.OutOfService.Key):
			detail = "taint already gone"
			return true, "", nil
		case !k.Ready:
			return false, "waiting for the node to be Ready before the out-of-service taint goes", nil
		}
		if err := e.kube.SetTaint(ctx, p.Node, policy.OutOfService, false); err != nil {
			return false, "", err
		}
		r.nodeChanged("taint " + policy.OutOfService.Key + " removed")
		detail = "taint removed"
		return true, "", nil
	})
	return detail, err
}
