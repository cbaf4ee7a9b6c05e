package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/text"
)

// FailoverHosts are the cloud's compute hosts as the room for the next failure counts them
// (model.FailoverRooms), with gone taking nothing (a node being emptied, or about to be):
// hosts Nova could rebuild a dead host's VMs on take them, the others do not.
func FailoverHosts(inv model.Inventory, gone map[string]bool, cpuRatio float64) []model.FailoverHost {
	var out []model.FailoverHost
	for _, n := range inv.Nodes {
		if n.Compute == nil || n.Hypervisor == nil {
			continue
		}
		h := model.FailoverHost{Name: n.Name, Zone: n.Compute.Zone, Takes: n.Compute.TakesVMs() && !gone[n.Name],
			Reserve: n.Compute.Reserved() && !gone[n.Name],
			VMs:     slices.Clip(n.VMs)} // a VM placed here is appended to a copy, never to the inventory
		if c, ok := n.Hypervisor.Room(cpuRatio); ok {
			h.FreeMB, h.FreeVCPU = c.MemoryMB.Free(), c.VCPU.Free()
			h.CapMB, h.CapVCPU = c.MemoryMB.Capacity, c.VCPU.Capacity
		} // unknown: no room counted (it may have none)
		out = append(out, h)
	}
	return out
}

// FailoverReason says what emptying node (its vms moved, with the nodes leaving beside it)
// would do to the room [capacity] asks for the next host failure: nil when it holds or
// nothing is asked. The VMs are placed as the room counts a rebuild (model.PlaceOn): the
// largest first on the first host with room and their rules; they need room there if it dies.
// The VMs still on the other nodes leaving land on the hosts left too, before the plan and
// after it: a campaign's nodes in flight have moves to make yet.
func FailoverReason(
	node model.Node,
	vms []model.VM,
	inv model.Inventory,
	leaving map[string]bool,
	cpuRatio float64,
	need model.FailoverNeed,
	o Options,
) *model.Reason {
	moving := map[string]bool{}
	for _, vm := range vms {
		moving[vm.ID] = true
	}
	others := map[string]bool{} // before the plan: the node itself still takes VMs
	var theirs []model.VM
	for n := range leaving {
		others[n] = n != node.Name
		if other, ok := inv.Node(n); ok && others[n] {
			theirs = append(theirs, other.VMs...)
		}
	}
	return failoverAfter(inv, others, cpuRatio, need, o, node.Name, func(hosts []model.FailoverHost) {
		self := -1
		for i := range hosts {
			switch h := &hosts[i]; {
			case others[h.Name]:
				h.VMs = nil
			case h.Name == node.Name && h.Takes: // theirs do not land on the node about to leave
				self, h.Takes = i, false
			}
		}
		model.PlaceOn(hosts, theirs)
		if self >= 0 {
			hosts[self].Takes = true
		}
	}, func(hosts []model.FailoverHost) {
		for i := range hosts {
			if hosts[i].Name == node.Name { // what stays on it stays; what moves is placed
				hosts[i].Takes, hosts[i].VMs = false, without(hosts[i].VMs, moving)
			}
		}
		model.PlaceOn(hosts, vms)
	})
}

// FailoverQuarantineReason is FailoverReason for node taken out of service with its VMs left on
// it (a quarantine: cordoned, nova-compute disabled): it takes no dead host's VMs any more.
func FailoverQuarantineReason(node string, inv model.Inventory, cpuRatio float64, need model.FailoverNeed, o Options) *model.Reason {
	return failoverAfter(inv, nil, cpuRatio, need, o, node, nil, func(hosts []model.FailoverHost) {
		for i := range hosts {
			if hosts[i].Name == node {
				hosts[i].Takes = false
			}
		}
	})
}

// FailoverMoveReason is FailoverReason for one VM moved from its node to dest (migrate --to).
func FailoverMoveReason(
	vm model.VM,
	from, dest string,
	inv model.Inventory,
	cpuRatio float64,
	need model.FailoverNeed,
	o Options,
) *model.Reason {
	return failoverAfter(inv, nil, cpuRatio, need, o, vm.Name, nil, func(hosts []model.FailoverHost) {
		for i := range hosts {
			switch h := &hosts[i]; h.Name {
			case from:
				h.VMs = without(h.VMs, map[string]bool{vm.ID: true})
				h.FreeMB, h.FreeVCPU = h.FreeMB+float64(vm.RAMMB), h.FreeVCPU+float64(vm.VCPUs)
			case dest:
				h.VMs = append(h.VMs, vm)
				h.FreeMB, h.FreeVCPU = h.FreeMB-float64(vm.RAMMB), h.FreeVCPU-float64(vm.VCPUs)
			}
		}
	})
}

