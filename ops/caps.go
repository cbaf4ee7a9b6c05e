package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
)

// The migration caps hold across every drainctl process (a daemon per node, a colleague's
// terminal): before a migration starts, the moves Nova itself lists as loading a destination
// (live migrations in progress, cold ones moving, rebuilds of dead hosts' VMs) are counted,
// under a cluster-wide lock so that two processes cannot both see the last free place.
//
// The lock is a lease, and a lease has one holder a process: the runs of one process share
// its hold (startHold). A run joins a hold while it is young, counts with its own read of
// Nova (begun after it asked) and the process's own moves (each reserved as it is counted, so
// two runs of the process never both take the last place), and leaves once its move is asked
// for; the last run to leave gives the lease back once Nova lists every move asked for under
// the hold. Another process so never counts without a move this one made. A hold takes no
// run after startJoinFor: the other processes get their turn.

// migrationLockNode names the start lock's lease (drainctl-migrations.lock), beside the
// nodes' leases.
const migrationLockNode = "migrations.lock"

// startJoinFor is how long after the lease was taken a run of the process may still join
// the hold; later runs wait for the lease to be given back and take it again.
const startJoinFor = 5 * time.Second

// lockHeldAtMost bounds one hold of the lock: its runs join for startJoinFor, then wait at
// most 12 s for Nova to list their moves (awaitListed). A lock held longer since it was
// acquired is no count under way but a holder stuck or forging renewals: it is said with its
// holder and taken over. A dead host's rebuild, whose VMs are down while it waits, takes over
// sooner: just past what a hold can last.
const (
	lockHeldAtMost        = time.Minute
	lockHeldAtMostRebuild = startJoinFor + 15*time.Second
)

// cluster is what clusterRoom counted: the others' moves by destination (for
// migrations_per_destination) and everyone's by source (for migrations_per_source across
// runs: a campaign's returns take VMs off many sources at once, each return a run of its
// own). unlock must be called once the request is made (or given up): after a request that
// succeeded it waits (briefly) until Nova lists the new migration, so the next process counts it.
type cluster struct {
	toDest     map[string]int
	fromSource map[string]int
	newest     int64 // the newest migration record's ID in the cloud at the count (0: not known)
	// moving are the VMs (IDs) counted as moving: every actor's that Nova lists, and this
	// process's own (for the VM groups' budgets).
	moving map[string]bool
	unlock func(requested bool)
}

// clusterRoom joins the start lock and counts what is in flight: this engine's own migrations
// (reserved ones too), and every other move Nova lists as loading a destination. ok when one
// more fits under migrations_per_cluster and the VM's source is under migrations_per_source:
// the VM is then reserved, counted by the process's other runs until unlock.
func (r *runner) clusterRoom(ctx context.Context, vm model.VM, rebuild bool) (room cluster, why string) {
	e := r.e
	bound := lockHeldAtMost
	if rebuild {
		bound = lockHeldAtMostRebuild
	}
	held, took := e.joinStart(ctx, bound)
	if took != nil {
		r.nodeChanged(fmt.Sprintf("the migrations lock was held by %s since %s, past its bound of %s: taken over", took.Holder,
			took.Since.UTC().Format(time.RFC3339), bound))
	}
	if held != nil {
		r.sayLockHeld(held)
		// another process is starting one: try again at the next poll
		return cluster{}, "the migrations lock is held by " + held.Holder + " (another drainctl counting its moves)"
	}
	var once sync.Once
	var newest int64
	unlock := func(requested bool) { once.Do(func() { r.unlockStart(ctx, vm.ID, newest, requested) }) }
	// Cold moves count as live ones do while they move (not once they wait for a confirm),
	// and so do rebuilds of dead hosts' VMs: they load the destinations alike.
	inNova, newest, err := e.nova.MovingFrom(ctx, "", 0)
	if err != nil {
		unlock(false)
		return cluster{}, "the moves under way could not be read from Nova: " + err.Error()
	}
	c := cluster{toDest: map[string]int{}, fromSource: map[string]int{}, newest: newest, moving: map[string]bool{}, unlock: unlock}
	e.destMu.Lock()
	total := len(e.mine)
	for id, source := range e.mine {
		c.fromSource[source]++
		c.moving[id] = true
	}
	for _, m := range inNova {
		if _, ours := e.mine[m.InstanceID]; ours {
			continue // counted already
		}
		c.moving[m.InstanceID] = true
		total++
		c.fromSource[m.SourceCompute]++
		if m.DestCompute != "" {
			c.toDest[m.DestCompute]++
		}
	}
	ok := total < e.cfg.Concurrency.MigrationsPerCluster && c.fromSource[vm.Host] < e.cfg.Concurrency.MigrationsPerSource
	paced := ok && !e.pace.room(total)
	ok = ok && !paced
	if ok {
		e.mine[vm.ID] = vm.Host // reserved: the process's other runs count it from now
	}
	e.destMu.Unlock()
	switch {
	case paced:
		r.sayPace()
		why = "the pace holds new moves: the cloud answers slowly (the header says the pace)"
	case total >= e.cfg.Concurrency.MigrationsPerCluster:
		why = fmt.Sprintf("the cluster's moves under way are at their cap, every process's counted "+
			"(concurrency.migrations_per_cluster = %d)", e.cfg.Concurrency.MigrationsPerCluster)
	case !ok:
		why = fmt.Sprintf("%s's moves under way are at their cap, every process's counted "+
			"(concurrency.migrations_per_source = %d)", vm.Host, e.cfg.Concurrency.MigrationsPerSource)
	}
	if !ok {
		unlock(false)
		return cluster{}, why
	}
	return c, ""
}

