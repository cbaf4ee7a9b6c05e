package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/opcmd"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/poll"
)

// A dead host, both layers under one plan (recover): the machine is proven off (fencing),
// the node cordoned, its nova-compute disabled and forced down, the node tainted
// out-of-service (Kubernetes then deletes its pods and detaches their volumes), each VM
// rebuilt on another host by Nova's evacuate (within the migration caps), and the pods
// waited for until gone. The way back is uncordon: once the machine runs again, its
// service is forced up (Nova refuses while its evacuation records are "done": the host's
// nova-compute must restart and clean up first), the taint removed, the service enabled,
// the node uncordoned.

// planRecover adds a recovery's reasons and steps. A fence proven earlier counts only if
// its record (in drainctl's namespace, never the node's annotation) proves this outage, and
// only when no fence command is given: a command given always runs.
func (e *Engine) planRecover(ctx context.Context, p *model.Plan, node model.Node, inv model.Inventory, ro RunOptions) error {
	// The API server's node and its kubelet's Lease, not the cache's: death is judged, and a
	// fence proves, by the heartbeat the cache does not hold.
	fresh, found, err := e.kube.NodeFresh(ctx, node.Name)
	if err != nil {
		return err
	}
	if found {
		node.Kube = &fresh
	}
	k := node.Kube
	proof, stale, err := e.provenFence(ctx, *k, ro)
	if err != nil {
		return err
	}
	fencedBefore := proof != nil && e.fenceCmd(ro) == "" && !ro.ConfirmFenced
	fenced := e.fenceCmd(ro) != "" || ro.ConfirmFenced || fencedBefore
	p.Reasons = append(p.Reasons, policy.DeadHost(node, e.now(), e.deathRule(ro), fenced)...)
	if stale != "" && !fenced {
		p.Reasons = append(p.Reasons, model.Reason{Code: model.NotFenced, Severity: model.Notes, Object: node.Name, Message: stale})
	}
	step := func(kind model.StepKind, done bool, detail string) {
		p.Steps = append(p.Steps, model.Step{Kind: kind, Done: done, Detail: detail})
	}
	fence := "the operator's word that the machine is off, recorded with who and when for this outage"
	switch {
	case fencedBefore:
		fence = "fenced already for this outage: " + proof.Text()
	case e.fenceCmd(ro) != "":
		// Named, never its command line: a plan goes into -o json and logs.
		fence = "run " + fenceSource(ro) + ": exit 0 proves the machine off"
	case !fenced:
		fence = "not proven off: a fence command or the operator's word is needed"
	}
	step(model.StepLease, false, "take the maintenance lease")
	step(model.StepFence, fencedBefore, fence)
	step(model.StepCordon, !k.Schedulable && k.HasTaint(e.cfg.Policy.TaintKey), "unschedulable + taint "+e.cfg.Policy.TaintKey)
	// Forced down before it is disabled: while Nova still deems the dead service up (for its
	// service_down_time, 60 s), a disable asks the compute over RPC and waits for an answer
	// that never comes (measured on the real Nova: the API's answer outlived the client's
	// timeout); a service forced down is asked nothing.
	forced := node.Compute == nil || node.Compute.ForcedDown
	step(
		model.StepForceDown,
		forced,
		"force nova-compute on "+firstNonEmpty(node.Host, node.Name)+" down: Nova may then rebuild its VMs elsewhere",
	)
	step(model.StepDisableCompute, node.Compute == nil || !node.Compute.Enabled, computeDetail(node))
	step(model.StepOutOfService, k.HasTaint(policy.OutOfService.Key),
		"taint "+policy.OutOfService.Key+":NoExecute: Kubernetes deletes the node's pods and detaches their volumes")

	var movable []model.VM
	var lost []string
	keep, lose := 0, 0
	for _, vm := range node.VMs {
		method, reasons := policy.VMRecover(vm, e.cfg.Recover.SharedStorage, ro.Policy)
		vm.Method = method
		if !moverOf(method).Stays {
			vm.Disk = policy.DiskFate(vm, e.cfg.Recover.SharedStorage)
		}
		p.VMs = append(p.VMs, vm)
		p.Reasons = append(p.Reasons, reasons...)
		if moverOf(method).Stays {
			continue
		}
		movable = append(movable, vm)
		if vm.Disk == policy.DiskLost {
			lose++
			lost = append(lost, vm.Name)
		} else {
			keep++
		}
	}
	// The higher priorities first; when the other hosts cannot take them all, the lowest are
	// left (named, with their priority), never a random one that Nova's scheduler refuses.
	fits, left := policy.ByPriority(node, movable, inv, e.cpuRatio(), ro.Policy, e.cfg.Recover.Priority)
	for _, l := range left {
		i := slices.IndexFunc(p.VMs, func(v model.VM) bool { return v.ID == l.VM.ID })
		p.VMs[i].Method, p.VMs[i].Disk = model.MoveStays, ""
		p.Reasons = append(p.Reasons, l.Reason)
		if l.VM.Disk == policy.DiskLost {
			lose--
			lost = slices.DeleteFunc(lost, func(n string) bool { return n == l.VM.Name })
		} else {
			keep--
		}
	}
	movable = fits
	for _, vm := range movable {
		if _, _, bad := e.cfg.Recover.Priority.Of(vm, ro.Policy.Maintenance.Honour); bad != "" {
			p.Reasons = append(
				p.Reasons,
				model.Reason{Code: model.VMPolicyUnknown, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID, Message: bad},
			)
		}
	}
	if lose > 0 && !ro.Policy.AcceptDiskLoss { // asked for by name, as an evacuation asks before deleting emptyDir data
		p.Reasons = append(
			p.Reasons,
			model.Reason{Code: model.DiskLoss, Severity: model.Blocks, Object: node.Name, Override: model.OverrideAcceptDiskLoss,
				Message: fmt.Sprintf(
					"%d VM(s) would lose their local disk, rebuilt from their image (each listed as lost in the plan): %s",
					lose,
					strings.Join(lost, ", "),
				)},
		)
	}
	vms := fmt.Sprintf(
		"rebuild %d VM(s) on other hosts (Nova's evacuate): %d keep their disk, %d rebuilt from their image",
		len(movable),
		keep,
		lose,
	)
	if e.nova == nil || node.Compute == nil {
		vms = "no VMs to rebuild: this node has no compute service"
	}
	if e.cfg.Recover.ReserveLabel != "" && e.nova != nil && node.Compute != nil && e.hasReserve(*k, inv) {
		step(model.StepTakeReserve, len(node.VMs) == 0,
			"enable the failover reserve (nodes labelled "+e.cfg.Recover.ReserveLabel+"=true, proven held now): rebuilt there first")
	}
	step(model.StepRebuildVMs, len(node.VMs) == 0, vms)
	// The VMs drainctl stopped for restart-in-place before the host died: started where they
	// were rebuilt, or said to stay stopped, never a silent success.
	if j, _ := ReadJournal(*k); len(j.Restart) > 0 && e.nova != nil {
		step(
			model.StepRestartVMs,
			false,
			fmt.Sprintf("start the %d VM(s) drainctl stopped for restart-in-place where they were rebuilt", len(j.Restart)),
		)
	}

	for _, pod := range deadPods(node.Pods) {
		p.Pods = append(p.Pods, pod)
		switch {
		case pod.OwnerKind == "":
			p.Reasons = append(p.Reasons, model.Reason{Code: model.LostForGood, Severity: model.Notes, Object: pod.Key(),
				Message: "bare pod: deleted with the dead node, nothing recreates it"})
		case pod.LocalVolume != "":
			p.Reasons = append(p.Reasons, model.Reason{Code: model.LostForGood, Severity: model.Notes, Object: pod.Key(),
				Message: fmt.Sprintf("the data of local volume %q stays on the dead machine", pod.LocalVolume)})
		}
	}
	after := "drainctl force-deletes those left after " + e.cfg.Recover.PodsGoneWithin.String()
	if ro.Automatic {
		after = "automatic recovery deletes none: after " + e.cfg.Recover.PodsGoneWithin.String() + " the VMs go on without them"
	}
	stay := ""
	if n := len(node.Pods) - len(p.Pods); n > 0 { // why the list's count is higher
		stay = fmt.Sprintf(" (%d more stay: mirror pods and those tolerating the out-of-service taint, such as DaemonSets')", n)
	}
	step(
		model.StepPodsGone,
		len(p.Pods) == 0,
		fmt.Sprintf(
			"wait until Kubernetes has deleted the node's %d pod(s)%s (%s); PodDisruptionBudgets do not apply: the pods are down already",
			len(p.Pods),
			stay,
			after,
		),
	)
	step(model.StepVerify, false, "no VM left on the host, no pod left on the node")
	if onlyLeasePending(*p) {
		markAllDone(p)
	}
	return nil
}

