package ops

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/poll"
)

func (e *Engine) releaseSlot(run *vmRun) {
	e.claim(run, -1)
	if run.slot {
		run.slot = false
		<-e.migSlots
	}
}

// migrate live-migrates every VM off the node's host: largest first, within the per-source
// and cluster-wide caps, all running ones polled in one pass per interval. A VM already
// migrating (a resumed run) is followed, not asked again. Success needs Nova's record to
// say completed and the server to be ACTIVE on another host.
func (r *runner) migrate(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	var vms []model.VM
	t := traitsOf(p.Op)
	if t.oneVM {
		vm, err := e.nova.Server(ctx, p.VMs[0].ID)
		if err != nil {
			return "", err
		}
		vms = []model.VM{vm}
	} else {
		all, err := e.nova.HostServers(ctx, p.Host)
		if err != nil {
			return "", err
		}
		vms = all
	}
	moved := "migrated"
	if t.rebuilds {
		moved = "rebuilt elsewhere"
	}
	handled, done := map[string]bool{}, 0
	for {
		n, failed, err := r.moveAll(ctx, vms)
		done += n
		if err != nil {
			return "", err
		}
		if len(failed) > 0 {
			return "", &NotMovedError{Moved: moved, VMs: failed}
		}
		if !t.empties {
			break // one VM asked for; a dead host takes no migration in
		}
		for _, vm := range vms {
			handled[vm.ID] = true
		}
		if vms, err = r.arrivals(ctx, handled); err != nil {
			return "", err
		}
		if len(vms) == 0 {
			break
		}
		r.nodeChanged(
			fmt.Sprintf(
				"%d VM(s) arrived while the node was being emptied (a move into it begun before its nova-compute was "+
					"disabled): moving them too",
				len(vms),
			),
		)
	}
	return fmt.Sprintf("%d VM(s) %s", done, moved), nil
}

// arrivals waits while moves into the host are under way (someone's migration to it, begun
// before its nova-compute was disabled: another node's evacuation, a colleague by hand), then
// lists the VMs on it the run has not handled: they arrived meanwhile. Those moves are not
// drainctl's to abort: after timeouts.migration the step fails and names them; the node stays
// cordoned and disabled, and a run again picks up from there.
func (r *runner) arrivals(ctx context.Context, handled map[string]bool) ([]model.VM, error) {
	e, host := r.e, r.plan.Host
	since, waiting := e.now(), ""
	err := poll.Until(ctx, e.o.Poll, r.nodeChanged, func(ctx context.Context) (bool, string, error) {
		// Every source: the destination is what counts. A wait, not an act (the host's list
		// after it, and the verify's, are the proof): a read begun within half a poll serves.
		moves, _, err := e.nova.MovingFrom(ctx, "", e.o.Poll/2)
		if err != nil {
			return false, "", err
		}
		var incoming []string
		for _, m := range moves {
			if m.DestCompute == host && m.SourceCompute != host {
				incoming = append(incoming, fmt.Sprintf("server %s from %s (%s)", m.InstanceID, m.SourceCompute, m.Status))
			}
		}
		if len(incoming) == 0 {
			return true, "", nil
		}
		if d := e.cfg.Timeouts.Migration.D(); e.now().Sub(since) > d {
			return false, "", fmt.Errorf(
				"%d move(s) into %s still under way after %s (timeouts.migration), so it cannot be called empty: %s; "+
					"they are not drainctl's to abort: run again once they end",
				len(incoming),
				host,
				d,
				strings.Join(incoming, "; "),
			)
		}
		if waiting == "" { // said once, with the count first seen
			waiting = fmt.Sprintf("waiting for %d move(s) into %s to end before it can be called empty", len(incoming), host)
		}
		return false, waiting, nil
	})
	if err != nil {
		return nil, err
	}
	all, err := e.nova.HostServers(ctx, host)
	if err != nil {
		return nil, err
	}
	var out []model.VM
	for _, vm := range all {
		if !handled[vm.ID] {
			out = append(out, vm)
		}
	}
	return out, nil
}

