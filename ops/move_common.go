package ops

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/model"
)

// What every mover row and the run share to say a move: its events, its report, a retry.

// moveState records the move's new state once, as an event.
func (r *runner) moveState(run *vmRun, st MigState, msg string) {
	if st != run.state {
		run.state = st
		r.emitVM(run, st, msg)
	}
}

// moveTask records the task Nova shows on a moving VM as the move's state once: Nova's own word
// (fallback when it shows none), and its task for the views to place it.
func (r *runner) moveTask(run *vmRun, vm model.VM, fallback MigState) {
	st := MigState(cmp.Or(vm.TaskState, string(fallback)))
	if st != run.state {
		run.state = st
		r.emitVMTask(run, st, "", vm.Task)
	}
}

// actionError is why Nova's move of the VM failed (its instance action's error), or
// fallback when Nova does not say; it notes on run whether Nova said it cannot move live.
func (r *runner) actionError(ctx context.Context, run *vmRun, fallback string) string {
	f, err := r.e.nova.LastActionError(ctx, run.vm.ID, run.method)
	if err != nil || f.Message == "" {
		return fallback
	}
	// Only a method Nova can refuse outright (live) falls back on it.
	run.refused, run.noValidHost = f.CannotLive && moverOf(run.method).refused != nil, f.NoValidHost
	return f.Message
}

// unstoppableOverdue fails a move Nova cannot stop (a cold move, a rebuild) once it has run
// past timeouts.migration; "" while it is within.
func (r *runner) unstoppableOverdue(run *vmRun, what string) (MigState, string, error) {
	if d := r.e.cfg.Timeouts.Migration.D(); r.e.now().Sub(run.started) > d {
		run.settled = true // still Nova's: asking again would race it
		return MigFailed, fmt.Sprintf(
			"%s after %s (timeouts.migration); Nova cannot stop it: follow it with openstack server show",
			what,
			d,
		), nil
	}
	return "", "", nil
}

// retry puts a failed VM back in the queue if it has attempts left.
func (r *runner) retry(run *vmRun, msg string, pending *[]*vmRun) bool {
	// An attempt Nova's scheduler turned down on a host drainctl picked moved nothing: it does
	// not count against the attempts (the host is never picked again, so it is bounded).
	turnedDown := run.picked && run.noValidHost
	if run.settled || (run.attempt >= r.e.o.Attempts && !turnedDown) || r.noValidHostAsked(run) {
		return false
	}
	if run.picked {
		if run.turnedDown == nil {
			run.turnedDown = map[string]bool{}
		}
		run.turnedDown[run.dest] = true
	}
	run.notBefore = r.e.now().Add(r.e.o.Poll)
	r.emitVM(run, MigRetrying, msg)
	*pending = append(*pending, run)
	return true
}

func (r *runner) emitVM(run *vmRun, state MigState, msg string) {
	r.emitVMTask(run, state, msg, model.TaskNone)
}

func (r *runner) emitVMTask(run *vmRun, state MigState, msg string, task model.VMTask) {
	run.lastSaid = msg
	r.emit(NewMigrationEvent(r.e.now(), r.plan.Node, MigrationEvent{VM: run.vm.Name, VMID: run.vm.ID, Method: run.method, State: state,
		Task: task, Source: run.vm.Host, Dest: run.dest, Attempt: run.attempt, Message: msg, Total: run.total}))
}

func (r *runner) emitProgress(run *vmRun) {
	s, ok := run.progress.Last()
	if !ok {
		return
	}
	ev := MigrationEvent{VM: run.vm.Name, VMID: run.vm.ID, Method: run.method, State: MigRunning,
		Source: run.vm.Host, Dest: run.dest, Attempt: run.attempt, Total: s.Total, Processed: s.Processed,
		Remaining: s.Remaining, Rate: run.progress.CopyRate(), Converge: run.progress.ConvergeRate(), ETA: run.progress.ETA(),
		Stalled: run.progress.Stalled(r.e.o.StallAfter)}
	if run.escalation != "" { // asked of Nova, not yet done: the row says that, not an ETA
		ago := r.e.now().Sub(run.escalatedAt).Round(time.Second)
		ev.Message = fmt.Sprintf("%s: asked of Nova %s ago, copying until Nova ends it", run.escalation, ago)
		if run.escalation == "aborting" {
			ev.ETA = -1
		}
	}
	r.emit(NewMigrationEvent(r.e.now(), r.plan.Node, ev))
}

// vmReport is the VM's account: Bytes are every attempt's bytes copied, in total.
func (r *runner) vmReport(run *vmRun, result MigState, msg string, override ...model.Override) VMReport {
	bytes := run.copied + run.attemptBytes(result == MigCompleted)
	if !moverOf(run.method).Copies {
		bytes = 0 // a cold move copies disks, a rebuild nothing: Nova counts no bytes
	}
	rep := VMReport{VM: run.vm.Name, VMID: run.vm.ID, Method: run.method, Result: result, Source: run.vm.Host, Dest: run.dest,
		Attempts: run.attempt, Bytes: bytes, Started: run.started, Duration: r.e.now().Sub(run.started), Message: msg, MigrationID: run.mid,
		Told: run.told, Lead: run.ownerLead(), NotTold: run.notTold, RequestID: run.requestID}
	if len(override) > 0 {
		rep.Override = override[0]
	}
	return rep
}

// notMoved is a VM the run could not move, and the override that would move it ("": none).
func notMoved(vm model.VM, msg string, o model.Override) model.Reason {
	return model.Reason{Code: model.NotMoved, Severity: model.Blocks, Object: vm.Name, ObjectID: vm.ID, Message: msg, Override: o}
}