// fenceSource names where the run's fence command comes from.
func fenceSource(ro RunOptions) string {
	if ro.FenceCmd != "" {
		return "the fence command given for this run"
	}
	return "the fence command ([recover] fence_cmd)"
}

// deathRule is what makes a machine dead for this run: automatic recovery, which watched its
// kubelet stand still, need not wait for the NotReady the node lifecycle controller writes
// 40 s later; a person's recovery does.
func (e *Engine) deathRule(ro RunOptions) policy.DeathRule {
	return policy.DeathRule{
		NotReadyFor:    e.cfg.Recover.NotReadyFor.D(),
		Quiet:          e.cfg.Recover.HeartbeatTimeout.D(),
		KubeletSilence: ro.Automatic,
	}
}

// fenceCmd is the command that proves the machine off: --fence-cmd, else [recover]
// fence_cmd; none when the operator gives their word instead (--confirm-fenced).
func (e *Engine) fenceCmd(ro RunOptions) string {
	if ro.ConfirmFenced {
		return ""
	}
	return firstNonEmpty(ro.FenceCmd, e.cfg.Recover.FenceCmd)
}

// planWayBack adds, to an uncordon, the steps that undo a recovery once the machine runs
// again: force the service up, then take the out-of-service taint away. Only a recovery's
// (the journal says so), unless --force.
func (e *Engine) planWayBack(p *model.Plan, node model.Node, ro RunOptions) {
	k := node.Kube
	j, journaled := ReadJournal(*k)
	if !(journaled && j.Op == model.OpRecover) && !ro.ForceCompute {
		return
	}
	switch { // the provider is proved on every way back: one forced up by an earlier try too
	case node.Compute != nil && node.Compute.ForcedDown:
		p.Steps = append(p.Steps, model.Step{Kind: model.StepForceUp,
			Detail: "wait until nova-compute on " + node.Host + " has restarted and cleaned up after the evacuations, force it " +
				"up, wait until it reports up"})
	case node.Compute != nil:
		p.Steps = append(p.Steps, model.Step{Kind: model.StepForceUp,
			Detail: "nova-compute on " + node.Host + " is not forced down: wait until it reports up, then prove its " +
				"Placement provider holds nothing but its own VMs'"})
	}
	if k.HasTaint(policy.OutOfService.Key) {
		p.Steps = append(
			p.Steps,
			model.Step{Kind: model.StepInService, Detail: "wait until the node is Ready, then remove the taint " + policy.OutOfService.Key},
		)
	}
	if len(j.Reserve) > 0 && e.cfg.Recover.ReserveLabel != "" && node.Compute != nil {
		p.Steps = append(p.Steps, model.Step{Kind: model.StepBeReserve, Detail: fmt.Sprintf(
			"the failover reserve in place of %s, if Nova shows no VM on it: labelled %s=true, nova-compute left disabled",
			strings.Join(j.Reserve, ", "), e.cfg.Recover.ReserveLabel)})
	}
}

