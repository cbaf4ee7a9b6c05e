package policy

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/drainctl/drainctl/model"
)

// NodeReasons are the node-level reasons an evacuation (or cordon) of node is refused.
// leaving are the other nodes being emptied in the same batch: they do not count as room.
func NodeReasons(node model.Node, inv model.Inventory, leaving map[string]bool, o Options) []model.Reason {
	var out []model.Reason
	if node.Kube == nil {
		return out
	}
	k := node.Kube
	if k.IsControlPlane() && !o.AllowControlPlane {
		out = append(out, model.Reason{Code: model.ControlPlane, Severity: model.Blocks, Object: node.Name,
			Message: "is a control-plane node (" + strings.Join(k.Roles, ",") + ")", Override: model.OverrideAllowControlPlane})
	}
	for _, sel := range o.ProtectedNodes {
		if sel.Matches(labels.Set(k.Labels)) {
			out = append(out, model.Reason{Code: model.ProtectedNode, Severity: model.Blocks, Object: node.Name,
				Message: fmt.Sprintf("matches protected selector %q in policy.protected_nodes", sel.String())})
		}
	}
	if !o.AllowLastNode && !otherWorkerRemains(node.Name, inv, leaving) {
		out = append(out, model.Reason{Code: model.LastSchedulable, Severity: model.Blocks, Object: node.Name,
			Message: "no other Ready, schedulable worker would remain", Override: model.OverrideAllowLastNode})
	}
	return out
}

// HostReason refuses to work a node whose compute host cannot be told: one that looks like
// a hypervisor (it runs the hypervisor pods, or names its host through [mapping]) but maps to
// no Nova compute service, or one that maps to a host another node maps to too. Without it,
// such a node would be "evacuated" as if it had no VMs, leaving them there.
func HostReason(node model.Node, inv model.Inventory, o Options) *model.Reason {
	if !inv.NovaConfigured || node.Kube == nil {
		return nil
	}
	if len(node.HostSharedWith) > 0 {
		return &model.Reason{Code: model.HostConflict, Severity: model.Blocks, Object: node.Name,
			Message: fmt.Sprintf(
				"maps to Nova host %q as %s does too: check [mapping] in config.toml",
				node.Host,
				strings.Join(node.HostSharedWith, ", "),
			)}
	}
	if node.Compute != nil || !(node.HostExplicit || runsHypervisorPods(node, o)) {
		return nil
	}
	return &model.Reason{Code: model.NoNovaHost, Severity: model.Blocks, Object: node.Name,
		Message: fmt.Sprintf("no Nova host matches node %s (looked for %q): check [mapping] in config.toml", node.Name, node.Host)}
}

