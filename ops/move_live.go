package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
)

// The live mover: Nova's live migration (os-migrateLive), followed by its migration record,
// its memory copied counted in bytes; a stalled one is escalated as the policy says, one
// past timeouts.migration aborted.

func requestLive(r *runner, ctx context.Context, run *vmRun, dest string) error {
	return r.e.nova.LiveMigrate(ctx, run.vm.ID, dest)
}

// pollLive reads one running live migration. It returns an outcome (completed, failed,
// aborted) once the migration has ended, "" while it runs.
func (r *runner) pollLive(ctx context.Context, run *vmRun) (MigState, string, error) {
	e := r.e
	if m, ok := r.endedNow(ctx, run); ok { // ended since the last poll: its record says how
		return r.liveEnded(ctx, run, m)
	}
	ms, err := e.nova.ServerMigrations(ctx, run.vm.ID)
	if err != nil {
		return "", "", err
	}
	if len(ms) > 0 {
		m := ms[0]
		run.mid = m.ID
		if m.DestCompute != "" {
			run.dest = m.DestCompute
		}
		r.moveState(run, MigStateOf(m.Status), "")
		if m.MemoryTotal != nil {
			run.total = *m.MemoryTotal
		}
		run.progress.Add(m, e.now())
		if m.Status == model.MigrationRunning {
			r.emitProgress(run)
			r.paceCopy(run)
			r.watchdog(ctx, run)
		}
		if d := e.cfg.Timeouts.Migration.D(); e.now().Sub(run.started) > d {
			if err := e.nova.AbortMigration(ctx, run.vm.ID, m.ID); err != nil {
				// Nova may have ended it meanwhile (then it refuses: 400); the VM is reported
				// failed either way, and a rerun follows whatever still runs.
				return MigFailed, fmt.Sprintf("timed out after %s (timeouts.migration); the abort failed: %v", d, err), nil
			}
			return MigFailed, fmt.Sprintf("timed out after %s (timeouts.migration); aborted", d), nil
		}
		return "", "", nil
	}
	// Not in the in-progress list: accepted, post-migrating, or finished. Only the
	// os-migrations record says which; an empty list is not success. Nova makes the record
	// after its 202: none yet (above the newest before the request) is a move not begun.
	recs, err := e.nova.MigrationsOf(ctx, run.vm.ID)
	if err != nil {
		return "", "", err
	}
	if recs = run.recordsOf(recs); len(recs) == 0 {
		if d := e.cfg.Timeouts.Migration.D(); e.now().Sub(run.started) > d {
			run.settled = true // Nova accepted it: its conductor may still start it
			return MigFailed, fmt.Sprintf(
				"Nova made no migration record of the live migration drainctl asked for within %s (timeouts.migration): follow "+
					"the server with openstack server show",
				d,
			), nil
		}
		return "", "", nil
	}
	return r.liveEnded(ctx, run, recs[0])
}

// endedNow finds the move's record among the cloud's recent moves, read once for every move
// in flight, when it shows the move ended: a poll then needs neither the server's migrations
// in progress nor its records. Only for a move whose records are told from older ones (after
// read before the request).
func (r *runner) endedNow(ctx context.Context, run *vmRun) (model.Migration, bool) {
	if !run.afterKnown {
		return model.Migration{}, false
	}
	if r.recent == nil {
		// A read begun within half a poll serves every move polled in it (ends are seen
		// at most that much later; the end's read of the server proves it).
		recent, err := r.e.nova.RecentMoves(ctx, r.e.o.Poll/2)
		if err != nil {
			return model.Migration{}, false // the server's own reads say
		}
		r.recent = recent
	}
	for _, m := range r.recent { // newest first
		if m.InstanceID == run.vm.ID && m.ID > run.after {
			return m, m.Status.Final()
		}
	}
	return model.Migration{}, false
}

