package ops

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
)

// The owner told ahead ([notify] owner_lead): before a VM is moved by an evacuation, a
// campaign's node or a return, its server's metadata says what is coming and when
// (model.NoticeKey), at least the lead ahead; it is cleared once the move has ended. When the
// owner was first told is drainctl's own record on the node (owners_told.go): a campaign that
// told its next nodes' owners ahead, a second terminal and a resumed run all count the lead
// from it, and a notice the owner removed or edited is written again for their information,
// its lead not restarted. A dead host's rebuild is never held for it, nor a VM a person moves
// by hand; a run may cap it (--owner-lead).

// tellsOwnerOf says whether the run tells the owner of the VM ahead of its move: with
// [notify] owner_lead, even when the run waives the lead (they are told, not waited on).
func (r *runner) tellsOwnerOf(run *vmRun) bool {
	t := traitsOf(r.plan.Op)
	byHand := t.oneVM && !r.ro.Returning
	return r.e.cfg.Notify.OwnerLead > 0 && t.tellsOwners && !byHand && moverOf(run.method).Notice != ""
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

// toldOrTell: true when the lead has passed since the VM's owner was first told (drainctl's
// record; or since drainctl first tried, when Nova refused every notice); else it tells them
// when they were not, and the VM is due at the lead's end. Looked at again each poll
// meanwhile: its owner may answer move-now.
func (r *runner) toldOrTell(ctx context.Context, run *vmRun, notice string) bool {
	e := r.e
	now, lead, node := e.now(), e.OwnerLead(r.ro), r.plan.Node
	n, parsed := model.ParseOwnerNotice(notice)
	if first, ok := e.firstTold(node, run.vm.ID); ok {
		due := !now.Before(first.Add(lead))
		if !due && run.told.IsZero() { // told ahead (a campaign's herald): its row says why it waits
			r.emitVM(run, MigWaiting, fmt.Sprintf("its owner told at %sZ: due at %sZ", first.UTC().Format(time.TimeOnly),
				first.Add(lead).UTC().Format(time.TimeOnly)))
		}
		if !due && notice != run.notice {
			// Removed, garbled or edited by its owner: written again for them to read, as it was;
			// the lead stays counted from the record.
			again := run.notice
			if was, ok := model.ParseOwnerNotice(again); !ok || !was.Told.Equal(first) {
				again = model.NewOwnerNotice(moverOf(run.method).Notice, r.noticeBy(), first, first.Add(lead)).String()
			}
			if e.nova.SetMetadata(ctx, run.vm.ID, model.NoticeKey, again) == nil {
				notice = again
			}
		}
		run.told, run.notice, run.notTold = first, notice, ""
		return due
	}
	if _, _, stale := n.Due(now, lead); parsed && !stale { // a notice of drainctl's no record names (an older one's)
		told := n.Told
		if told.After(now) { // dated ahead: counted from now
			told = now
		}
		r.noteTold(ctx, map[string]time.Time{run.vm.ID: told})
		run.told, run.notice, run.notTold = told, notice, ""
		return !now.Before(told.Add(lead))
	}
	n = model.NewOwnerNotice(moverOf(run.method).Notice, r.noticeBy(), now, now.Add(lead))
	err := e.nova.SetMetadata(ctx, run.vm.ID, model.NoticeKey, n.String())
	if err == nil {
		r.noteTold(ctx, map[string]time.Time{run.vm.ID: n.Told})
		run.told, run.notice, run.notTold = n.Told, n.String(), ""
		e.ownerTold(run.vm, n)
		r.emitVM(run, MigWaiting, fmt.Sprintf("its owner told: due at %sZ (%s = %q)", n.At.UTC().Format(time.TimeOnly), model.NoticeKey, n))
		return lead == 0 // the lead waived for this run: told, not waited on
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

// noteTold records when owners were first told on the run's node; a record that cannot be
// written (the identity may not annotate the node) is kept by the process, said once.
func (r *runner) noteTold(ctx context.Context, at map[string]time.Time, gone ...string) {
	if err := r.e.noteTold(ctx, r.plan.Node, at, gone...); err != nil && !r.said.toldUnsaved {
		r.said.toldUnsaved = true
		r.nodeChanged("when its VMs' owners were told is kept by this process only: " + err.Error())
	}
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
	if host == "" || e.OwnerLead(ro) <= 0 {
		return 0, nil
	}
	vms, err := e.nova.HostServers(ctx, host)
	if err != nil {
		return 0, err
	}
	now, lead, told := e.now(), e.OwnerLead(ro), 0
	record := map[string]time.Time{}
	defer func() {
		if len(record) > 0 {
			_ = e.noteTold(context.WithoutCancel(ctx), node, record) // kept by the process if not written
		}
	}()
	for _, vm := range vms {
		method, _ := policy.VMMove(vm, ro.Policy)
		if n, ok := model.ParseOwnerNotice(vm.Notice); moverOf(method).Notice == "" || ok && !stale(n, now, lead) {
			continue
		}
		n := model.NewOwnerNotice(moverOf(method).Notice, by, now, latest(at, now.Add(lead)))
		if err := e.nova.SetMetadata(ctx, vm.ID, model.NoticeKey, n.String()); err != nil {
			return told, err
		}
		record[vm.ID] = n.Told
		e.ownerTold(vm, n)
		told++
	}
	return told, nil
}

// ownerTold tells the engine's listener (the project's webhook) that vm's owner was told n:
// what and when, and the maintenance's opaque name; never the host nor the campaign.
func (e *Engine) ownerTold(vm model.VM, n model.OwnerNotice) {
	if e.o.OwnerTold != nil {
		e.o.OwnerTold(model.Notice{Kind: model.NoticeMaintenanceEvent, VM: vm.Name, Project: vm.ProjectID,
			Maintenance: strings.TrimPrefix(n.By, "drainctl maintenance "), Message: n.String(), At: n.Told})
	}
}

// MaintenanceRef is the opaque name tenants are told a maintenance by (a campaign, a node's
// evacuation): the same within this process, and no host's nor campaign's name can be read
// back from it (a keyed hash, its key the process's own).
func (e *Engine) MaintenanceRef(what string) string {
	m := hmac.New(sha256.New, e.refKey[:])
	m.Write([]byte(what))
	return "drainctl maintenance m-" + hex.EncodeToString(m.Sum(nil))[:12]
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
	return moverOf(run.method).InPlace && slices.Contains(r.journaled.restart, run.vm.ID)
}

// clearIfOurs removes drainctl's notice from a VM whose act has ended (restarted in place).
func (r *runner) clearIfOurs(ctx context.Context, vm model.VM) {
	if _, ok := model.ParseOwnerNotice(vm.Notice); ok {
		if err := r.e.nova.DeleteMetadata(ctx, vm.ID, model.NoticeKey); err != nil {
			r.nodeChanged("VM " + vm.Name + ": its owner's notice stays in its metadata: " + err.Error())
		}
	}
}

// noticeBy is who the notice names, opaquely (MaintenanceRef): the campaign, else the
// operation and its node.
func (r *runner) noticeBy() string {
	switch {
	case r.ro.Campaign != "":
		return r.e.MaintenanceRef("campaign " + r.ro.Campaign)
	case r.ro.Returning:
		return "drainctl: return home"
	}
	return r.e.MaintenanceRef(fmt.Sprintf("%s of %s", r.plan.Op, r.plan.Node))
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
	var ended []string
	for _, run := range all {
		if run != nil && !r.stoppedInPlace(run) && q.running[run.vm.ID] != run && !slices.Contains(q.pending, run) {
			if !run.told.IsZero() {
				ended = append(ended, run.vm.ID)
			}
			r.clearNotice(ctx, run)
		}
	}
	if len(ended) > 0 { // the next act on them is told anew
		r.noteTold(context.WithoutCancel(ctx), nil, ended...)
	}
}