func runsHypervisorPods(node model.Node, o Options) bool {
	if o.HypervisorPods == nil || o.HypervisorPods.Empty() {
		return false
	}
	for _, p := range node.Pods {
		if o.HypervisorPods.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}

func otherWorkerRemains(name string, inv model.Inventory, leaving map[string]bool) bool {
	for _, n := range inv.Nodes {
		if n.Name == name || leaving[n.Name] || n.Kube == nil {
			continue
		}
		if n.Kube.Ready && n.Kube.Schedulable && !n.Kube.IsControlPlane() {
			return true
		}
	}
	return false
}

// diskFree is the disk left, or unbounded when the host reports none (shared or volume
// storage: Placement then has no DISK_GB inventory).
func diskFree(c model.Capacity) float64 {
	if c.DiskGB.Total == 0 {
		return math.Inf(1)
	}
	return c.DiskGB.Free()
}

// vmHost is a compute host a VM of the node could go to: its room, its zone, and the hard
// anti-affinity groups with a member on it.
type vmHost struct {
	name, zone      string
	ram, cpu, disk  float64
	groups          map[string]bool
	capacityUnknown bool
}

// vmHosts are the other enabled, up compute hosts (not the node, not leaving).
func vmHosts(node model.Node, inv model.Inventory, leaving map[string]bool, cpuRatio float64) []*vmHost {
	var hosts []*vmHost
	for _, n := range inv.Nodes {
		if n.Name == node.Name || leaving[n.Name] || n.Compute == nil || n.Hypervisor == nil {
			continue
		}
		if !n.Compute.Enabled || !n.Compute.Up || n.Compute.ForcedDown {
			continue
		}
		h := &vmHost{name: n.Name, zone: n.Compute.Zone, groups: map[string]bool{}}
		if c, ok := n.Hypervisor.Room(cpuRatio); ok {
			h.ram, h.cpu, h.disk = c.MemoryMB.Free(), c.VCPU.Free(), diskFree(c)
		} else {
			h.capacityUnknown = true
		}
		for _, vm := range n.VMs {
			for _, g := range vm.Groups() {
				h.groups[g] = true
			}
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// PlacementReasons names each VM that no other host may legally take, whatever their room:
// none in its availability zone, or every one in it holding a member of one of its hard
// anti-affinity groups ("anti-affinity group db: members on 3 of the 3 other hosts"). Nova
// would refuse the move; the plan says so before anything changes.
func PlacementReasons(node model.Node, vms []model.VM, inv model.Inventory, leaving map[string]bool, cpuRatio float64) []model.Reason {
	var hosts []*vmHost
	var out []model.Reason
	for _, vm := range vms {
		if vm.Zone == "" && vm.AntiAffinity == "" {
			continue
		}
		if hosts == nil {
			hosts = vmHosts(node, inv, leaving, cpuRatio)
		}
		inZone, legal := 0, 0
		held := map[string]int{}
		for _, h := range hosts {
			if vm.Zone != "" && h.zone != "" && h.zone != vm.Zone {
				continue
			}
			inZone++
			if ok, _ := vm.Legal(h.zone, h.groups); ok {
				legal++
			}
			for _, g := range vm.Groups() {
				if h.groups[g] {
					held[g]++
				}
			}
		}
		if legal > 0 {
			continue
		}
		where := "other hosts"
		if vm.Zone != "" {
			where = "other hosts in zone " + vm.Zone
		}
		msg := fmt.Sprintf("no legal host: zone %s has no other enabled compute host", vm.Zone)
		for _, g := range vm.Groups() {
			if inZone > 0 && held[g] > 0 {
				msg = fmt.Sprintf("no legal host: anti-affinity group %s: members on %d of the %d %s", g, held[g], inZone, where)
				break
			}
		}
		// Nova would refuse the move whatever drainctl's overrides (--force included): only
		// leaving the VM knowingly lifts it.
		out = append(
			out,
			model.Reason{
				Code:     model.NoLegalHost,
				Severity: model.Blocks,
				Object:   vm.Name,
				ObjectID: vm.ID,
				Message:  msg,
				Override: model.OverrideSkipVM,
			},
		)
	}
	return out
}

// CapacityReason checks that the other enabled, up compute hosts can hold the VMs, by RAM,
// vCPU and disk (the scheduler's own figures and ratios) in a first-fit-decreasing placement
// that puts each VM only where it may legally go (its zone; no host with another member of
// its hard anti-affinity groups, counting the members placed before it). It returns nil when
// they fit or when the capacity is unknown (2.88+), leaving the decision to Nova's scheduler.
func CapacityReason(
	node model.Node,
	vms []model.VM,
	inv model.Inventory,
	leaving map[string]bool,
	cpuRatio float64,
	o Options,
) *model.Reason {
	if len(vms) == 0 {
		return nil
	}
	hosts := vmHosts(node, inv, leaving, cpuRatio)
	for _, h := range hosts {
		if h.capacityUnknown {
			return nil
		}
	}
	sorted := append([]model.VM(nil), vms...)
	for i := 1; i < len(sorted); i++ { // largest first
		for j := i; j > 0 && sorted[j].RAMMB > sorted[j-1].RAMMB; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	var unplaced []string
	for _, vm := range sorted {
		placed := false
		for _, h := range hosts {
			if ok, _ := vm.Legal(h.zone, h.groups); !ok {
				continue
			}
			if h.ram >= float64(vm.RAMMB) && h.cpu >= float64(vm.VCPUs) && h.disk >= float64(vm.DiskGB) {
				h.ram -= float64(vm.RAMMB)
				h.cpu -= float64(vm.VCPUs)
				h.disk -= float64(vm.DiskGB)
				for _, g := range vm.Groups() {
					h.groups[g] = true
				}
				placed = true
				break
			}
		}
		if !placed {
			unplaced = append(unplaced, vm.Name)
		}
	}
	if len(unplaced) == 0 {
		return nil
	}
	sev := model.Blocks
	if o.Force {
		sev = model.Notes
	}
	return &model.Reason{Code: model.NoHostWithRoom, Severity: sev, Object: node.Name, Override: model.OverrideForce,
		Message: fmt.Sprintf("the other enabled compute hosts have no room for %d VM(s): %s", len(unplaced), strings.Join(unplaced, ", "))}
}

// Disagreements are where the node's two halves disagree, the one rule doctor and every view
// apply: a node without a compute service disagrees only when it should have one (it runs
// the hypervisor pods, or [mapping] names its host: HostReason). A control-plane or storage
// node is no hypervisor, and no disagreement.
func Disagreements(n model.Node, inv model.Inventory, o Options) []model.Mismatch {
	var out []model.Mismatch
	if r := HostReason(n, inv, o); r != nil {
		out = append(out, model.Mismatch{Code: model.MismatchCode(r.Code), Message: r.Object + " " + r.Message})
	}
	for _, m := range n.Mismatches(inv.NovaConfigured) {
		if m.Code == model.NoComputeService || m.Code == model.NoHypervisor {
			continue // expected of a node that is no hypervisor; HostReason speaks for one that is
		}
		out = append(out, m)
	}
	return out
}

// TargetReason says why dest cannot take vm, by the rules an evacuation's destination
// choice applies (nil: it can): another host, its nova-compute enabled, up and not forced
// down, in the VM's zone, holding no other member of the VM's hard anti-affinity groups,
// with room for it where the capacity is known. Nova would refuse a move there (NoValidHost)
// whatever drainctl's overrides: the picker does not offer it, --to is refused.
func TargetReason(vm model.VM, dest model.Node, cpuRatio float64) *model.Reason {
	block := func(code model.ReasonCode, format string, a ...any) *model.Reason {
		return &model.Reason{Code: code, Severity: model.Blocks, Object: vm.Name, ObjectID: vm.ID, Message: fmt.Sprintf(format, a...)}
	}
	c := dest.Compute
	switch {
	case c == nil:
		return block(model.NoLegalHost, "%s runs no nova-compute", dest.Name)
	case dest.Host == vm.Host:
		return block(model.NoLegalHost, "it is on %s already", dest.Host)
	case !c.Enabled:
		return block(
			model.NoLegalHost,
			"nova-compute on %s is disabled (%s): the scheduler sends it nothing",
			dest.Host,
			orNone(c.DisabledReason),
		)
	case !c.Up || c.ForcedDown:
		return block(model.NoLegalHost, "nova-compute on %s is down", dest.Host)
	}
	groups := map[string]bool{}
	for _, other := range dest.VMs {
		for _, g := range other.Groups() {
			groups[g] = true
		}
	}
	if ok, why := vm.Legal(c.Zone, groups); !ok {
		return block(model.NoLegalHost, "%s: %s", dest.Host, why)
	}
	if dest.Hypervisor != nil {
		if room, ok := dest.Hypervisor.Room(cpuRatio); ok {
			if room.MemoryMB.Free() < float64(vm.RAMMB) || room.VCPU.Free() < float64(vm.VCPUs) || diskFree(room) < float64(vm.DiskGB) {
				return block(
					model.NoHostWithRoom,
					"%s has no room for it (%d MiB, %d vCPU, %d GB)",
					dest.Host,
					vm.RAMMB,
					vm.VCPUs,
					vm.DiskGB,
				)
			}
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