// liveEnded reads the move's newest record: an outcome once it has ended, "" while it goes on
// (the server still shows it moving).
func (r *runner) liveEnded(ctx context.Context, run *vmRun, m model.Migration) (MigState, string, error) {
	e := r.e
	run.mid = m.ID // a move ended before a poll saw it in progress is named by its record too
	if m.DestCompute != "" {
		run.dest = m.DestCompute
	}
	switch m.Status {
	case model.MigrationCompleted:
		vm, err := e.nova.Server(ctx, run.vm.ID)
		if err != nil {
			return "", "", err
		}
		if vm.Host == run.vm.Host || vm.Phase == model.PhaseMovingLive || vm.Busy() {
			return "", "", nil // the record leads the server by a moment
		}
		run.dest = vm.Host
		return MigCompleted, "", nil
	case model.MigrationFailed:
		return MigFailed, r.actionError(ctx, run, "migration failed"), nil
	case model.MigrationCancelled, model.MigrationReverted:
		return MigAborted, "aborted", nil
	}
	r.moveState(run, MigStateOf(m.Status), "")
	return "", "", nil
}

// paceCopy tells the pace how a live move copies: the time a GiB takes at its copy rate over
// the last 10 s, and whether its remaining falls (nothing until it has two samples).
func (r *runner) paceCopy(run *vmRun) {
	if rate := run.progress.CopyRate(); rate > 0 {
		r.e.pace.observe(paceMoves, time.Duration(float64(time.Second)*(1<<30)/rate), run.progress.ConvergeRate() <= 0)
	}
}

// refusedLive: Nova says the VM cannot move live (its pre-check, or its state: 409); a 400
// for the request itself (a host not found) says nothing of a cold move.
func refusedLive(err error) bool { return errors.Is(err, ErrCannotMoveLive) || statusOf(err) == 409 }

// watchdog escalates a stalled migration as the policy says.
func (r *runner) watchdog(ctx context.Context, run *vmRun) {
	e := r.e
	if run.escalated || !run.progress.Stalled(e.o.StallAfter) {
		return
	}
	run.escalated = true
	switch e.o.OnStall {
	case StallForceComplete:
		if err := e.nova.ForceComplete(ctx, run.vm.ID, run.mid); err != nil {
			// Not tried again: the migration goes on as it is, and the timeout still bounds it.
			r.emitVM(run, MigStalled, fmt.Sprintf("stalled for %s; force-complete refused: %v", e.o.StallAfter, err))
			return
		}
		run.escalation, run.escalatedAt = "force-completing", e.now()
		r.emitVM(run, MigForced, fmt.Sprintf("stalled for %s: force-completing", e.o.StallAfter))
	case StallAbort:
		if err := e.nova.AbortMigration(ctx, run.vm.ID, run.mid); err != nil {
			r.emitVM(run, MigStalled, fmt.Sprintf("stalled for %s; abort refused: %v", e.o.StallAfter, err))
			return
		}
		run.escalation, run.escalatedAt = "aborting", e.now()
		r.emitVM(run, MigStalled, fmt.Sprintf("stalled for %s: aborting", e.o.StallAfter))
	default:
		r.emitVM(run, MigStalled, fmt.Sprintf("no progress for %s; waiting (policy)", e.o.StallAfter))
	}
}

// abortSettleWithin bounds the wait for Nova to end the copies it was asked to abort: its
// 202 is only a request, and a real guest's copy ran on 23 s after it (the libvirt world).
const abortSettleWithin = 3 * time.Minute

