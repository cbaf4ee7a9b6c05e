package ops

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
)

// The owner told ahead (#57.3, [notify] owner_lead): before a VM is moved by an evacuation, a
// campaign's node or a return, its server's metadata says what is coming and when
// (model.NoticeKey), at least the lead ahead; it is cleared once the move has ended. The
// notice on the server is the record: every process reads the same one, so a campaign that
// told its next nodes' owners ahead, a second terminal and a resumed run all count the lead
// from the one notice, and a notice removed (by the owner, or lost) is written again and its
// lead counted again. A dead host's rebuild is never held for it, nor a VM a person moves
// by hand.

// tellsOwnerOf says whether the run tells the owner of the VM ahead of its move.
func (r *runner) tellsOwnerOf(run *vmRun) bool {
	t := traitsOf(r.plan.Op)
	byHand := t.oneVM && !r.ro.Returning
	return r.e.cfg.Notify.OwnerLead > 0 && t.tellsOwners && !byHand && noticeOf[run.method] != ""
}

// noticeOf is what a notice calls each method's act.
var noticeOf = map[model.MoveMethod]string{
	model.MoveLive: "live-migration", model.MoveCold: "cold-migration", model.MoveRestart: "restart-in-place",
}

// tellAhead tells the owners of the node's VMs at once, before the first is stopped or asked
// for: their leads run together, not one after the other as the caps reach each VM.
func (r *runner) tellAhead(ctx context.Context, runs []*vmRun) {
	for _, run := range runs {
		if r.tellsOwnerOf(run) && !r.ownerSaysNow(run.vm) {
			r.toldOrTell(ctx, run, run.vm.Notice)
		}
	}
}

// toldOrTell reads the VM's notice: true when the lead has passed since its owner was told
// (or since drainctl first tried, when Nova refused every notice); else it tells them when
// no true notice is there, and the VM is due at the lead's end.
func (r *runner) toldOrTell(ctx context.Context, run *vmRun, notice string) bool {
	now, lead := r.e.now(), r.e.cfg.Notify.OwnerLead.D()
	if n, ok := model.ParseOwnerNotice(notice); ok {
		due, _, stale := n.Due(now, lead)
		if !stale { // looked at again each poll meanwhile: its owner may answer move-now
			run.told, run.notice, run.notTold = n.Told, notice, ""
			return due
		}
	}
	n := model.NewOwnerNotice(noticeOf[run.method], r.noticeBy(), now, now.Add(lead))
	err := r.e.nova.SetMetadata(ctx, run.vm.ID, model.NoticeKey, n.String())
	if err == nil {
		run.told, run.notice, run.notTold = n.Told, n.String(), ""
		r.e.ownerTold(run.vm, r.plan.Node, r.ro.Campaign, n)
		r.emitVM(run, MigWaiting, fmt.Sprintf("its owner told: due at %sZ (%s = %q)", n.At.UTC().Format(time.TimeOnly), model.NoticeKey, n))
		return false
	}
	if run.tellTried.IsZero() {
		run.tellTried = now
		r.emitVM(run, MigWaiting, fmt.Sprintf("its owner could not be told (%v): it is moved after the lead (%s) all the same", err, lead))
	}
	run.notTold = err.Error()
	if due := run.tellTried.Add(lead); now.Before(due) {
		run.notBefore = due
		return false
	}
	return true
}

// ownerSaysNow: the VM's owner answered its notice with drainctl:move-now, and the operator
// takes their word ([policy.maintenance] honour): no lead to wait for.
func (r *runner) ownerSaysNow(vm model.VM) bool {
	return vm.MovesNow() && r.ro.Policy.Maintenance.Honour.Of(vm)
}

// NodeServers lists the VMs on node's host, from the process's read of what changed once the
// host is listed: a campaign reads its owners' answers there (move-now, their windows).
func (e *Engine) NodeServers(ctx context.Context, node string) ([]model.VM, error) {
	host := e.inv.HostOf(node)
	if host == "" {
		return nil, nil
	}
	return e.nova.HostServers(ctx, host)
}

// MoveNow moves one VM whose owner asked it (drainctl:move-now), through a one-VM migrate's
// plan and checks (its caps, its groups' budgets), and clears the owner's answer and notice
// once it has moved: the answer was to this notice.
func (e *Engine) MoveNow(ctx context.Context, vm model.VM, ro RunOptions, emit func(Event)) error {
	plan, err := e.Plan(ctx, model.OpMigrate, vm.ID, ro)
	if err != nil {
		return err
	}
	rep, err := e.Run(ctx, plan, ro, emit)
	if err != nil {
		return err
	}
	if rep.Result != ResultDone {
		return fmt.Errorf("not moved: %s", rep.Result)
	}
	for _, key := range []string{model.NoticeKey, model.MoveNowKey} {
		if err := e.nova.DeleteMetadata(ctx, vm.ID, key); err != nil {
			return fmt.Errorf("moved; %w", err)
		}
	}
	return nil
}

