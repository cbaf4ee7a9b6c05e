package ops

import (
	"context"
	"time"

	"github.com/drainctl/drainctl/model"
)

// Where a VM goes: drainctl picks the destination itself only when the per-destination cap
// can bind; otherwise, and for VMs whose constraints it cannot see (a server group's peers),
// Nova's scheduler chooses. Each destination's migrations in flight are counted here.

// claim counts (or uncounts) a migration against its destination's cap.
func (e *Engine) claim(run *vmRun, delta int) {
	e.destMu.Lock()
	defer e.destMu.Unlock()
	if delta > 0 {
		e.mine[run.vm.ID] = run.vm.Host
	} else {
		delete(e.mine, run.vm.ID)
	}
	switch {
	case delta > 0 && run.dest != "":
		run.claimed = run.dest
		e.inflight[run.dest]++
	case delta < 0 && run.claimed != "":
		e.inflight[run.claimed]--
		run.claimed = ""
	}
}

// destRoom is a candidate destination with its room as Nova last showed it.
type destRoom struct {
	host   string
	zone   string
	ramMB  int64
	vcpus  float64
	readAt time.Time // when the read that showed it began
	gone   bool      // disabled or down since the hosts were read: never picked again
	later  bool      // its node is emptied later in the same campaign: the last choice
	// reserve: the failover reserve a recovery took: the first choice, under no
	// per-destination cap (it is empty, and kept for this).
	reserve bool
}

// sentVM is a VM this engine sent to a destination: the room it takes there until a read of
// that host shows it.
type sentVM struct {
	at    time.Time
	ramMB int64
	vcpus float64
}

// sentMargin is how long before a read's start a VM sent may still be missing from it: Nova's
// scheduler claims the room on the destination only once it has picked it (a moment after
// the request). Within it the VM is counted twice: a host looks fuller, never emptier.
const sentMargin = 5 * time.Second

// noteSent puts a VM sent to host into the ledger. Called with destMu.
func (e *Engine) noteSent(host string, vm model.VM) {
	e.sent[host] = append(e.sent[host], sentVM{at: e.now(), ramMB: vm.RAMMB, vcpus: float64(vm.VCPUs)})
}

// landed puts a VM that moved where Nova's scheduler (or the operator's --to) chose into the
// ledger, as drainctl's own picks are when made: no host is read again for the room it lost.
func (e *Engine) landed(run *vmRun) {
	if run.picked || run.dest == "" {
		return
	}
	e.destMu.Lock()
	defer e.destMu.Unlock()
	e.noteSent(run.dest, run.vm)
}

// taken is the room the VMs this engine sent to d since d was read take (every run's: twenty
// nodes in flight choose from one ledger, not each from its own figures). Called with destMu.
func (e *Engine) taken(d *destRoom) (ramMB int64, vcpus float64) {
	list := e.sent[d.host]
	keep := list[:0]
	for _, s := range list {
		if e.now().Sub(s.at) > wholeReadEvery+sentMargin {
			continue // every read since shows it
		}
		keep = append(keep, s)
		if s.at.After(d.readAt.Add(-sentMargin)) {
			ramMB, vcpus = ramMB+s.ramMB, vcpus+s.vcpus
		}
	}
	e.sent[d.host] = keep
	return ramMB, vcpus
}

// destinations are the enabled, up compute hosts and their free capacity, once per run, when
// drainctl must choose destinations itself: only when the per-destination cap can bind (it is
// below what may be in flight at once). Otherwise, and without capacity figures (2.88+),
// Nova's scheduler chooses, with everything it knows (server groups, aggregates). They come
// from the Nova read the run was planned on (shared with the other plans of that moment), so
// twenty nodes in flight do not read the whole cloud's services and hypervisors twenty times:
// Nova's scheduler checks a live move's host when it acts (one disabled since is turned
// down, and the VM's next attempt goes elsewhere); a cold move's or a rebuild's is read again,
// by itself, just before a VM is sent there (stillUsable).
func (r *runner) destinations(ctx context.Context) []*destRoom {
	e := r.e
	c := e.cfg.Concurrency
	// drainctl chooses when its cap can bind, or when a campaign empties other nodes later
	// (Nova's scheduler would send VMs there, to be moved again at their turn).
	// And when a recovery took the failover reserve: it names the reserve first.
	if r.plan.Target != "" ||
		(c.MigrationsPerDestination >= c.MigrationsPerSource*c.Nodes && len(r.ro.Later) == 0 && len(r.journaled.reserves) == 0) {
		return nil
	}
	ns, err := e.inv.lastRead(ctx)
	if err != nil {
		return nil
	}
	usable, zone := map[string]bool{}, map[string]string{}
	for _, s := range ns.Services {
		usable[s.Host] = s.TakesVMs() || r.tookReserve(s.Host) // read before this run enabled it
		zone[s.Host] = s.Zone
	}
	leaving := e.inv.HostsOf(r.ro.Leaving)
	leaving[r.plan.Host] = true
	later := e.inv.HostsOf(r.ro.Later)
	var out []*destRoom
	for _, h := range ns.Hypervisors {
		c, ok := h.Room(e.cpuRatio())
		if !ok {
			return nil
		}
		if usable[h.Host] && !leaving[h.Host] {
			out = append(
				out,
				&destRoom{
					host:    h.Host,
					zone:    zone[h.Host],
					ramMB:   int64(c.MemoryMB.Free()),
					vcpus:   c.VCPU.Free(),
					readAt:  e.inv.readBegan(h.Host),
					later:   later[h.Host],
					reserve: r.tookReserve(h.Host),
				},
			)
		}
	}
	return out
}

