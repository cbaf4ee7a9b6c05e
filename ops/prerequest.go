package ops

import (
	"cmp"
	"context"
	"fmt"

	"github.com/drainctl/drainctl/model"
)

// Before drainctl asks Nova to move a VM, every check of beforeRequest holds at that moment,
// in order: the plan and the lists were read earlier, and the cluster has more than one
// actor (someone migrating the VM by hand, a colleague taking the node, a dead host coming
// back, another drainctl starting migrations). Each check is a named function that says
// what it reads; the next check goes into the list.
var beforeRequest = []requestCheck{
	{
		"moved meanwhile",
		"Nova: the server, from the process's read of what changed since the VM was read (1 GET, shared with every read " +
			"of a server asking at once; a VM not read since the watch began: the server, 1 GET)",
		(*runner).movedMeanwhile,
	},
	{
		"owner told",
		"Nova: none (the server as \"moved meanwhile\" read it); its metadata once when its owner is told (1 POST)",
		(*runner).ownerTold,
	},
	{"still the holder", "Kubernetes: the node's lease (1 GET, when the run holds it)", (*runner).stillHoldsNode},
	{"still fenced", "a rebuild only: the Node (the informer's cache); once a run, the fence record (1 GET)", (*runner).stillFenced},
	{
		"cluster room",
		"Kubernetes: the migration lock, a lease (1 GET, 1 PUT); Nova: the moves under way, by destination and by source " +
			"(the process's read of what changed: 2 GETs, shared with every check asking at once)",
		(*runner).roomInCluster,
	},
	{
		"group budget",
		"Kubernetes, for a group's member only: the Nodes of its members' hosts (1 GET each), whose journals name the " +
			"members stopped in place; the VM groups' budgets from the last read of Nova (once a poll), the moves under " +
			"way from the cluster room's count",
		(*runner).groupBudget,
	},
	{
		"its moves known",
		"Nova: the newest migration record in the cloud, from the cluster room's read (none; below 2.59 the server's " +
			"migration records, 1 GET)",
		(*runner).movesKnown,
	},
	{
		"destination usable",
		"Nova: a cold move's or a rebuild's chosen destination's compute service (1 GET a candidate; none for the scheduler's choice, " +
			"nor for a live move: Nova's scheduler checks the host it is given, and an attempt it turns down " +
			"goes elsewhere next)",
		(*runner).usableDestination,
	},
}

// requestCheck is one check before a VM's move is requested.
type requestCheck struct {
	name  string // what it proves
	reads string // what it reads, with the API calls it costs
	check func(r *runner, ctx context.Context, q *vmRequest) verdict
}

// vmRequest is one VM's request being checked: what the checks read and decide.
type vmRequest struct {
	run     *vmRun
	q       *moveQueue
	dests   []*destRoom
	room    cluster       // held from "cluster room" until the request is made
	dest    string        // the destination chosen ("" leaves it to Nova's scheduler)
	failure *model.Reason // handled as a failure (a VM that became unmovable)
	cur     model.VM      // the server as "moved meanwhile" read it (read: it could)
	read    bool
}

// verdict is what a check decides.
type verdict int

const (
	proceed verdict = iota // this check holds: the next one
	handled                // the VM is off pending (left by itself, followed, unmovable): the next VM
	stopRun                // the run stops (it lost the node, the fence no longer holds)
	wait                   // no room now: try again at the next poll
	later                  // held by a budget of its own: the node's next VM is tried, this one at the next poll
)

// checkBeforeRequest runs beforeRequest in order; the first check that does not hold decides.
// A check after "cluster room" that does not hold releases the room.
func (r *runner) checkBeforeRequest(ctx context.Context, q *vmRequest) verdict {
	for _, c := range beforeRequest {
		if v := c.check(r, ctx, q); v != proceed {
			if q.room.unlock != nil {
				q.room.unlock(false)
			}
			return v
		}
	}
	return proceed
}

func (r *runner) stillHoldsNode(ctx context.Context, _ *vmRequest) verdict {
	if r.stillHolder(ctx) != nil {
		return stopRun
	}
	return proceed
}

// stillFenced: a rebuild acts on the disks of a host proven off; a host back (or in another
// outage) stops the run.
func (r *runner) stillFenced(ctx context.Context, q *vmRequest) verdict {
	if moverOf(q.run.method).deadHost && r.stopUnlessFenced(ctx) {
		return stopRun
	}
	return proceed
}

// roomInCluster: the cluster-wide migration cap, and the VM's source's, counted where every
// drainctl process sees them.
func (r *runner) roomInCluster(ctx context.Context, q *vmRequest) verdict {
	room, why := r.clusterRoom(ctx, q.run.vm, moverOf(q.run.method).deadHost)
	if why != "" {
		q.q.waitWhy = why
		return wait // the cluster or the VM's source is at its cap (other runs and processes count)
	}
	q.room = room
	return proceed
}