// abortLive cancels the live migrations leaving the node's host and waits until Nova has
// ended each one: an abort is done when its record says so (cancelled, or failed), and a
// copy that completed before the abort took is said as such, its VM on the destination.
func (r *runner) abortLive(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	ms, err := e.nova.InProgressFrom(ctx, p.Host)
	if err != nil {
		return "", err
	}
	var asked []model.Migration
	ended := 0
	var errs []error
	for _, m := range ms {
		if err := e.nova.AbortMigration(ctx, m.InstanceID, m.ID); err != nil {
			// Another actor (the holder that was asked to stop, an operator) may have ended
			// it between our read and our request (Nova refuses: 400), or it is ending by
			// itself (Nova clears the server's task before it marks the record completed, and
			// refuses in between: 409). Follow its record a moment.
			if e.endedAfterRefusal(ctx, m) {
				ended++
				continue
			}
			errs = append(errs, err)
			continue
		}
		asked = append(asked, m)
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	aborted, completed, running := r.settleAborts(ctx, asked)
	said := fmt.Sprintf("%d migration(s) aborted", aborted)
	if ended > 0 {
		said += fmt.Sprintf(", %d ended meanwhile", ended)
	}
	if len(completed) > 0 {
		said += fmt.Sprintf(", %d completed before the abort took (on their destination): %s",
			len(completed), strings.Join(completed, ", "))
	}
	if len(running) > 0 {
		return "", fmt.Errorf("%s; Nova has not ended %d after %s (asked to abort): %s; follow them with openstack server migration list",
			said, len(running), abortSettleWithin, strings.Join(running, ", "))
	}
	return said, nil
}

// settleAborts waits until Nova has ended each migration it was asked to abort, and says each
// end: aborted (cancelled or failed: the VM on its source), or completed (on its destination).
func (r *runner) settleAborts(ctx context.Context, asked []model.Migration) (aborted int, completed, running []string) {
	e := r.e
	name := func(m model.Migration) string {
		if vm, err := e.nova.Server(ctx, m.InstanceID); err == nil {
			return vm.Name
		}
		return m.InstanceID
	}
	open := asked
	end := e.now().Add(abortSettleWithin)
	for len(open) > 0 {
		// One read of the host's moves a poll; only one no longer under way has its records read.
		under := map[int64]bool{}
		if ms, err := e.nova.InProgressFrom(ctx, r.plan.Host); err == nil {
			for _, m := range ms {
				under[m.ID] = true
			}
		} else {
			for _, m := range open {
				under[m.ID] = true // unknown: asked again next poll
			}
		}
		var still []model.Migration
		for _, m := range open {
			if under[m.ID] {
				still = append(still, m)
				continue
			}
			recs, err := e.nova.MigrationsOf(ctx, m.InstanceID)
			rec, found := m, false
			for _, x := range recs {
				if x.ID == m.ID {
					rec, found = x, true
				}
			}
			if err != nil || !found || !rec.Status.Final() {
				still = append(still, m)
				continue
			}
			ev := MigrationEvent{VMID: m.InstanceID, VM: name(m), State: MigAborted, Source: m.SourceCompute, Dest: m.DestCompute}
			if rec.Status == model.MigrationCompleted {
				ev.State, ev.Message = MigCompleted, "completed before the abort took: on "+m.DestCompute
				completed = append(completed, ev.VM)
			} else {
				aborted++
			}
			r.emit(NewMigrationEvent(e.now(), r.plan.Node, ev))
		}
		open = still
		if len(open) == 0 || !e.now().Before(end) || !poll.Sleep(ctx, e.o.Poll) {
			break
		}
	}
	for _, m := range open {
		running = append(running, name(m))
	}
	return aborted, completed, running
}

// abortRefusedWithin bounds how long an abort Nova refused follows the record for its end:
// the moment between a completing copy's cleared task and its completed record (seconds
// on a loaded Nova).
const abortRefusedWithin = 30 * time.Second

// endedAfterRefusal follows a migration whose abort Nova refused until its record says it
// ended (true) or abortRefusedWithin passed with it still in progress (false: the refusal
// stands).
func (e *Engine) endedAfterRefusal(ctx context.Context, m model.Migration) bool {
	deadline := e.now().Add(abortRefusedWithin)
	for e.stillInProgress(ctx, m) {
		if !e.now().Before(deadline) || !poll.Sleep(ctx, e.o.Poll) {
			return false
		}
	}
	return true
}

// stillInProgress reads the server's migrations again: false when m is no longer among the
// ones in progress (or the read fails in a way that says the server is gone).
func (e *Engine) stillInProgress(ctx context.Context, m model.Migration) bool {
	ms, err := e.nova.ServerMigrations(ctx, m.InstanceID)
	if err != nil {
		return true // unknown: keep the abort's error
	}
	for _, x := range ms {
		if x.ID == m.ID && x.InProgress() {
			return true
		}
	}
	return false
}
