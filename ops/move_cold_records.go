package ops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
)

// Cold migration, as Nova does it (shared/notes/nova-api.md, "Stopped VMs and dead hosts"):
// the migrate action; the server goes RESIZE (resize_prep on the source, then resize_migrated
// with its host already the destination) and waits in VERIFY_RESIZE until confirmResize
// (its source copy goes) or revertResize (it goes back). A stopped VM stays stopped; a
// running one is stopped and started again. The engine follows a cold move by its server,
// since os-migrations says "finished" for a move that still waits for its confirm.
//
// Which cold moves are drainctl's is written in the node's journal before each request, so
// that a rerun after a kill -9 confirms a VM it finds in VERIFY_RESIZE instead of moving it
// again, and never confirms someone else's.

// follow takes over a move already under way (found at the start of the run, or started
// by someone else meanwhile): a live migration, or a cold one (RESIZE, VERIFY_RESIZE,
// REVERT_RESIZE), which drainctl confirms only when ours says it asked for it.
func (r *runner) follow(_ context.Context, run *vmRun, _ *model.Reason, q *moveQueue) *model.Reason {
	run.method = model.MoveLive
	switch {
	case traitsOf(r.plan.Op).rebuilds:
		run.method = model.MoveRebuild
	case run.vm.Phase.InColdMove():
		run.method, run.ours = model.MoveCold, len(q.ours[run.vm.ID]) > 0
	}
	run.adopted, run.attempt, run.started, run.state = true, max(run.attempt, 1), r.e.now(), MigAdopted
	q.running[run.vm.ID] = run
	select { // already running in Nova: counted if there is room, followed either way
	case r.e.migSlots <- struct{}{}:
		run.slot = true
	default:
	}
	return nil
}

// adoptCold finds the cold moves from the node's host whose server already reports the
// destination (from resize_migrated on), so the host's server list no longer shows them:
// a rerun follows them to their end (and confirms its own) instead of forgetting them.
func (r *runner) adoptCold(ctx context.Context, listed []model.VM, q *moveQueue) error {
	p := r.plan
	// The list names the moves to follow; each VM is read afresh before it is followed (and a
	// move begun since is one of the node's VMs, read before its request): a read of the moves
	// begun within half a poll serves, as a poll's does.
	ms, err := r.e.nova.ColdFrom(ctx, p.Host, r.e.o.Poll/2)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, vm := range listed {
		seen[vm.ID] = true
	}
	for _, m := range ms {
		if seen[m.InstanceID] || (traitsOf(p.Op).oneVM && m.InstanceID != p.VMs[0].ID) {
			continue
		}
		seen[m.InstanceID] = true
		vm, err := r.e.nova.Server(ctx, m.InstanceID)
		if err != nil {
			return err
		}
		if vm.Host == p.Host {
			continue // reverted meanwhile
		}
		dest := vm.Host
		vm.Host = p.Host // the source: a move is done when the server has left it
		run := &vmRun{vm: vm, dest: dest}
		r.follow(ctx, run, nil, q)
		msg := "a cold migration from this host, found under way: followed"
		if vm.Phase == model.PhaseAwaitingConfirm && run.ours {
			msg = "moved before the interruption, waiting for its confirm: confirmed now"
		}
		r.emitVM(run, MigAdopted, msg)
	}
	return nil
}

// coldInstead moves a running VM cold after Nova said it cannot move live, when the operator
// allowed it (--cold-migrate-running); false leaves the failure as it is, with the override
// that would move it cold (a running VM's).
func (r *runner) coldInstead(run *vmRun, msg string, pending *[]*vmRun) (bool, model.Override) {
	if run.vm.Phase != model.PhaseRunning {
		return false, ""
	}
	if !r.ro.Policy.ColdMigrateRunning {
		return false, model.OverrideColdMigrateRunning // a cold move, with downtime, would move it
	}
	run.method, run.notBefore = model.MoveCold, r.e.now()
	r.emitVM(run, MigRetrying, "cannot move live ("+msg+"): moving it cold, with downtime, as the cold-move override allows")
	*pending = append([]*vmRun{run}, *pending...)
	return true, ""
}

