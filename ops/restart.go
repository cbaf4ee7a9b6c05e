package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
)

// restart-in-place, a VM's own policy: for a short reboot of a VM that tolerates the
// downtime, it is stopped where it is before the node's step, and started there again once
// the node returns (uncordon, a campaign's return, a rollback). Each stop is journaled before
// it is asked, so the return knows what drainctl stopped; a VM stopped by its owner before
// stays stopped.

// The stop mover: restart-in-place's stop, a row of movers like any move. It is queued and
// asked for through the same checks (beforeRequest: its owner's lead, still the holder, the
// start lock, its groups' budgets), so that two processes stopping two members of a group
// count each other; polled until Nova shows it stopped, it is then left on the node on
// purpose (MigSkipped), to start there again when the node returns.

// queueStop takes a VM to stop in place into the run: a running one waits for its request;
// one not running is left as it is (stopped by an earlier run, or by its owner).
func (r *runner) queueStop(_ context.Context, run *vmRun, reason *model.Reason, q *moveQueue) *model.Reason {
	if run.vm.Phase == model.PhaseRunning {
		q.pending = append(q.pending, run)
		return nil
	}
	msg := reason.Message
	if r.stoppedByUs(run.vm.ID) {
		msg = "stopped for restart-in-place (by an earlier run): started on the node again when it returns"
	}
	r.leftStopped(run, msg)
	return nil
}

// leftStopped accounts for a VM left stopped on the node on purpose.
func (r *runner) leftStopped(run *vmRun, msg string) {
	vm := run.vm
	r.report.VMs = append(
		r.report.VMs,
		VMReport{VM: vm.Name, VMID: vm.ID, Method: model.MoveRestart, Result: MigSkipped, Source: vm.Host, Message: msg},
	)
	r.report.Left = append(r.report.Left, vm.Name+": "+msg)
	r.emitVM(run, MigSkipped, msg)
}

// requestStop journals the stop, then asks it (the return must know what drainctl stopped),
// then journals its request ID: the proof the return asks of Nova.
func requestStop(r *runner, ctx context.Context, run *vmRun, _ string) error {
	r.mu.Lock()
	r.journaled.restart = append(r.journaled.restart, run.vm.ID)
	r.mu.Unlock()
	r.journalAgain()
	if err := r.stillHolder(ctx); err != nil {
		return err
	}
	req, err := r.e.nova.StopServer(ctx, run.vm.ID)
	if err != nil {
		return fmt.Errorf("stopping it for restart-in-place: %w", err)
	}
	r.mu.Lock()
	if r.journaled.stopReqs == nil {
		r.journaled.stopReqs = map[string]string{}
	}
	r.journaled.stopReqs[run.vm.ID] = req
	r.mu.Unlock()
	run.requestID = req
	r.journalAgain()
	return nil
}

// pollStop reads the stop once: stopped with no task, it is left on the node (MigSkipped).
// A stop cannot be taken back: past timeouts.migration it fails, not asked again.
func (r *runner) pollStop(ctx context.Context, run *vmRun) (MigState, string, error) {
	vm, err := r.e.nova.Server(ctx, run.vm.ID)
	if err != nil {
		return "", "", err
	}
	seen, done, err := inPhase(vm, model.PhaseStopped)
	switch {
	case done:
		return MigSkipped, "stopped for restart-in-place: started on the node again when it returns", nil
	case err != nil:
		return MigFailed, "stopping it for restart-in-place: " + err.Error(), nil
	}
	if d := r.e.cfg.Timeouts.Migration.D(); r.e.now().Sub(run.started) > d {
		run.settled = true
		return MigFailed, fmt.Sprintf("stopping it for restart-in-place: not %s within timeouts.migration (%s): %s",
			model.PhaseStopped, d, seen), nil
	}
	return "", "", nil
}

// stoppedByUs says whether the node's journal says drainctl stopped the VM in place.
func (r *runner) stoppedByUs(id string) bool {
	k, _ := r.e.kube.Node(r.plan.Node)
	j, _ := ReadJournal(k)
	return slices.Contains(j.Restart, id)
}