// usableDestination chooses the destination, not one an earlier attempt of the VM was turned
// down on; a cold move's or a rebuild's candidates are each read again (disabled or down since
// the hosts were read: the next one). A live move's are not: Nova's scheduler checks the host
// named when it acts, a later proof than a read before the request; a host this process
// disabled since (a campaign's next node) is passed over on Nova's answer to that disable.
func (r *runner) usableDestination(ctx context.Context, q *vmRequest) verdict {
	if moverOf(q.run.method).InPlace { // a stop where it is: no destination
		return proceed
	}
	if q.run.noValidHost && q.run.picked { // the last attempt's: Nova's scheduler turned the host down
		markGone(q.dests, q.run.dest)
	}
	usable := func(host string) bool {
		if moverOf(q.run.method).destChecked {
			return !r.disabledHere(host, q.dests)
		}
		return r.stillUsable(ctx, host, q.dests)
	}
	dest, ok := r.pickDestination(q.run.vm, q.dests, q.room.toDest, q.run.turnedDown)
	for ok && dest != "" && q.dests != nil && r.plan.Target == "" && !usable(dest) {
		dest, ok = r.pickDestination(q.run.vm, q.dests, q.room.toDest, q.run.turnedDown)
	}
	if !ok {
		q.q.waitWhy = "every destination it may go to is at its cap of moves in (concurrency.migrations_per_destination)"
		return wait // every destination is at its cap: wait for one to finish
	}
	q.dest = dest
	return proceed
}

// movesKnown knows the newest migration record just before the VM's move is asked for: Nova
// makes the record of a live or cold move after its 202 (its conductor does), so the records
// of this move are the ones above the newest there is now; an older move's record (a live
// migration that failed last month) is never taken for it. The cluster room's read, begun
// after its check asked, has the cloud's newest; below 2.59 the VM's own records are read. A
// read that fails leaves it unknown: a live move is then followed as before, a cold one is
// not asked for (it could never be proven drainctl's, so never confirmed).
func (r *runner) movesKnown(ctx context.Context, q *vmRequest) verdict {
	if q.room.newest > 0 {
		q.run.after, q.run.afterKnown = q.room.newest, true
		return proceed
	}
	recs, err := r.e.nova.MigrationsOf(ctx, q.run.vm.ID)
	q.run.after, q.run.afterKnown = 0, err == nil
	for _, m := range recs {
		q.run.after = max(q.run.after, m.ID)
	}
	return proceed
}

// movedMeanwhile re-reads the VM before its migration is requested: the list was taken at
// the start, and someone may have moved it since. A VM no longer on the node left by itself
// and is skipped; one already migrating (someone else's migration) is followed, not asked
// again. It takes the VM off pending in both cases.
func (r *runner) movedMeanwhile(ctx context.Context, q *vmRequest) verdict {
	e, run, pending := r.e, q.run, &q.q.pending
	cur, err := e.nova.Server(ctx, run.vm.ID)
	q.cur, q.read = cur, err == nil
	switch {
	case err != nil: // the request itself will say what is wrong
		return proceed
	case cur.Host != run.vm.Host:
		*pending = (*pending)[1:]
		msg := "left the node by itself (now on " + cur.Host + ")"
		run.dest, run.started = cur.Host, e.now()
		r.report.VMs = append(r.report.VMs, r.vmReport(run, MigSkipped, msg))
		r.emitVM(run, MigSkipped, msg)
		return handled
	}
	method, reason := r.classify(cur)
	switch row := moverOf(method); {
	case row.theirs:
		*pending = (*pending)[1:]
		run.vm.Phase, run.vm.Task, run.vm.Status, run.vm.TaskState = cur.Phase, cur.Task, cur.Status, cur.TaskState
		r.follow(ctx, run, nil, &moveQueue{running: q.q.running}) // someone else's: no cold record of ours to confirm it by
		r.emitVM(run, MigAdopted, "already migrating (someone else's request): followed")
		return handled
	case row.Stays:
		*pending = (*pending)[1:]
		run.vm = cur
		if q.failure = r.stays(ctx, run, reason, q.q); q.failure != nil {
			r.report.VMs = append(r.report.VMs, r.vmReport(run, MigFailed, reason.Message, reason.Override))
		}
		return handled
	case method == run.method && row.runningOnly && cur.Phase != model.PhaseRunning && run.attempt == 0:
		*pending = (*pending)[1:] // stopped meanwhile (its owner): begin leaves it as it is
		run.vm = cur
		if q.failure = row.begin(r, ctx, run, reason, q.q); q.failure != nil {
			r.report.VMs = append(r.report.VMs, r.vmReport(run, MigFailed, q.failure.Message))
		}
		return handled
	case method != run.method && run.attempt == 0: // stopped or started meanwhile
		run.vm, run.method = cur, method
	}
	return proceed
}