// coldOurs are the cold moves the node's journal (the cache's) and this run say drainctl
// asked for.
func (r *runner) coldOurs() coldRecords {
	return r.coldOursIn(r.cachedNode())
}

// cachedNode is the node as the cache has it (a zero node when gone).
func (r *runner) cachedNode() model.KubeNode {
	k, _ := r.e.kube.Node(r.plan.Node)
	return k
}

// coldOursFresh is coldOurs with the journal read from the API server: an abort or a rerun
// acts on what another process wrote a moment ago, which the cache may not show yet (under
// load an abort saw no named cold move and reverted nothing).
func (r *runner) coldOursFresh(ctx context.Context) (coldRecords, error) {
	k, _, err := r.e.kube.NodeFresh(ctx, r.plan.Node)
	if err != nil {
		return nil, err
	}
	return r.coldOursIn(k), nil
}

func (r *runner) coldOursIn(k model.KubeNode) coldRecords {
	out := coldRecords{}
	r.mu.Lock()
	for _, c := range r.coldOursLocked(k) {
		out[c.VM] = append(out[c.VM], c)
	}
	r.mu.Unlock()
	return out
}

// coldOursLocked lists this run's cold moves, then those of the node's journal that this
// run does not hold (by VM and request time); r.mu held.
func (r *runner) coldOursLocked(k model.KubeNode) []ColdMove {
	out := append([]ColdMove(nil), r.journaled.cold...)
	if j, ok := ReadJournal(k); ok {
		for _, c := range j.ColdMoves {
			if !slices.ContainsFunc(out, func(o ColdMove) bool { return o.VM == c.VM && o.Requested.Equal(c.Requested) }) {
				out = append(out, c)
			}
		}
	}
	return out
}

// ownCold reads the VM's migrations once: it names drainctl's cold moves of the VM whose
// records have appeared since (journaled at once), and says whether the newest cold
// migration is one drainctl asked for (mine) and whether every cold move drainctl asked for
// of the VM is named (named: false while Nova has not made a record yet). The journal is a
// claim, os-migrations the world: a colleague may have moved the VM again since.
//
// prove (a confirm's or a leaving's read) proves a mine against Nova's instance actions too
// (coldAsJournaled); why then says what Nova shows instead.
func (r *runner) ownCold(ctx context.Context, vmID string, prove bool) (mine, named bool, why string, err error) {
	ms, err := r.e.nova.MigrationsOf(ctx, vmID)
	if err != nil {
		return false, false, "", err
	}
	named = r.nameCold(vmID, ms)
	for _, m := range ms { // newest first
		if m.Type != model.MigrationTypeCold && m.Type != model.MigrationTypeResize {
			continue
		}
		if !prove {
			return r.coldOurs().proves(m), named, "", nil
		}
		mine, why, err = r.coldAsJournaled(ctx, r.coldOurs(), m)
		return mine, named, why, err
	}
	return false, named, "os-migrations shows none", nil
}

// coldAsJournaled proves the journal's claim that drainctl asked for the cold move m (its
// UUID named in the journal, which the node's kubelet can write): the server's newest cold
// move or resize in Nova's instance actions is the request journaled with it. why says what
// Nova shows instead.
func (r *runner) coldAsJournaled(ctx context.Context, ours coldRecords, m model.Migration) (bool, string, error) {
	i := slices.IndexFunc(ours[m.InstanceID], func(c ColdMove) bool { return c.Proves(m) })
	if i < 0 {
		return false, "os-migrations names another", nil
	}
	asked := ours[m.InstanceID][i].Request
	if asked == "" {
		return false, "drainctl's journal keeps no request ID of it to prove it by", nil
	}
	last, err := r.e.nova.LastColdAction(ctx, m.InstanceID)
	if err != nil {
		return false, "", err
	}
	if last.RequestID != asked {
		return false, fmt.Sprintf("Nova's newest cold move of it is request %s by user %s, not %s, the one drainctl journaled",
			cmp.Or(last.RequestID, "(none)"), cmp.Or(last.UserID, "unknown"), asked), nil
	}
	return true, "", nil
}