// waitPhase polls the VM until Nova shows it in phase with no task, within
// timeouts.migration.
func (r *runner) waitPhase(ctx context.Context, id string, phase model.VMPhase) error {
	return r.e.watchServer(ctx, id, r.e.cfg.Timeouts.Migration.D(), "not "+phase.String()+" within timeouts.migration",
		func(_ context.Context, vm model.VM) (string, bool, error) { return inPhase(vm, phase) })
}

// inPhase judges a server a stop or a start waits on: done once in phase with no task; an
// error once it went to ERROR; else what it is now.
func inPhase(vm model.VM, phase model.VMPhase) (seen string, done bool, err error) {
	switch {
	case vm.Phase == phase && !vm.Busy():
		return "", true, nil
	case vm.Phase == model.PhaseBroken:
		return "", false, fmt.Errorf("it went to ERROR: %s", cmp.Or(vm.Fault, "Nova gave no fault"))
	}
	return fmt.Sprintf("%s (task %s)", vm.Status, cmp.Or(vm.TaskState, "none")), false, nil
}

// watchServer reads the server every poll until judge says it is done, or fails it, or
// timeout passes: the error then says "<notYet> (<timeout>): <what was last seen>". judge
// says what it saw ("" keeps the last). A read the timeout itself cuts is not what was seen.
func (e *Engine) watchServer(ctx context.Context, id string, timeout time.Duration, notYet string,
	judge func(ctx context.Context, vm model.VM) (seen string, done bool, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "not read yet"
	for {
		vm, err := e.nova.Server(ctx, id)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			last = "reading it: " + err.Error()
		default:
			seen, done, err := judge(ctx, vm)
			if done || err != nil {
				return err
			}
			if seen != "" {
				last = seen
			}
		}
		if !poll.Sleep(ctx, e.o.Poll) {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s (%s): %s", notYet, timeout, last)
			}
			return ctx.Err()
		}
	}
}

// restartVMs is the return's step: the VMs drainctl stopped in place (the journal's claim,
// checked against Nova) started again where they are. One moved or deleted since is not
// drainctl's to start; one that does not start fails the step, and a rerun tries again.
func (r *runner) restartVMs(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	k, _ := e.kube.Node(p.Node)
	j, _ := ReadJournal(k)
	if len(j.Restart) == 0 {
		return "no VM stopped for restart-in-place", nil
	}
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	var started, notes, failed []string
	for _, id := range j.Restart {
		vm, err := e.nova.Server(ctx, id)
		switch {
		case statusOf(err) == 404:
			notes = append(notes, id+": deleted since it was stopped")
			continue
		case err != nil:
			return "", err
		case vm.Host != p.Host && !r.rebuiltHere(ctx, vm, p.Host) && !r.movedByThisRun(vm.ID):
			notes = append(notes, vm.Name+": moved since it was stopped (now on "+vm.Host+"): not drainctl's to start")
			continue
		case vm.Host == p.Host && traitsOf(p.Op).rebuilds:
			// Left on the dead host (its disk, the room): it stays stopped, and is said so.
			msg := vm.Name + ": stopped by drainctl for restart-in-place, not started: left on the dead host (see the recovery's ledger)"
			notes = append(notes, msg)
			r.report.Left = append(r.report.Left, msg)
			continue
		case vm.Phase == model.PhaseRunning:
			started = append(started, vm.Name+" (running already)")
			continue
		case vm.Phase != model.PhaseStopped || vm.Busy():
			failed = append(
				failed,
				fmt.Sprintf("%s: %s (task %s), not stopped as drainctl left it", vm.Name, vm.Status, cmp.Or(vm.TaskState, "none")),
			)
			continue
		}
		// Its owner's stop (again, or ever) leaves it stopped.
		ours, last, err := r.stoppedAsJournaled(ctx, j, id)
		if err != nil {
			return "", err
		}
		if !ours {
			notes = append(
				notes,
				fmt.Sprintf("%s: left stopped: its newest stop is not the one drainctl asked (%s)", vm.Name, powerSeen(last)),
			)
			continue
		}
		if err := e.nova.StartServer(ctx, id); err != nil {
			failed = append(failed, vm.Name+": "+err.Error())
			continue
		}
		if err := r.waitPhase(ctx, id, model.PhaseRunning); err != nil {
			failed = append(failed, vm.Name+": "+err.Error())
			continue
		}
		where := "in place"
		if vm.Host != p.Host {
			where = "on " + vm.Host + ", where it was moved"
		}
		r.nodeChanged("VM " + vm.Name + " started again " + where)
		r.clearIfOurs(ctx, vm) // its owner's notice: the restart has ended
		started = append(started, vm.Name+" ("+where+")")
	}
	r.restarted = true
	s := fmt.Sprintf("%d VM(s) started again: %s", len(started), strings.Join(started, ", "))
	if len(notes) > 0 {
		s += "; " + strings.Join(notes, "; ")
	}
	if len(failed) > 0 {
		return "", fmt.Errorf(
			"restart-in-place: %d VM(s) not started on %s: %s; run the same command again to retry",
			len(failed),
			p.Host,
			strings.Join(failed, "; "),
		)
	}
	return s, nil
}