// sayPace tells the run's view that the pace holds its moves, once a change of the pace.
func (r *runner) sayPace() {
	st := r.e.pace.state()
	if st.Changed.IsZero() || st.Changed.Equal(r.said.pace) {
		return
	}
	r.said.pace = st.Changed
	r.nodeChanged("moves held by the pace: " + st.String())
}

// joinStart joins the process's hold of the start lock, taking the lease when the process
// holds none; nil when joined, else why not (another process holds it; ctx ended). Every run
// that joins renews the lease, so a hold outlives none of its runs' waits. A hold older than
// bound is taken over.
func (e *Engine) joinStart(ctx context.Context, bound time.Duration) (held, took *LeaseHeldError) {
	h := &e.start
	h.mu.Lock()
	for h.releasing || (h.runs > 0 && e.now().Sub(h.since) >= startJoinFor) {
		done := h.released
		h.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return &LeaseHeldError{Node: migrationLockNode, Holder: "(stopped)"}, nil
		}
		h.mu.Lock()
	}
	if h.runs == 0 {
		h.since, h.released = e.now(), make(chan struct{})
	}
	h.runs++
	h.mu.Unlock()
	err := e.kube.AcquireLease(ctx, migrationLockNode, e.o.Holder, 15*time.Second, e.mayReplace)
	if errors.As(err, &held) && !held.Since.IsZero() && time.Since(held.Since) > bound {
		stuck := held.Holder
		err = e.kube.AcquireLease(ctx, migrationLockNode, e.o.Holder, 15*time.Second, func(h string) bool { return h == stuck })
		if err == nil {
			took = held
		}
	}
	if err != nil {
		e.leaveStart(ctx)
		if !errors.As(err, &held) {
			held = &LeaseHeldError{Node: migrationLockNode, Holder: "(unreadable: " + err.Error() + ")"}
		}
		return held, nil
	}
	return nil, took
}

// sayLockHeld says, once a holder, who holds the migrations lock the run's moves wait on.
func (r *runner) sayLockHeld(held *LeaseHeldError) {
	if held.Holder == "(stopped)" || r.said.lock == held.Holder {
		return
	}
	r.said.lock = held.Holder
	r.nodeChanged("moves wait for the migrations lock, held by " + held.Holder + " (another drainctl counting its moves)")
}

// leaveStart leaves the hold; the last run to leave gives the lease back (when it is ours).
func (e *Engine) leaveStart(ctx context.Context) {
	h := &e.start
	h.mu.Lock()
	h.runs--
	last := h.runs == 0
	var asked map[string]int64
	if last {
		h.releasing, asked, h.asked = true, h.asked, nil
	}
	h.mu.Unlock()
	if !last {
		return
	}
	e.awaitListed(context.WithoutCancel(ctx), asked)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = e.kube.ReleaseLease(rctx, migrationLockNode, e.o.Holder) // only ours: a lease another holds stays
	h.mu.Lock()
	h.releasing = false
	close(h.released)
	h.mu.Unlock()
}

// unlockStart ends a start: a VM not asked for is no longer reserved; one asked for is
// counted by the hold until Nova lists its move (a record of the VM above newest, the newest
// when the caps were counted). Then the run leaves the start lock's hold.
func (r *runner) unlockStart(ctx context.Context, vmID string, newest int64, requested bool) {
	e := r.e
	if requested {
		h := &e.start
		h.mu.Lock()
		if h.asked == nil {
			h.asked = map[string]int64{}
		}
		h.asked[vmID] = newest
		h.mu.Unlock()
	} else {
		e.destMu.Lock()
		delete(e.mine, vmID)
		e.destMu.Unlock()
	}
	e.leaveStart(ctx)
}

// awaitListed waits (briefly) until Nova lists the move of every VM asked for (a loaded Nova
// may take seconds): a lease given back earlier, another process would count fewer moves
// than there are. Bounded under the lock's own 15 s lease, renewed when the last run joined;
// one read of the moves a round serves every VM.
func (e *Engine) awaitListed(ctx context.Context, asked map[string]int64) {
	deadline := e.now().Add(12 * time.Second)
	for len(asked) > 0 && e.now().Before(deadline) {
		e.dropListed(ctx, asked)
		if len(asked) > 0 && !poll.Sleep(ctx, 20*time.Millisecond) {
			return
		}
	}
}

// dropListed drops from asked the VMs whose moves Nova lists: a record of the VM above the
// newest before it (the process's list of moves, read after the call; a move that ended
// already is in it too). Newest unknown (0, below 2.59): the VM's own newest record is in
// progress.
func (e *Engine) dropListed(ctx context.Context, asked map[string]int64) {
	var recent []model.Migration
	for vmID, newest := range asked {
		if newest == 0 {
			if ms, err := e.nova.MigrationsOf(ctx, vmID); err == nil && len(ms) > 0 && ms[0].InProgress() {
				delete(asked, vmID)
			}
			continue
		}
		if recent == nil {
			var err error
			if recent, err = e.nova.RecentMoves(ctx, 0); err != nil {
				return
			}
		}
		if slices.ContainsFunc(recent, func(m model.Migration) bool { return m.InstanceID == vmID && m.ID > newest }) {
			delete(asked, vmID)
		}
	}
}