// fence proves the machine off before anything changes: the preconditions are read again
// (the plan may be old), then --fence-cmd must exit 0, or the operator's word is taken.
// Either way the proof is recorded for this outage alone (model.FenceRecord), in drainctl's
// namespace, and mirrored in the journal. A refusal changes nothing.
func (r *runner) fence(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	k, ok, err := e.kube.NodeFresh(ctx, p.Node) // the API server's, not the cache's: what is fenced is the node as it is now
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("node %s is gone", p.Node)
	}
	node := model.Node{Name: p.Node, Host: p.Host, Kube: &k}
	if svc, ok, err := r.computeService(ctx); err != nil {
		return "", err
	} else if ok {
		node.Compute = &svc
	}
	cmd := e.fenceCmd(r.ro)
	fenced := cmd != "" || r.ro.ConfirmFenced
	if reasons := policy.DeadHost(node, e.now(), e.deathRule(r.ro), fenced); len(reasons) > 0 {
		return "", &RefusedError{Reasons: reasons}
	}
	notOff := func(why string) error {
		return &RefusedError{Reasons: []model.Reason{{Code: model.NotFenced, Severity: model.Blocks, Object: p.Node, Message: why}}}
	}
	how := "the operator's word"
	check := e.cfg.Recover.FenceCheckCmd
	var id model.MachineIdentity
	if cmd != "" || check != "" {
		if id, err = e.fenceIdentity(ctx, k, cmd, check); err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return "", notOff(err.Error())
		}
		for _, n := range id.Notes {
			r.nodeChanged(n)
		}
	}
	if cmd != "" {
		if err := r.runFence(ctx, cmd, id); err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return "", notOff("the fence command failed, so the machine is not proven off: " + err.Error())
		}
		how = "the fence command exited 0"
	}
	// The machine's power state, asked of its BMC: an exit 0 of the fence command (or a
	// person's word) says it was asked off; the check says it is.
	if check != "" {
		err := opcmd.Run(ctx, opcmd.Spec{Kind: opcmd.FenceCheck, Template: check, Node: p.Node, Host: p.Host,
			SystemUUID: id.SystemUUID, BootID: id.BootID, Timeout: e.cfg.Recover.FenceTimeout.D()},
			func(line string) { r.nodeChanged("fence-check: " + line) })
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return "", notOff(
				"the fence check does not report the machine off ([recover] fence_check_cmd), so nothing is rebuilt: " + err.Error(),
			)
		}
		how += "; the fence check reported it off"
	}
	// The outage proven is the one read before the command ran: a node that came back
	// meanwhile shows another, and the first destructive step's check stops the run.
	proof := model.NewFenceRecord(k, how, e.o.Holder, e.now())
	if err := e.saveFence(ctx, proof); err != nil {
		return "", fmt.Errorf("recording the fence: %w", err)
	}
	r.recovery.proof = &proof
	r.journal(PhaseFenced, "")
	return proof.Text(), nil
}