// failoverAfter counts the room before and after change (gone take nothing in both, and base,
// when set, applies to both), and names each zone the change leaves short and worse than it
// was: a plan that takes the room below what is asked, or further below, is refused; one that
// keeps it, or gives some back, is not.
func failoverAfter(
	inv model.Inventory,
	gone map[string]bool,
	cpuRatio float64,
	need model.FailoverNeed,
	o Options,
	object string,
	base, change func([]model.FailoverHost),
) *model.Reason {
	if !need.On() {
		return nil
	}
	hosts := FailoverHosts(inv, gone, cpuRatio)
	if base != nil {
		base(hosts)
	}
	before := map[string]model.ZoneRoom{}
	for _, z := range model.FailoverRooms(hosts, need) {
		before[z.Zone] = z
	}
	change(hosts)
	var short []string
	for _, z := range model.FailoverRooms(hosts, need) {
		was := before[z.Zone]
		if z.Short() && (z.Tolerated < was.Tolerated || z.ShortMB > was.ShortMB || z.ShortVCPU > was.ShortVCPU) {
			short = append(short, shortfall(z, need))
		}
	}
	if len(short) == 0 {
		return nil
	}
	sev := model.Blocks
	if o.IgnoreFailoverRoom {
		sev = model.Notes
	}
	return &model.Reason{Code: model.FailoverRoomShort, Severity: sev, Object: object, Override: model.OverrideIgnoreFailoverRoom,
		Message: "would leave " + strings.Join(short, "; ")}
}

// shortfall says a zone's: "room for 0 of 1 host failures: short 96 GiB and 4 vCPU in zone a".
func shortfall(z model.ZoneRoom, need model.FailoverNeed) string {
	where := "in zone " + z.Zone
	if z.Zone == "" {
		where = "in the hosts of no zone"
	}
	what := fmt.Sprintf("room for %d of %d host failures", z.Tolerated, need.Tolerate)
	if z.Tolerated >= need.Tolerate {
		what = fmt.Sprintf("less than the %g%% reserve free", need.ReservePercent)
	}
	var lack []string
	if z.ShortMB > 0 {
		lack = append(lack, text.Tenths(z.ShortMB/1024)+" GiB")
	}
	if z.ShortVCPU > 0 {
		lack = append(lack, text.Tenths(z.ShortVCPU)+" vCPU")
	}
	return what + ": short " + strings.Join(lack, " and ") + " " + where
}

// without is vms but those gone names.
func without(vms []model.VM, gone map[string]bool) []model.VM {
	var out []model.VM
	for _, vm := range vms {
		if !gone[vm.ID] {
			out = append(out, vm)
		}
	}
	return out
}

// FailoverOutAtOnce is how many of order's nodes, taken in order, can be out at once (each
// window of that many consecutive nodes emptied together, their VMs placed on the others as
// a rebuild would place them) with no zone's room for the next host failure taken below what
// is asked, or further below: at most par, 0 when one node alone takes it; par when nothing
// is asked. A campaign runs no more at once than it allows.
func FailoverOutAtOnce(inv model.Inventory, order []string, par int, cpuRatio float64, need model.FailoverNeed) int {
	if !need.On() {
		return par
	}
	k := par
	// A window of k that holds holds its smaller windows (fewer gone, fewer VMs placed): one
	// pass, shrinking k where a window does not hold.
	for i := 0; i < len(order) && k > 0; {
		if outTogether(inv, order[i:min(len(order), i+k)], cpuRatio, need) == nil {
			i++
			continue
		}
		k--
	}
	return k
}

// outTogether is failoverAfter for nodes emptied at once: nil when the room holds.
func outTogether(inv model.Inventory, nodes []string, cpuRatio float64, need model.FailoverNeed) *model.Reason {
	out := map[string]bool{}
	var vms []model.VM
	for _, name := range nodes {
		if n, ok := inv.Node(name); ok {
			out[name] = true
			vms = append(vms, n.VMs...)
		}
	}
	return failoverAfter(inv, nil, cpuRatio, need, Options{}, strings.Join(nodes, ", "), nil, func(hosts []model.FailoverHost) {
		for i := range hosts {
			if out[hosts[i].Name] {
				hosts[i].Takes, hosts[i].VMs = false, nil
			}
		}
		model.PlaceOn(hosts, vms)
	})
}
