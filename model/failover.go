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
	Takes            bool
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
			if h := hosts[i]; h.Takes {
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

// unplaced rebuilds the dead hosts' VMs, the largest first, each on the first host that
// takes VMs, is not dead, and has its room and its rules, and returns what found none.
func unplaced(hosts []FailoverHost, dead []int) (mb, vcpu float64) {
	type room struct {
		zone       string
		mb, vcpu   float64
		antiGroups map[string]bool
	}
	isDead := map[int]bool{}
	var vms []VM
	for _, i := range dead {
		isDead[i] = true
		vms = append(vms, hosts[i].VMs...)
	}
	var rooms []*room
	for i, h := range hosts {
		if !h.Takes || isDead[i] {
			continue
		}
		r := &room{zone: h.Zone, mb: h.FreeMB, vcpu: h.FreeVCPU, antiGroups: map[string]bool{}}
		for _, vm := range h.VMs {
			for _, g := range vm.Groups() {
				r.antiGroups[g] = true
			}
		}
		rooms = append(rooms, r)
	}
	slices.SortStableFunc(vms, func(a, b VM) int { return cmp.Compare(b.RAMMB, a.RAMMB) })
	for _, vm := range vms {
		placed := false
		for _, r := range rooms {
			if ok, _ := vm.Legal(r.zone, r.antiGroups); !ok || r.mb < float64(vm.RAMMB) || r.vcpu < float64(vm.VCPUs) {
				continue
			}
			r.mb, r.vcpu = r.mb-float64(vm.RAMMB), r.vcpu-float64(vm.VCPUs)
			for _, g := range vm.Groups() {
				r.antiGroups[g] = true
			}
			placed = true
			break
		}
		if !placed {
			mb, vcpu = mb+float64(vm.RAMMB), vcpu+float64(vm.VCPUs)
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