// journalColdRequest journals Nova's request ID of the VM's cold move this run just asked
// for: the proof its confirm or its revert asks of Nova.
func (r *runner) journalColdRequest(vmID, request string) {
	if request == "" {
		return
	}
	r.mu.Lock()
	for i := len(r.journaled.cold) - 1; i >= 0; i-- {
		if r.journaled.cold[i].VM == vmID {
			r.journaled.cold[i].Request = request
			break
		}
	}
	r.mu.Unlock()
	r.journalAgain()
}

// recordCold writes in the node's journal, before the request, that drainctl is about to
// cold-migrate the VM, with the newest migration ID Nova had for it just before (read by the
// check "its moves known"): the record of the request is the first one above it. Without
// that read the request is not made: a move drainctl cannot name later is one it could
// never confirm.
func (r *runner) recordCold(run *vmRun) error {
	if !run.afterKnown {
		return fmt.Errorf(
			"%s is not moved cold: its migration records could not be read before the request, so the move could never "+
				"be proven drainctl's",
			run.vm.Name,
		)
	}
	after := run.after
	r.mu.Lock()
	r.journaled.cold = append(r.journaled.cold, ColdMove{VM: run.vm.ID, Requested: r.e.now(), After: &after, Source: r.plan.Host})
	r.mu.Unlock()
	r.journalAgain()
	return nil
}

// nameCold names, from one read of a VM's migrations (newest first), the cold moves
// drainctl asked for of it whose records are there now, and journals the names: newest
// request first, each the oldest record that Names it and no other request has. It reports
// whether the VM's newest request is named.
func (r *runner) nameCold(vm string, ms []model.Migration) bool {
	changed := false
	r.mu.Lock()
	ours := r.coldOursLocked(r.cachedNode()) // this run's and the journal's (a rerun names a killed run's)
	slices.SortFunc(ours, func(a, b ColdMove) int { return b.Requested.Compare(a.Requested) })
	for i, c := range ours {
		if c.VM != vm || c.Migration != "" {
			continue
		}
		for k := len(ms) - 1; k >= 0; k-- { // oldest first
			m := ms[k]
			if !c.Names(m) || slices.ContainsFunc(ours, func(o ColdMove) bool { return o.Migration == m.UUID }) {
				continue
			}
			c.Migration, ours[i], changed = m.UUID, c, true
			same := func(o ColdMove) bool { return o.VM == c.VM && o.Requested.Equal(c.Requested) }
			if at := slices.IndexFunc(r.journaled.cold, same); at >= 0 {
				r.journaled.cold[at] = c
			} else {
				r.journaled.cold = append(r.journaled.cold, c) // the journal's entry, named: written back by journalAgain
			}
			break
		}
	}
	r.mu.Unlock()
	if changed {
		r.journalAgain()
	}
	return !r.unnamed(vm)
}

// unnamed reports whether drainctl's newest cold move of the VM still waits for its
// record. (An older unnamed one was refused, or superseded; one journaled by an older
// drainctl, without After, can never be named and does not wait.)
func (r *runner) unnamed(vm string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var newest *ColdMove
	for _, c := range r.coldOursLocked(r.cachedNode()) {
		if c.VM == vm && (newest == nil || c.Requested.After(newest.Requested)) {
			newest = &c
		}
	}
	return newest != nil && newest.Migration == "" && newest.After != nil
}

// journalAgain writes the journal in the phase it is in.
func (r *runner) journalAgain() {
	phase := r.currentPhase()
	if phase == "" {
		phase = PhaseMigrating
	}
	r.journal(phase, "")
}