// The VM groups' budgets (#57.1, model.GroupBudgets): before a member's move is asked for, its
// groups' members disrupted now are counted from what the cluster room counted under its
// lock, every actor's moves Nova lists (a colleague's, another drainctl's) and this process's
// own, so the budget holds across every process as the migration caps do. A member beyond
// its group's budget waits at the back of its node's queue (the node's other VMs go on); a
// rebuild of a dead host's member does not wait, and the group is said over its budget.

// groupBudget: the VM's groups under their budgets, with the moves under way that the
// cluster room counted. later: a group holds it; its node's next VM is tried.
func (r *runner) groupBudget(ctx context.Context, q *vmRequest) verdict {
	vm := q.run.vm
	for _, b := range r.e.inv.groupBudgets(ctx, r.e.o.Poll, r.e.cfg.Policy.GroupRules()) {
		if !b.Members[vm.ID] {
			continue
		}
		stopped := r.e.stoppedInPlaceNow(ctx, b.Members) // a member stopped for its restart-in-place is disrupted too
		moving := 0
		for id := range b.Members {
			if _, on := q.room.moving[id]; id != vm.ID && (on || stopped[id]) {
				moving++
			}
		}
		if moving < b.Max {
			continue
		}
		what := fmt.Sprintf("%s is at its disruption budget (%d at once, %s): %d member(s) moving or stopped in place",
			b.Name, b.Max, b.Source(), moving)
		if moverOf(q.run.method).deadHost { // a dead host's member: rebuilt now, never held
			r.sayGroup(b.Name, q.run, what+"; "+vm.Name+" is rebuilt anyway (its host is dead): the group is over its budget", false)
			continue
		}
		r.sayGroup(b.Name, q.run, what+"; "+vm.Name+" waits for one to end", true)
		return later
	}
	return proceed
}

// stoppedInPlaceNow says which of the VMs a drainctl stopped in place, by the journals of
// the nodes their hosts are (as Nova was last read), read from the API server: under the
// start lock, a stop another process journaled a moment before its request counts, where the
// cache could still miss it. A journal that cannot be read counts each of its node's members
// as stopped: unknown holds the request, it never lets two through.
func (e *Engine) stoppedInPlaceNow(ctx context.Context, vms map[string]bool) map[string]bool {
	ns, err := e.inv.lastRead(ctx)
	if err != nil {
		return e.inv.stoppedInPlace()
	}
	onHost := map[string][]string{} // the members by host: one read a host
	for _, vm := range ns.VMs {
		if vms[vm.ID] {
			onHost[vm.Host] = append(onHost[vm.Host], vm.ID)
		}
	}
	out := map[string]bool{}
	for host, ids := range onHost {
		node := e.inv.NodeOf(host)
		if node == "" {
			continue
		}
		k, found, err := e.kube.NodeFresh(ctx, node)
		switch {
		case err != nil:
			for _, id := range ids {
				out[id] = true
			}
		case found:
			if j, ok := ReadJournal(k); ok {
				for _, id := range j.Restart {
					out[id] = true
				}
			}
		}
	}
	return out
}

// sayGroup tells the run's view what a group does to the VM, once a run; one it holds says
// why on its own row too.
func (r *runner) sayGroup(group string, run *vmRun, what string, holds bool) {
	key := group + "/" + run.vm.ID
	r.mu.Lock()
	said := r.said.groups[key]
	if r.said.groups == nil {
		r.said.groups = map[string]bool{}
	}
	r.said.groups[key] = true
	r.mu.Unlock()
	if !said {
		r.nodeChanged(what)
		if holds {
			r.emitVM(run, MigWaiting, what)
		}
	}
}

// ownerTold: the VM's owner was told at least the lead ago, as its metadata says now (the
// server read by "moved meanwhile"). Else the notice is written (none, removed, or too old to
// be true) and the VM waits: later. A notice Nova refuses (a server it will not change now)
// holds the VM for the lead all the same, counted from the first try, and the run says so.
func (r *runner) ownerTold(ctx context.Context, q *vmRequest) verdict {
	run := q.run
	if !r.tellsOwnerOf(run) {
		return proceed
	}
	notice, vm := cmp.Or(run.notice, run.vm.Notice), run.vm // the one it was told with, unless Nova says otherwise now
	if q.read {
		notice, vm = q.cur.Notice, q.cur
	}
	if r.ownerSaysNow(vm) { // its owner's answer: now
		run.ownerSaidNow = true
		return proceed
	}
	if r.toldOrTell(ctx, run, notice) {
		return proceed
	}
	return later
}
