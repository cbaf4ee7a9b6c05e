package ops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
	"github.com/drainctl/drainctl/text"
)

// A returning host is proven before its service takes tenants' VMs for good ([return]
// canary): a test server booted on it, ACTIVE within canary_timeout, its console log
// written, deleted. A host whose kubelet is Ready and whose nova-compute reports up can
// still fail to boot a VM (its network agent not started, a broken libvirt); a canary finds
// that before a tenant's VM does.
//
// Nova's scheduler takes no server on a disabled service, not even an admin's forced host:
// from Train on, its request filter forbids the COMPUTE_STATUS_DISABLED trait a disabled
// service's provider carries (measured on a real Nova: NoValidHost). So the service is
// enabled for the canary, which asks for its host (2.74: every filter runs, as for a
// tenant's VM), and disabled again, the reason saying why, when the canary fails or is
// interrupted. A tenant's VM scheduled in that window may land there: a failed canary names
// those.

// CanaryAnnotation on the node holds the server ID of the canary being proven on its host,
// written once Nova gave it and removed once it is deleted: a canary left by a run killed in
// between is named by that ID, never by its name (a tenant may name a server anything).
const CanaryAnnotation = "drainctl.io/canary"

// CanaryName is the name of the canary booted on host.
func CanaryName(host string) string { return "drainctl-canary-" + host }

// CanaryFailedPrefix starts the disabled reason a failed canary leaves on the service: still
// drainctl's (ReasonPrefix), but no step enables it until a canary passes or the force
// override says so.
const CanaryFailedPrefix = ReasonPrefix + "canary failed"

// canaryFailed reports whether the service was left disabled by a failed canary.
func canaryFailed(s model.ComputeService) bool {
	return !s.Enabled && strings.HasPrefix(s.DisabledReason, CanaryFailedPrefix)
}

func (r *runner) canary(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	svc, ok, err := r.computeService(ctx)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "no compute service", nil
	case svc.Enabled:
		return "nova-compute already enabled: nothing left to prove", nil
	case !DisabledByDrainctl(svc) && !r.ro.ForceCompute:
		return fmt.Sprintf("no canary: someone else disabled nova-compute (%q) and it stays disabled", svc.DisabledReason), nil
	}
	if k, _ := e.kube.Node(p.Node); !k.Ready {
		return "", r.canaryFails(ctx, "node "+p.Node+" is NotReady: the host is not back", "")
	}
	if !svc.Up || svc.ForcedDown {
		return "", r.canaryFails(ctx, "nova-compute on "+p.Host+" is down: the host cannot boot a server", "")
	}
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	left, earlier := r.earlierCanary(ctx)
	r.canaryRun.onHost = r.serversOn(ctx) // none of these lands while the service is enabled
	if _, err := e.nova.SetServiceEnabled(ctx, svc, true, ""); err != nil {
		return "", err
	}
	r.nodeChanged("nova-compute enabled for the canary (disabled again if it fails)")
	cfg := e.cfg.Return
	spec := BootSpec{Name: CanaryName(p.Host), Image: cfg.Image, Flavor: cfg.Flavor, Network: cfg.Network,
		Metadata: map[string]string{"drainctl:canary": p.Node}}
	id, err := e.nova.BootOn(ctx, p.Host, svc.Zone, spec)
	if err != nil {
		if refusedByNova(err) || statusOf(err) == 403 { // Nova refused the request itself: the config, not the host
			return "", r.canaryFails(ctx, "Nova refused to boot it: "+err.Error(), "")
		}
		return "", r.canaryFails(ctx, "booting it: "+err.Error(), "")
	}
	r.nodeChanged(fmt.Sprintf("canary %s booting on %s (server %s)", spec.Name, p.Host, id))
	if err := e.kube.SetAnnotation(ctx, p.Node, CanaryAnnotation, id); err != nil {
		r.nodeChanged(
			"the canary's server ID NOT " +
				"journaled on the node (" + err.Error() + "): if this run is killed, delete server " + id + " by hand",
		)
	}
	proven, why := r.watchCanary(ctx, id, cfg.CanaryTimeout.D())
	// The canary goes whatever it proved, even when the run is interrupted.
	if err := r.deleteCanary(context.WithoutCancel(ctx), id); err != nil {
		why = strings.TrimPrefix(why+"; ", "; ") + err.Error()
		proven = false
	} else {
		_ = e.kube.SetAnnotation(context.WithoutCancel(ctx), p.Node, CanaryAnnotation, "")
	}
	if ctx.Err() != nil {
		err := r.canaryFails(ctx, "the canary was interrupted before it proved the host", id, earlier)
		return "", &Interrupted{Node: p.Node, Phase: "canary", Cause: fmt.Errorf("%w (%v)", context.Cause(ctx), err)}
	}
	if !proven {
		return "", r.canaryFails(ctx, why, id, earlier)
	}
	r.canaryRun.passed = true
	if svc.Reserved() || r.labelledReserve() { // proven, and held again: nothing but a recovery lands on the reserve
		if _, err := e.nova.SetServiceEnabled(ctx, svc, false, e.ReserveReason()); err != nil {
			return "", err
		}
		return "canary booted on " + p.Host + ", ACTIVE, console written, deleted; nova-compute disabled again: the failover reserve" +
			left, nil
	}
	return "canary booted on " + p.Host + ", ACTIVE, console written, deleted; nova-compute enabled" + left, nil
}