// pickDestination chooses where a VM goes: the explicit target, or the host with the most
// free RAM that fits it and is under migrations_per_destination (counting others' in
// flight to it), a host its campaign empties later only when no other with room is under
// its cap. (Waiting for one at its cap instead cost more than the second moves it saved:
// 1,000 nodes took 348 s against 281 s.) With no capacity figures
// it returns "" (Nova's scheduler chooses). false: every fitting host is at its cap now.
func (r *runner) pickDestination(vm model.VM, dests []*destRoom, others map[string]int, turnedDown map[string]bool) (string, bool) {
	if r.plan.Target != "" {
		return r.plan.Target, r.under(r.plan.Target, others)
	}
	if dests == nil || r.antiAffinity(vm) {
		return "", true // a member of a hard anti-affinity group: Nova's scheduler knows where its peers are
	}
	e := r.e
	e.destMu.Lock()
	defer e.destMu.Unlock()
	var best *destRoom
	var bestRAM int64
	fits := false
	for _, d := range dests {
		ram, vcpus := e.taken(d)
		ram, vcpus = d.ramMB-ram, d.vcpus-vcpus
		if d.gone || turnedDown[d.host] || ram < vm.RAMMB || vcpus < float64(vm.VCPUs) {
			continue
		}
		if ok, _ := vm.Legal(d.zone, nil); !ok {
			continue // another availability zone
		}
		fits = true
		better := best == nil || (d.reserve && !best.reserve) ||
			(d.reserve == best.reserve && ((best.later && !d.later) || (best.later == d.later && ram > bestRAM)))
		if better && (d.reserve || e.inflight[d.host]+others[d.host] < e.cfg.Concurrency.MigrationsPerDestination) {
			best, bestRAM = d, ram
		}
	}
	switch {
	case best != nil:
		e.noteSent(best.host, vm)
		return best.host, true
	case !fits:
		return "", true // no room anywhere as far as we know: let Nova's scheduler decide (and say why)
	}
	return "", false
}

// stillUsable re-reads a cold move's or a rebuild's destination's compute service just before
// a VM is sent there: the hosts were read when the run began, and another node's evacuation
// (this process's, another's, a campaign's next node) may have disabled it since. A host no longer enabled
// and up is marked gone. A failed read says nothing: Nova's scheduler checks the host too.
func (r *runner) stillUsable(ctx context.Context, host string, dests []*destRoom) bool {
	svc, ok, err := r.e.serviceOn(ctx, host)
	if err != nil || (ok && svc.Host == host && svc.TakesVMs()) {
		return true
	}
	markGone(dests, host)
	r.nodeChanged("destination " + host + " was disabled or went down since the hosts were read: choosing another")
	return false
}

// disabledHere says whether this process disabled host's service since the destinations were
// read (a campaign's next node, another run's), on Nova's answer to that change, and marks it
// gone. A host another actor disabled is Nova's scheduler's to turn down.
func (r *runner) disabledHere(host string, dests []*destRoom) bool {
	for _, d := range dests {
		if d.host != host {
			continue
		}
		if svc, ok := r.e.inv.ServiceAnswered(host, d.readAt); ok && !svc.TakesVMs() {
			markGone(dests, host)
			r.nodeChanged("destination " + host + " was disabled by this process since the hosts were read: choosing another")
			return true
		}
	}
	return false
}

// markGone marks host never to be picked again by the run (disabled, down or full since the
// hosts were read).
func markGone(dests []*destRoom, host string) {
	for _, d := range dests {
		if d.host == host {
			d.gone = true
		}
	}
}

// antiAffinity reports whether the plan knows the VM as a member of a hard anti-affinity
// group (the server list does not say; the plan's inventory joined the groups).
func (r *runner) antiAffinity(vm model.VM) bool {
	for _, p := range r.plan.VMs {
		if p.ID == vm.ID {
			return p.AntiAffinity != ""
		}
	}
	return false
}

// under: the host's migrations in flight, this engine's and others' (Nova's list), are
// below migrations_per_destination.
func (r *runner) under(host string, others map[string]int) bool {
	r.e.destMu.Lock()
	defer r.e.destMu.Unlock()
	return r.e.inflight[host]+others[host] < r.e.cfg.Concurrency.MigrationsPerDestination
}

// noValidHostAsked: Nova's scheduler turned the requested host down (--to): asking again
// for the same host gets the same answer.
func (r *runner) noValidHostAsked(run *vmRun) bool {
	return r.plan.Target != "" && run.noValidHost
}