// runFence runs the fence command, and again [recover] fence_retries times when it fails, all
// within fence_timeout: a BMC may drop one request. A command that hung to its timeout is not
// run again (no time is left). The last failure is returned.
func (r *runner) runFence(ctx context.Context, cmd string, id model.MachineIdentity) error {
	e, p := r.e, r.plan
	window := e.cfg.Recover.FenceTimeout.D()
	deadline := e.now().Add(window) // the engine's clock, as every other wait of the run
	tries := 1 + max(0, e.cfg.Recover.FenceRetries)
	var err error
	for i := 1; i <= tries; i++ {
		left := deadline.Sub(e.now())
		if i == 1 {
			left = window // the first try has the whole window, as a single run always had
		}
		err = opcmd.Run(
			ctx,
			opcmd.Spec{
				Kind:       opcmd.Fence,
				Template:   cmd,
				Node:       p.Node,
				Host:       p.Host,
				SystemUUID: id.SystemUUID,
				BootID:     id.BootID,
				Timeout:    left,
			},
			func(line string) { r.nodeChanged("fence-cmd: " + line) },
		)
		if err == nil || ctx.Err() != nil || errors.Is(err, opcmd.ErrTimedOut) {
			return err
		}
		if i < tries {
			if deadline.Sub(e.now()) <= e.o.Backoff {
				return err // no time left in fence_timeout for another try
			}
			r.nodeChanged(fmt.Sprintf("the fence command failed (try %d of %d): %v; again", i, tries, err))
			if !poll.Sleep(ctx, e.o.Backoff) {
				return err
			}
		}
	}
	return err
}

func (r *runner) forceDown(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	svc, ok, err := r.computeService(ctx)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "no compute service", nil
	case svc.ForcedDown:
		return "already forced down", nil
	}
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	if r.stopUnlessFenced(ctx) {
		return "", context.Cause(ctx)
	}
	if _, err := e.nova.SetForcedDown(ctx, p.Host, true); err != nil {
		return "", err
	}
	r.nodeChanged("nova-compute forced down")
	return "forced down", nil
}

func (r *runner) outOfService(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	if k, _ := e.kube.Node(p.Node); k.HasTaint(policy.OutOfService.Key) {
		return "already tainted", nil
	}
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	if r.stopUnlessFenced(ctx) {
		return "", context.Cause(ctx)
	}
	if err := e.kube.SetTaint(ctx, p.Node, policy.OutOfService, true); err != nil {
		return "", err
	}
	r.nodeChanged("tainted " + policy.OutOfService.Key)
	return "tainted " + policy.OutOfService.Key + "=" + policy.OutOfService.Value + ":NoExecute", nil
}

func (r *runner) rebuildVMs(ctx context.Context) (string, error) {
	if r.e.nova == nil || r.plan.Host == "" {
		return "no VMs: no compute service", nil
	}
	if r.stopUnlessFenced(ctx) {
		return "", context.Cause(ctx)
	}
	r.journal(PhaseRebuilding, "")
	return r.migrate(ctx)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