// watchCanary polls the canary until it is ACTIVE with a console log, or fails, or the
// timeout passes; why says what it saw.
func (r *runner) watchCanary(ctx context.Context, id string, timeout time.Duration) (bool, string) {
	e := r.e
	err := e.watchServer(
		ctx,
		id,
		timeout,
		"not proven within return.canary_timeout",
		func(ctx context.Context, vm model.VM) (string, bool, error) {
			switch {
			case vm.Phase == model.PhaseBroken:
				return "", false, fmt.Errorf("it went to ERROR on %s: %s", vm.Host, cmp.Or(vm.Fault, "Nova gave no fault"))
			case vm.Phase != model.PhaseRunning:
				return fmt.Sprintf("still %s (task %s)", vm.Status, cmp.Or(vm.TaskState, "none")), false, nil
			}
			out, err := e.nova.ConsoleOutput(ctx, id, 10)
			switch {
			case err != nil && ctx.Err() != nil: // the timeout cut this read: what was seen before stands
				return "", false, nil
			case err != nil:
				return "ACTIVE; reading its console: " + err.Error(), false, nil
			case strings.TrimSpace(out) == "":
				return "ACTIVE, but its console log is empty: the guest did not boot", false, nil
			}
			return "", true, nil
		},
	)
	if err != nil {
		return false, err.Error()
	}
	return true, ""
}

// deleteCanary deletes the canary and waits until Nova no longer shows it: a canary left on
// the host would be a VM the next evacuation has to move.
func (r *runner) deleteCanary(ctx context.Context, id string) error {
	e := r.e
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Return.CanaryTimeout.D())
	defer cancel()
	if err := e.nova.DeleteServer(ctx, id); err != nil {
		return fmt.Errorf("the canary (server %s) was not deleted: %w", id, err)
	}
	if poll.Until(ctx, e.o.Poll, r.nodeChanged, func(ctx context.Context) (bool, string, error) {
		_, err := e.nova.Server(ctx, id)
		return statusOf(err) == 404, "", nil
	}) != nil {
		return fmt.Errorf("the canary (server %s) is still shown after its delete: delete it by hand", id)
	}
	r.nodeChanged("canary " + id + " deleted")
	return nil
}