// moveAll moves the VMs (largest first) and returns how many moved, and the ones that did not.
func (r *runner) moveAll(ctx context.Context, vms []model.VM) (done int, failed []model.Reason, err error) {
	e, p := r.e, r.plan
	if traitsOf(p.Op).rebuilds {
		// A dead host's: the higher recovery priorities first.
		policy.RebuildOrder(vms, e.cfg.Recover.Priority, r.ro.Policy.Maintenance.Honour)
	} else {
		sort.SliceStable(vms, func(i, j int) bool { return vms[i].RAMMB > vms[j].RAMMB })
	}
	ours, err := r.coldOursFresh(ctx) // a rerun confirms a killed run's cold moves by the journal it wrote
	if err != nil {
		return 0, nil, err
	}
	q := &moveQueue{running: map[string]*vmRun{}, ours: ours}
	all, reasons := make([]*vmRun, len(vms)), make([]*model.Reason, len(vms))
	defer func() { r.clearEnded(ctx, all, q) }()
	for i, vm := range vms {
		method, reason := r.classify(vm)
		all[i], reasons[i] = &vmRun{vm: vm, method: method}, reason
	}
	r.tellAhead(ctx, all) // owners.go: every owner told at once, their leads run together
	for i, run := range all {
		if bad := moverOf(run.method).begin(r, ctx, run, reasons[i], q); bad != nil {
			failed = append(failed, *bad)
		}
	}
	if !traitsOf(p.Op).rebuilds { // a dead host's VMs were not moved by a killed run: nothing to adopt
		for _, m := range moverOrder {
			if adopt := moverOf(m).adopt; adopt != nil {
				if err := adopt(r, ctx, vms, q); err != nil {
					return 0, nil, err
				}
			}
		}
	}
	running := q.running
	dests := r.destinations(ctx)
	defer func() {
		for _, run := range running {
			e.releaseSlot(run)
		}
	}()
	for len(q.pending)+len(running) > 0 {
		if ctx.Err() != nil {
			for _, run := range running { // left to finish in Nova; the rerun follows them
				r.report.VMs = append(r.report.VMs, r.vmReport(run, MigInterrupted, "left migrating in Nova"))
			}
			return done, failed, ctx.Err()
		}
		failed = append(failed, r.startAllowed(ctx, q, dests)...)
		r.ledgerMoved(ctx, running)
		if !poll.Sleep(ctx, e.o.Poll) {
			continue // the top of the loop records the interruption
		}
		r.recent = nil // a new round reads the moves again
		for id, run := range running {
			outcome, msg, err := r.pollOne(ctx, run)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				r.emitVM(run, run.state, "poll failed: "+err.Error())
				continue
			}
			if outcome == "" {
				continue
			}
			delete(running, id)
			e.releaseSlot(run)
			switch outcome {
			case MigCompleted:
				done++
				e.landed(run) // the room it takes there: in the ledger, not read again
				r.recordLeft(run)
				r.clearNotice(ctx, run)
				r.report.VMs = append(r.report.VMs, r.vmReport(run, MigCompleted, msg))
				r.emitVM(run, MigCompleted, msg)
			case MigSkipped: // stopped in place: left on the node on purpose
				r.leftStopped(run, msg)
			case MigAborted:
				failed = append(failed, notMoved(run.vm, "aborted", ""))
				r.report.VMs = append(r.report.VMs, r.vmReport(run, MigAborted, msg))
				r.emitVM(run, MigAborted, msg)
			default:
				r.emitVM(run, MigFailed, msg)
				if bad := r.afterFailure(run, msg, run.refused, true, &q.pending); bad != nil {
					failed = append(failed, *bad)
				}
			}
		}
	}
	return done, failed, nil
}