// TellOwners tells the owners of the VMs an evacuation of node would move (a campaign's next
// node, ahead of its start): by names who, at when it is due (at least the lead from now).
// A VM whose owner holds a true notice keeps it. It returns how many were told now; the
// node's run finds the notices and counts its lead from them.
func (e *Engine) TellOwners(ctx context.Context, node, by string, at time.Time, ro RunOptions) (int, error) {
	host := e.inv.HostOf(node)
	if host == "" || e.cfg.Notify.OwnerLead <= 0 {
		return 0, nil
	}
	vms, err := e.nova.HostServers(ctx, host)
	if err != nil {
		return 0, err
	}
	now, lead, told := e.now(), e.cfg.Notify.OwnerLead.D(), 0
	for _, vm := range vms {
		method, _ := policy.VMMove(vm, ro.Policy)
		if n, ok := model.ParseOwnerNotice(vm.Notice); noticeOf[method] == "" || ok && !stale(n, now, lead) {
			continue
		}
		n := model.NewOwnerNotice(noticeOf[method], by, now, latest(at, now.Add(lead)))
		if err := e.nova.SetMetadata(ctx, vm.ID, model.NoticeKey, n.String()); err != nil {
			return told, err
		}
		e.ownerTold(vm, node, ro.Campaign, n)
		told++
	}
	return told, nil
}

// ownerTold tells the engine's listener (the project's webhook) that vm's owner was told n.
func (e *Engine) ownerTold(vm model.VM, node, campaign string, n model.OwnerNotice) {
	if e.o.OwnerTold != nil {
		e.o.OwnerTold(model.Notice{Kind: model.NoticeMaintenanceEvent, Node: node, Campaign: campaign, VM: vm.Name,
			Project: vm.ProjectID, Message: n.String(), At: n.Told})
	}
}

func stale(n model.OwnerNotice, now time.Time, lead time.Duration) bool {
	_, _, s := n.Due(now, lead)
	return s
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stoppedInPlace says whether this run stopped the VM for its restart-in-place (journaled):
// its notice stays until the VM is started again.
func (r *runner) stoppedInPlace(run *vmRun) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return run.method == model.MoveRestart && slices.Contains(r.restart, run.vm.ID)
}

// clearIfOurs removes drainctl's notice from a VM whose act has ended (restarted in place).
func (r *runner) clearIfOurs(ctx context.Context, vm model.VM) {
	if _, ok := model.ParseOwnerNotice(vm.Notice); ok {
		if err := r.e.nova.DeleteMetadata(ctx, vm.ID, model.NoticeKey); err != nil {
			r.nodeChanged("VM " + vm.Name + ": its owner's notice stays in its metadata: " + err.Error())
		}
	}
}

// noticeBy is who the notice names: the campaign, else the operation and its node.
func (r *runner) noticeBy() string {
	switch {
	case r.ro.Campaign != "":
		return "campaign " + r.ro.Campaign
	case r.ro.Returning:
		return "drainctl: return home"
	}
	return fmt.Sprintf("drainctl: %s of %s", r.plan.Op, r.plan.Node)
}

// clearNotice removes the notice of a VM whose move has ended (moved, or failed for good).
// Nova refuses it while the server is in a state it will not change (a cold move not
// confirmed yet, an ERROR): the notice stays, and the run says so.
func (r *runner) clearNotice(ctx context.Context, run *vmRun) {
	if run.notice == "" {
		return
	}
	run.notice = ""
	if err := r.e.nova.DeleteMetadata(context.WithoutCancel(ctx), run.vm.ID, model.NoticeKey); err != nil {
		r.emitVM(run, MigWaiting, "its owner's notice stays in its metadata: "+err.Error())
	}
}

// clearEnded clears the notices of the runs that ended (failed, aborted, left by themselves):
// a move still under way or not asked for yet (the operation stopped) keeps its notice, which
// a run again counts its lead from; a VM stopped in place keeps it until it is started again
// (restartVMs).
func (r *runner) clearEnded(ctx context.Context, all []*vmRun, q *moveQueue) {
	for _, run := range all {
		if run != nil && !r.stoppedInPlace(run) && q.running[run.vm.ID] != run && !slices.Contains(q.pending, run) {
			r.clearNotice(ctx, run)
		}
	}
}