// earlierCanary names the canary an earlier run booted on this host and did not delete
// (killed in between), by the server ID it journaled on the node; id is that server. The
// journal is one Node patch away from naming any server: it counts only for a server on
// this host with the canary's name. drainctl hands its delete to the operator, never
// deletes it itself, and calls no other server a leftover, whatever its name.
func (r *runner) earlierCanary(ctx context.Context) (said, id string) {
	k, _, err := r.e.kube.NodeFresh(ctx, r.plan.Node) // the journal as written a moment ago, not the cache's
	if err != nil {
		return "", ""
	}
	journaled := k.Annotations[CanaryAnnotation]
	if journaled == "" {
		return "", ""
	}
	vm, err := r.e.nova.Server(ctx, journaled)
	switch {
	case statusOf(err) == 404:
		_ = r.e.kube.SetAnnotation(ctx, r.plan.Node, CanaryAnnotation, "") // gone since: nothing left
		return "", ""
	case err != nil || vm.Host != r.plan.Host || vm.Name != CanaryName(r.plan.Host):
		return "", ""
	}
	return fmt.Sprintf("; left alone: server %s, the canary an earlier run booted here and did not delete (openstack server delete %s)",
		text.ShellWord(vm.ID), text.ShellWord(vm.ID)), vm.ID
}

// canaryFails disables the service again, its reason saying why, and returns the error that
// fails the node; it names the servers other than the canary (ID canary) that landed on the
// host while its service was enabled for it.
func (r *runner) canaryFails(ctx context.Context, why string, canaries ...string) error {
	e, p := r.e, r.plan
	ctx = context.WithoutCancel(ctx) // an interruption still leaves the service disabled
	reason := fmt.Sprintf("%s at %s: %s", CanaryFailedPrefix, e.now().UTC().Format(time.RFC3339), why)
	if len(reason) > 255 { // Nova's disabled_reason column
		cut := 252
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut] + "..."
	}
	err := fmt.Errorf("the host %s is not proven healthy, nova-compute stays disabled: %s", p.Host, why)
	if _, serr := e.nova.SetServiceEnabled(ctx, model.ComputeService{Host: p.Host}, false, reason); serr != nil {
		return fmt.Errorf("%w (NOT disabled again: %v; disable it by hand: openstack compute service set --disable %s nova-compute)",
			err, serr, text.ShellWord(p.Host))
	}
	r.nodeChanged("nova-compute disabled again: " + reason)
	if landed := r.landedBeside(ctx, canaries); landed != "" {
		err = fmt.Errorf("%w; landed on it while it was enabled for the canary: %s", err, landed)
	}
	return err
}

// serversOn is the IDs of the servers on the node's host now, as Nova lists them (nil when
// the read fails).
func (r *runner) serversOn(ctx context.Context) map[string]bool {
	vms, err := r.e.nova.Servers(ctx, r.plan.Host)
	if err != nil {
		return nil
	}
	ids := make(map[string]bool, len(vms))
	for _, vm := range vms {
		ids[vm.ID] = true
	}
	return ids
}

// landedBeside names the servers on the host other than the canaries (by ID: a tenant's
// server named like one is a tenant's) and those Nova listed there just before the service
// was enabled (a VM stopped in place, one left on purpose): tenants' VMs the scheduler sent to
// the unproven host while its service was enabled for the canary.
func (r *runner) landedBeside(ctx context.Context, canaries []string) string {
	vms, err := r.e.nova.Servers(ctx, r.plan.Host)
	if err != nil {
		return ""
	}
	before := map[string]bool{}
	for _, vm := range r.plan.VMs {
		before[vm.ID] = true
	}
	var names []string
	for _, vm := range vms {
		if !slices.Contains(canaries, vm.ID) && !before[vm.ID] && !r.canaryRun.onHost[vm.ID] {
			names = append(names, fmt.Sprintf("%s (%s)", vm.Name, vm.ID))
		}
	}
	return strings.Join(names, ", ")
}