// recordLeft journals a VM moved off the node, so that a return can bring it home: where it
// went (Nova's word at the move's end), how, and its flavor.
func (r *runner) recordLeft(run *vmRun) {
	if !traitsOf(r.plan.Op).journals || r.plan.Node == "" {
		return
	}
	to := run.dest // the movers set it from Nova's record of the completed move
	if to == "" {
		return // where it went is unknown: nothing a return could check
	}
	r.mu.Lock()
	l := model.VMLeft{
		ID:          run.vm.ID,
		Name:        run.vm.Name,
		To:          to,
		Method:      run.method,
		Flavor:      run.vm.Flavor,
		At:          r.e.now(),
		MigrationID: run.mid,
	}
	var asked time.Time
	for _, c := range r.coldOursLocked(r.cachedNode()) { // a cold move is named by its record's UUID: the newest of the VM's
		if c.VM == run.vm.ID && c.Migration != "" && (l.MigrationUUID == "" || c.Requested.After(asked)) {
			l.MigrationUUID, asked = c.Migration, c.Requested
		}
	}
	r.journaled.left = append(r.journaled.left, l)
	r.mu.Unlock()
	r.journalAgain()
}

// classify is how the operation treats a VM of the node: an evacuation moves it (live,
// cold, followed) or leaves it; a recovery rebuilds it elsewhere or leaves it.
func (r *runner) classify(vm model.VM) (model.MoveMethod, *model.Reason) {
	if !traitsOf(r.plan.Op).rebuilds {
		o := r.ro.Policy
		o.ByHand = traitsOf(r.plan.Op).oneVM && !r.ro.Returning
		return policy.VMMove(vm, o)
	}
	method, reasons := policy.VMRecover(vm, r.e.cfg.Recover.SharedStorage, r.ro.Policy)
	if moverOf(method).Stays {
		return method, &reasons[0]
	}
	// Left by the plan for the room the higher priorities need: a run does not hand the
	// room to Nova's scheduler, VM by VM, in another order.
	leftForRoom := func(x model.Reason) bool { return x.Code == model.NoHostWithRoom && x.ObjectID == vm.ID }
	if i := slices.IndexFunc(r.plan.Reasons, leftForRoom); i >= 0 {
		return model.MoveStays, &r.plan.Reasons[i]
	}
	return method, nil
}

// sayWaits puts on each waiting VM's row why it waits, when nothing else said (its group's
// budget, its owner's lead say so themselves): the caps, the lock, the pace, its turn.
func (r *runner) sayWaits(mq *moveQueue) {
	why := mq.waitWhy
	mq.waitWhy = ""
	if n := len(mq.running); n > 0 && n >= r.e.cfg.Concurrency.MigrationsPerSource {
		why = fmt.Sprintf("for its turn: %d move(s) at once a host (concurrency.migrations_per_source)",
			r.e.cfg.Concurrency.MigrationsPerSource)
	}
	if why == "" {
		return
	}
	for _, run := range mq.pending {
		if run.attempt == 0 && run.lastSaid == run.waitSaid && run.waitSaid != why {
			run.waitSaid = why
			r.emitVM(run, MigWaiting, why)
		}
	}
}

