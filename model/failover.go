package model

import (
	"cmp"
	"slices"
)

// The room for the next failure ([capacity], vSphere HA's admission control): the VMs of a
// zone's largest hosts, were they to die, must fit in the room left on the hosts Nova could
// rebuild them on (each VM by its flavor, under the rules a destination follows: its zone,
// its hard anti-affinity groups), and a share of each zone's memory and vCPU may be asked to
// stay free besides. A plan that would leave less is refused, or waits (ops/policy).

// FailoverNeed is what the operator asks to hold.
type FailoverNeed struct {
	Tolerate       int     // host failures: the largest Tolerate hosts of each zone
	ReservePercent float64 // of each zone's memory and vCPU, kept free
}

// On says whether anything is asked.
func (n FailoverNeed) On() bool { return n.Tolerate > 0 || n.ReservePercent > 0 }

// FailoverHost is one compute host as the room counts it.
type FailoverHost struct {
	Name, Zone string
	// Takes: a dead host's VMs may be rebuilt here (its service enabled and running, the
	// host not being emptied).
	Takes bool
	// Reserve: a failover reserve ([recover] reserve_label): it takes a dead host's VMs, a
	// recovery enabling it first, and never a move's.
	Reserve          bool
	FreeMB, FreeVCPU float64 // the room left, as Placement counts it
	CapMB, CapVCPU   float64 // its capacity, for the reserve
	VMs              []VM    // what it runs: what its death needs room for
}

// ZoneRoom is the room for the next failure in one zone.
type ZoneRoom struct {
	Zone      string
	Tolerate  int // asked
	Tolerated int // how many of its largest hosts' deaths the room holds (up to Tolerate)
	// SpareMB, SpareVCPU are free on the zone's hosts that take VMs.
	SpareMB, SpareVCPU float64
	// ShortMB, ShortVCPU are what the need lacks here: the VMs of the Tolerate largest
	// hosts that find no room, or the reserve's shortfall, whichever is more.
	ShortMB, ShortVCPU float64
}

// Short says the zone holds less than asked.
func (z ZoneRoom) Short() bool { return z.ShortMB > 0 || z.ShortVCPU > 0 }

// FailoverRooms counts the room of each zone with hosts, by zone name.
func FailoverRooms(hosts []FailoverHost, need FailoverNeed) []ZoneRoom {
	zones := map[string][]int{}
	for i, h := range hosts {
		zones[h.Zone] = append(zones[h.Zone], i)
	}
	var out []ZoneRoom
	for zone, in := range zones {
		z := ZoneRoom{Zone: zone, Tolerate: need.Tolerate}
		var capMB, capVCPU float64
		for _, i := range in {
			if h := hosts[i]; h.Takes || h.Reserve {
				z.SpareMB, z.SpareVCPU = z.SpareMB+max(0, h.FreeMB), z.SpareVCPU+max(0, h.FreeVCPU)
				capMB, capVCPU = capMB+h.CapMB, capVCPU+h.CapVCPU
			}
		}
		// The largest first: the deaths that need the most room.
		slices.SortStableFunc(in, func(a, b int) int { return cmp.Compare(vmMB(hosts[b].VMs), vmMB(hosts[a].VMs)) })
		worst := min(need.Tolerate, len(in)) // a zone of fewer hosts loses them all at most
		for k := 1; k <= worst; k++ {
			if mb, vcpu := unplaced(hosts, in[:k]); mb > 0 || vcpu > 0 {
				// What the largest worst lack, not only the first deaths that found none.
				z.ShortMB, z.ShortVCPU = unplaced(hosts, in[:worst])
				break
			}
			z.Tolerated = k
		}
		if z.Tolerated == worst {
			z.Tolerated = need.Tolerate
		}
		if p := need.ReservePercent / 100; p > 0 {
			z.ShortMB = max(z.ShortMB, p*capMB-z.SpareMB)
			z.ShortVCPU = max(z.ShortVCPU, p*capVCPU-z.SpareVCPU)
		}
		out = append(out, z)
	}
	slices.SortFunc(out, func(a, b ZoneRoom) int { return cmp.Compare(a.Zone, b.Zone) })
	return out
}

// unplaced rebuilds the dead hosts' VMs on the others (PlaceOn, on a copy: hosts is not
// changed) and returns what found no room.
func unplaced(hosts []FailoverHost, dead []int) (mb, vcpu float64) {
	rest := slices.Clone(hosts)
	var vms []VM
	for i := range rest {
		rest[i].Takes = rest[i].Takes || rest[i].Reserve
	}
	for _, i := range dead {
		rest[i].Takes = false
		vms = append(vms, hosts[i].VMs...)
	}
	for i := range rest {
		rest[i].VMs = slices.Clip(rest[i].VMs) // a VM placed is appended to a copy of the list
	}
	return PlaceOn(rest, vms)
}

// PlaceOn puts each VM, the largest first, on the host with the most free memory that takes
// VMs with its room and its rules (its zone, its hard anti-affinity groups), as Nova's
// scheduler does by default (its RAM weigher spreads), taking that room and adding it to the
// host's VMs; it returns what found none. The room for the next failure and a plan's
// placement both count it so: a count that packed VMs where Nova spreads them would promise
// room that the moves' leftovers, too small for a VM each, do not give.
func PlaceOn(hosts []FailoverHost, vms []VM) (mb, vcpu float64) {
	groups := make([]map[string]bool, len(hosts)) // each host's anti-affinity groups, made once
	for i, h := range hosts {
		if h.Takes {
			groups[i] = map[string]bool{}
			for _, vm := range h.VMs {
				for _, g := range vm.Groups() {
					groups[i][g] = true
				}
			}
		}
	}
	sorted := slices.Clone(vms)
	slices.SortStableFunc(sorted, func(a, b VM) int { return cmp.Compare(b.RAMMB, a.RAMMB) })
	for _, vm := range sorted {
		best := -1
		for i := range hosts {
			h := &hosts[i]
			if !h.Takes || h.FreeMB < float64(vm.RAMMB) || h.FreeVCPU < float64(vm.VCPUs) ||
				(best >= 0 && h.FreeMB <= hosts[best].FreeMB) {
				continue
			}
			if ok, _ := vm.Legal(h.Zone, groups[i]); ok {
				best = i
			}
		}
		if best < 0 {
			mb, vcpu = mb+float64(vm.RAMMB), vcpu+float64(vm.VCPUs)
			continue
		}
		h := &hosts[best]
		h.FreeMB, h.FreeVCPU = h.FreeMB-float64(vm.RAMMB), h.FreeVCPU-float64(vm.VCPUs)
		h.VMs = append(h.VMs, vm)
		for _, g := range vm.Groups() {
			groups[best][g] = true
		}
	}
	return mb, vcpu
}

// vmMB is the memory its VMs' flavors take.
func vmMB(vms []VM) int64 {
	var sum int64
	for _, vm := range vms {
		sum += vm.RAMMB
	}
	return sum
}