// stoppedAsJournaled proves the journal's claim that drainctl stopped the VM (one patch on
// the Node writes it): the server's newest power action in Nova is the stop drainctl asked,
// by the request ID journaled with it, with no start or stop after it.
func (r *runner) stoppedAsJournaled(ctx context.Context, j Journal, id string) (bool, model.InstanceAction, error) {
	last, err := r.e.nova.LastPowerAction(ctx, id)
	if err != nil {
		return false, last, err
	}
	asked := j.Stopped[id]
	return asked != "" && last.Action == "stop" && last.RequestID == asked, last, nil
}

// stillStopped says which VMs drainctl stopped for restart-in-place stay stopped because the
// run ended before its restart-vms step (a failed canary, a refused uncordon): their owners'
// downtime goes on, and it is said with the failure rather than left for someone to find.
func (r *runner) stillStopped(ctx context.Context) string {
	planned := slices.ContainsFunc(r.plan.Steps, func(s model.Step) bool { return s.Kind == model.StepRestartVMs && !s.Done })
	if !planned || r.restarted {
		return ""
	}
	k, _ := r.e.kube.Node(r.plan.Node)
	j, _ := ReadJournal(k)
	if len(j.Restart) == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var names []string
	for _, id := range j.Restart {
		// Named only when Nova proves drainctl's stop: a forged journal names no other
		// tenant's stopped server, and one started meanwhile is not stopped by this failure.
		vm, err := r.e.nova.Server(ctx, id)
		if err != nil || vm.Phase != model.PhaseStopped {
			continue
		}
		if ours, _, err := r.stoppedAsJournaled(ctx, j, id); err == nil && ours {
			names = append(names, vm.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%d VM(s) drainctl stopped for restart-in-place stay stopped until the node's return completes: %s",
		len(names), strings.Join(names, ", "))
}

// rebuiltHere says whether the VM left the dead host by a rebuild of this recovery: a
// recovery's run, and Nova's newest migration record of the VM an evacuation from host, done.
// A VM moved any other way (its owner, a colleague) is not drainctl's to start.
func (r *runner) rebuiltHere(ctx context.Context, vm model.VM, host string) bool {
	if !traitsOf(r.plan.Op).rebuilds {
		return false
	}
	ms, err := r.e.nova.MigrationsOf(ctx, vm.ID)
	if err != nil || len(ms) == 0 {
		return false
	}
	newest := slices.MaxFunc(ms, func(a, b model.Migration) int { return cmp.Compare(a.ID, b.ID) })
	return newest.Type == model.MigrationTypeEvacuation && newest.SourceCompute == host &&
		(newest.Status == "done" || newest.Status == "completed")
}

// movedByThisRun reports whether this run moved the VM off its node (a scale-down's
// evacuation: the node does not return, so its stopped VMs start where they went).
func (r *runner) movedByThisRun(id string) bool {
	return r.ro.Policy.NodeRemoved &&
		slices.ContainsFunc(r.report.VMs, func(v VMReport) bool { return v.VMID == id && v.Result == MigCompleted })
}

// powerSeen says what Nova's instance actions show of a server's newest stop or start.
func powerSeen(a model.InstanceAction) string {
	if a.Action == "" {
		return "Nova records no stop"
	}
	return fmt.Sprintf("Nova's newest is a %s, request %s by user %s", a.Action, a.RequestID, cmp.Or(a.UserID, "unknown"))
}