// startAllowed starts pending migrations while the caps allow: the per-source cap, the
// cluster-wide slots, a destination under its cap. It stops at the first cap reached and
// returns the VMs whose request failed for good.
func (r *runner) startAllowed(ctx context.Context, mq *moveQueue, dests []*destRoom) (failed []model.Reason) {
	e, pending, running := r.e, &mq.pending, mq.running
	defer func() { r.sayWaits(mq) }()
	for len(*pending) > 0 && len(running) < e.cfg.Concurrency.MigrationsPerSource && e.now().After((*pending)[0].notBefore) {
		select {
		case e.migSlots <- struct{}{}:
		default:
			mq.waitWhy = fmt.Sprintf("this process's moves are at their cap (concurrency.migrations_per_cluster = %d)",
				e.cfg.Concurrency.MigrationsPerCluster)
			return failed // the cluster-wide cap is reached
		}
		run := (*pending)[0]
		q := &vmRequest{run: run, q: mq, dests: dests}
		switch r.checkBeforeRequest(ctx, q) { // prerequest.go: each check, named, at this moment
		case handled:
			<-e.migSlots
			if q.failure != nil {
				failed = append(failed, *q.failure)
			}
			continue
		case stopRun, wait: // the top of the loop records a stop; a wait tries at the next poll
			<-e.migSlots
			return failed
		case later: // to the back of the queue, due at the next poll (or when its check said)
			<-e.migSlots
			if next := e.now().Add(e.o.Poll); run.notBefore.Before(next) {
				run.notBefore = next
			}
			*pending = append((*pending)[1:], run)
			continue
		}
		room, dest := q.room, q.dest
		run.picked = dest != "" && q.dests != nil && r.plan.Target == "" // in the ledger already
		*pending = (*pending)[1:]
		run.slot = true
		run.copied += run.attemptBytes(false)
		run.attempt++
		run.started, run.state, run.dest, run.escalated, run.escalation = e.now(), MigRequested, dest, false, ""
		run.refused, run.noValidHost = false, false // what Nova said of an earlier attempt is not this one's
		run.progress = model.MigrationProgress{}
		e.claim(run, +1)
		err := r.request(ctx, run, dest)
		room.unlock(err == nil && !moverOf(run.method).notListed)
		if err != nil {
			e.claim(run, -1)
			e.releaseSlot(run)
			refused := moverOf(run.method).refused != nil && moverOf(run.method).refused(err)
			if bad := r.afterFailure(run, err.Error(), refused, !refusedByNova(err), pending); bad != nil {
				failed = append(failed, *bad)
			}
			continue
		}
		if moverOf(run.method).requestID {
			run.requestID = e.nova.ActionRequest(run.vm.ID)
		}
		said := []string{moverOf(run.method).asks, requestSaid(run.requestID)}
		if run.ownerSaidNow {
			said = append(said, "its owner asked it moved now (drainctl:move-now), not at the lead's end")
		}
		r.emitVM(run, MigRequested, strings.Join(slices.DeleteFunc(said, func(s string) bool { return s == "" }), "; "))
		running[run.vm.ID] = run
	}
	return failed
}

// requestSaid is what a move's request says of Nova's request ID (the instance action its
// owner sees), "" when none came.
func requestSaid(id string) string {
	if id == "" {
		return ""
	}
	return "Nova's request " + id
}

// afterFailure decides on a failed attempt: the VM is queued again (its method's fallback,
// once Nova said it cannot move that way; else a retry, when retryable and attempts are
// left), or it failed: reported, with the override that would move it, and returned.
func (r *runner) afterFailure(run *vmRun, msg string, refused, retryable bool, pending *[]*vmRun) *model.Reason {
	var other model.Override
	if refused {
		var again bool
		if again, other = r.fallBack(run, msg, pending); again {
			return nil
		}
	} else if retryable && r.retry(run, msg, pending) {
		return nil
	}
	r.report.VMs = append(r.report.VMs, r.vmReport(run, MigFailed, msg, other))
	bad := notMoved(run.vm, msg, other)
	return &bad
}

// fallBack asks the method's fallback once Nova said the VM cannot move by it: true when the
// VM was queued again another way, else the override that would move it.
func (r *runner) fallBack(run *vmRun, msg string, pending *[]*vmRun) (bool, model.Override) {
	if fb := moverOf(run.method).fallback; fb != nil {
		return fb(r, run, msg, pending)
	}
	return false, ""
}

// request asks Nova to move the VM by its method.
func (r *runner) request(ctx context.Context, run *vmRun, dest string) error {
	return moverOf(run.method).request(r, ctx, run, dest)
}

// pollOne reads one move under way, by its method.
func (r *runner) pollOne(ctx context.Context, run *vmRun) (MigState, string, error) {
	return moverOf(run.method).poll(r, ctx, run)
}
