package ops

import (
	"context"
	"strings"

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
		e.mine[run.vm.ID] = true
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

// destRoom is a candidate destination with the room the engine believes it has left.
type destRoom struct {
	host  string
	zone  string
	ramMB int64
	vcpus float64
	gone  bool // disabled or down since the hosts were read: never picked again
}

// destinations are the enabled, up compute hosts and their free capacity, once per run, when
// drainctl must choose destinations itself: only when the per-destination cap can bind (it is
// below what may be in flight at once). Otherwise, and without capacity figures (2.88+),
// Nova's scheduler chooses, with everything it knows (server groups, aggregates). They come
// from the Nova read the run was planned on (shared with the other plans of that moment): a
// host picked is read again, by itself, just before a VM is sent there (stillUsable), so
// twenty nodes in flight do not read the whole cloud's services and hypervisors twenty times.
func (r *runner) destinations(ctx context.Context) []*destRoom {
	e := r.e
	c := e.cfg.Concurrency
	if r.ro.To != "" || c.MigrationsPerDestination >= c.MigrationsPerSource*c.Nodes {
		return nil
	}
	ns, err := e.inv.lastRead(ctx)
	if err != nil {
		return nil
	}
	usable, zone := map[string]bool{}, map[string]string{}
	for _, s := range ns.Services {
		usable[s.Host] = s.Enabled && s.Up && !s.ForcedDown
		zone[s.Host] = s.Zone
	}
	leaving := map[string]bool{r.plan.Host: true}
	for _, n := range r.ro.Leaving {
		leaving[n] = true
	}
	var out []*destRoom
	for _, h := range ns.Hypervisors {
		c, ok := h.Room(e.cpuRatio())
		if !ok {
			return nil
		}
		if usable[h.Host] && !leaving[h.Host] {
			out = append(out, &destRoom{host: h.Host, zone: zone[h.Host], ramMB: int64(c.MemoryMB.Free()), vcpus: c.VCPU.Free()})
		}
	}
	return out
}

// pickDestination chooses where a VM goes: the explicit target, or the host with the most
// free RAM that fits it and is under migrations_per_destination (counting others' in
// flight to it). With no capacity figures
// it returns "" (Nova's scheduler chooses). false: every fitting host is at its cap now.
func (r *runner) pickDestination(vm model.VM, dests []*destRoom, others map[string]int) (string, bool) {
	if r.ro.To != "" {
		return r.ro.To, r.under(r.ro.To, others)
	}
	if dests == nil || r.antiAffinity(vm) {
		return "", true // a member of a hard anti-affinity group: Nova's scheduler knows where its peers are
	}
	var best *destRoom
	fits := false
	for _, d := range dests {
		if d.gone || d.ramMB < vm.RAMMB || d.vcpus < float64(vm.VCPUs) {
			continue
		}
		if ok, _ := vm.Legal(d.zone, nil); !ok {
			continue // another availability zone
		}
		fits = true
		if r.under(d.host, others) && (best == nil || d.ramMB > best.ramMB) {
			best = d
		}
	}
	switch {
	case best != nil:
		best.ramMB -= vm.RAMMB
		best.vcpus -= float64(vm.VCPUs)
		return best.host, true
	case !fits:
		return "", true // no room anywhere as far as we know: let Nova's scheduler decide (and say why)
	}
	return "", false
}

// stillUsable re-reads a destination's compute service just before a VM is sent there:
// the hosts were read when the run began, and another node's evacuation (this process's,
// another's, a campaign's next node) may have disabled it since. A host no longer enabled
// and up is marked gone. A failed read says nothing: Nova's scheduler checks the host too.
func (r *runner) stillUsable(ctx context.Context, host string, dests []*destRoom) bool {
	svcs, err := r.e.nova.ComputeServices(ctx, host)
	if err != nil {
		return true
	}
	for _, s := range svcs {
		if s.Host == host && s.Enabled && s.Up && !s.ForcedDown {
			return true
		}
	}
	for _, d := range dests {
		if d.host == host {
			d.gone = true
		}
	}
	r.nodeChanged("destination " + host + " was disabled or went down since the hosts were read: choosing another")
	return false
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
func (r *runner) noValidHostAsked(msg string) bool {
	return r.ro.To != "" && strings.Contains(msg, "No valid host")
}