// unprovenCold is a VM waiting in VERIFY_RESIZE that the journal says drainctl moved, and
// why nothing proves it.
type unprovenCold struct {
	vm  model.VM
	why string
}

// revertColdSaid is revertCold as an abort says it.
func (r *runner) revertColdSaid(ctx context.Context) (string, error) {
	reverted, left, unproven, err := r.revertCold(ctx)
	if err != nil {
		return "", err
	}
	var said []string
	if reverted > 0 {
		said = append(said, fmt.Sprintf("%d cold migration(s) reverted", reverted))
	}
	for _, u := range unproven {
		said = append(said, fmt.Sprintf("%s left in VERIFY_RESIZE: %s, so nothing proves the move waiting is drainctl's "+
			"(openstack server migration list --server %s; openstack server migrate revert %s)", u.vm.Name, u.why, u.vm.ID, u.vm.ID))
	}
	if len(left) > 0 {
		said = append(
			said,
			fmt.Sprintf(
				"cold migration(s) of %s still under way (Nova cannot stop them): run abort again to revert them once they "+
					"wait for their confirm",
				strings.Join(left, ", "),
			),
		)
	}
	return strings.Join(said, "; "), nil
}

// revertCold reverts the node's cold moves that wait for their confirm (abort, rollback):
// the operation is undone, and a VM not yet confirmed goes back as it was. A move still
// under way cannot be stopped in Nova: it is waited for (bounded), then reverted. A
// confirmed move is never moved back. One drainctl asked for but never named, or named but
// not proven by Nova's instance actions (coldAsJournaled), is not reverted: unproven, for the
// abort to say.
func (r *runner) revertCold(ctx context.Context) (reverted int, left []string, unproven []unprovenCold, err error) {
	e, p := r.e, r.plan
	deadline := e.now().Add(e.o.CancelWait)
	ours, err := r.coldOursFresh(ctx)
	if err != nil {
		return 0, nil, nil, err
	}
	for {
		ms, err := e.nova.ColdFrom(ctx, p.Host, 0) // it reverts: read after the call
		if err != nil {
			return reverted, nil, nil, err
		}
		left, unproven = left[:0], unproven[:0]
		for _, m := range ms {
			proven := ours.proves(m)
			if !proven && !ours.unnamed(m.InstanceID) {
				continue // someone else's (by os-migrations, not only the journal): theirs to confirm or revert
			}
			vm, err := e.nova.Server(ctx, m.InstanceID)
			if err != nil {
				return reverted, nil, nil, err
			}
			why := "drainctl asked for its cold migration but Nova's record of it was never read"
			if proven && vm.Phase == model.PhaseAwaitingConfirm {
				if proven, why, err = r.coldAsJournaled(ctx, ours, m); err != nil {
					return reverted, nil, nil, err
				}
			}
			switch {
			case !proven:
				if vm.Phase == model.PhaseAwaitingConfirm {
					unproven = append(unproven, unprovenCold{vm, why})
				}
			case vm.Phase == model.PhaseAwaitingConfirm:
				if err := e.nova.RevertResize(ctx, vm.ID); err != nil {
					return reverted, nil, nil, err
				}
				reverted++
				r.emit(NewMigrationEvent(e.now(), p.Node, MigrationEvent{VMID: vm.ID, VM: vm.Name, Method: model.MoveCold,
					State: MigReverted, Source: p.Host, Dest: vm.Host, Message: "back on " + p.Host}))
			case m.Status != model.MigrationReverting && m.Status != model.MigrationConfirming:
				left = append(left, vm.Name)
			}
		}
		if len(left) == 0 || e.now().After(deadline) {
			return reverted, left, unproven, nil
		}
		if !poll.Sleep(ctx, e.o.Poll) {
			return reverted, left, unproven, ctx.Err()
		}
	}
}
