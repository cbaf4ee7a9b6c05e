package policy

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/drainctl/drainctl/model"
)

// Weights price what emptying a node costs.
type Weights struct {
	PerPod        float64 // each pod evicted
	PerVMGiB      float64 // each GiB of VM memory live-migrated
	PerUtilPoint  float64 // each percentage point of the node's requested CPU
	CPURatio      float64 // Nova's cpu_allocation_ratio for VM placement
	PlacementPool int     // how many of the emptiest other nodes a placement may use
}

// DefaultWeights: a GiB of live-migrated memory (~1 s at 10 Gbit/s, with risk) weighs like
// two pod evictions.
func DefaultWeights() Weights {
	return Weights{PerPod: 1, PerVMGiB: 2, PerUtilPoint: 0.2, CPURatio: 4, PlacementPool: 64}
}

// WeightsFromConfig reads the configured costs (config.toml [scale_down]).
func WeightsFromConfig(sd model.ScaleDownConfig) Weights {
	w := DefaultWeights()
	w.PerPod, w.PerVMGiB, w.PerUtilPoint, w.CPURatio = sd.PodCost, sd.VMGiBCost, sd.CPUPointCost, sd.CPUAllocationRatio
	return w
}

// Victim is one node's standing: a candidate with its cost, or every reason it cannot go.
type Victim struct {
	Node      string         `json:"node"`
	Candidate bool           `json:"candidate"`
	Rank      int            `json:"rank,omitempty"` // 1 = cheapest; 0 when not a candidate
	Cost      float64        `json:"cost"`
	Pods      int            `json:"podsToEvict"`
	VMs       int            `json:"vms"`
	VMMemory  int64          `json:"vmMemoryMB"`
	CPUUtil   float64        `json:"cpuUtilization"`
	Reasons   []model.Reason `json:"reasons,omitempty"`
	placed    []item         // where the simulation put each pod and VM (candidates only)
}

// Placement is where the simulation put each pod (namespace/name) and VM (name).
func (v Victim) Placement() map[string]string {
	out := make(map[string]string, len(v.placed))
	for _, it := range v.placed {
		out[it.name()] = it.dest
	}
	return out
}

// room is free capacity on one node (pods side) or host (VM side).
type room struct {
	name           string
	node           *lazyNode       // labels and taints, built for pods that constrain where they run
	tainted        bool            // has a NoSchedule or NoExecute taint
	cpu, mem, pods int64           // Kubernetes: milliCPU, bytes, pod slots
	ram            int64           // Nova: MB
	vcpu           float64         // Nova: vCPUs under the allocation ratio
	zone           string          // Nova: the host's availability zone
	groups         map[string]bool // Nova: the anti-affinity groups with a member on the host
}

// Rank orders every node: candidates first, cheapest to empty first (ties by name), then
// the others with all their reasons. It is pure and reads only the inventory.
func Rank(inv model.Inventory, o Options, w Weights) []Victim {
	pdbs := map[string]model.PDB{}
	for _, b := range inv.PDBs {
		pdbs[b.Namespace+"/"+b.Name] = b
	}
	podRooms, vmRooms := freeRooms(inv, w)
	lg := legalityOf(vmRooms)
	workers := countWorkers(inv)
	out := make([]Victim, 0, len(inv.Nodes))
	scratch := make([]room, 0, w.PlacementPool) // one placement pool buffer, reused per node
	for _, n := range inv.Nodes {
		if n.Kube == nil {
			continue // a compute host without a node is not a Kubernetes scale-down target
		}
		out = append(out, judge(n, workers, pdbs, podRooms, vmRooms, scratch, lg, o, w))
	}
	order(out)
	return out
}

// countWorkers counts the Ready, schedulable workers once (not once per node).
func countWorkers(inv model.Inventory) int {
	workers := 0
	for _, n := range inv.Nodes {
		if k := n.Kube; k != nil && k.Ready && k.Schedulable && !k.IsControlPlane() {
			workers++
		}
	}
	return workers
}

// order sorts candidates first, cheapest first (ties by name), then the others by name,
// and numbers the candidates' ranks.
func order(out []Victim) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Candidate != b.Candidate {
			return a.Candidate
		}
		if a.Candidate && a.Cost != b.Cost {
			return a.Cost < b.Cost
		}
		return a.Node < b.Node
	})
	r := 0
	for i := range out {
		out[i].Rank = 0
		if out[i].Candidate {
			r++
			out[i].Rank = r
		}
	}
}

// freeRooms lists the schedulable Ready workers and the enabled, up compute hosts with their
// free capacity, emptiest first.
func freeRooms(inv model.Inventory, w Weights) (pods, vms []room) {
	for _, n := range inv.Nodes {
		if k := n.Kube; k != nil && k.Ready && k.Schedulable && !k.IsControlPlane() {
			r := room{name: n.Name, cpu: k.Allocatable.MilliCPU - n.Requested.MilliCPU,
				mem: k.Allocatable.MemoryBytes - n.Requested.MemoryBytes, pods: k.Allocatable.Pods - n.Requested.Pods,
				node: &lazyNode{kube: k}}
			for _, t := range k.Taints {
				r.tainted = r.tainted || t.Effect == "NoSchedule" || t.Effect == "NoExecute"
			}
			pods = append(pods, r)
		}
		if c, h := n.Compute, n.Hypervisor; c != nil && h != nil && c.Enabled && c.Up && !c.ForcedDown {
			cap, ok := h.Room(w.CPURatio)
			if !ok {
				continue
			}
			r := room{name: n.Name, ram: int64(cap.MemoryMB.Free()), vcpu: cap.VCPU.Free(), zone: c.Zone}
			for _, vm := range n.VMs {
				for _, g := range vm.Groups() {
					if r.groups == nil {
						r.groups = map[string]bool{}
					}
					r.groups[g] = true
				}
			}
			vms = append(vms, r)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].cpu > pods[j].cpu })
	sort.Slice(vms, func(i, j int) bool { return vms[i].ram > vms[j].ram })
	return pods, vms
}

// legality indexes the enabled compute hosts by zone and by the anti-affinity groups they
// hold members of, once per ranking, so that a VM with no legal host is found without
// walking every host for every VM.
type legality struct {
	hosts     int
	inZone    map[string]int             // hosts per zone ("" : hosts with no zone, legal for any)
	zoneOf    map[string]string          // host -> zone
	withGroup map[string]map[string]bool // group -> hosts holding a member
}

func legalityOf(vmRooms []room) *legality {
	l := &legality{hosts: len(vmRooms), inZone: map[string]int{}, zoneOf: map[string]string{}, withGroup: map[string]map[string]bool{}}
	for _, r := range vmRooms {
		l.inZone[r.zone]++
		l.zoneOf[r.name] = r.zone
		for g := range r.groups {
			if l.withGroup[g] == nil {
				l.withGroup[g] = map[string]bool{}
			}
			l.withGroup[g][r.name] = true
		}
	}
	return l
}

// noLegalHost says why no enabled host but self may take vm ("" : some may).
func (l *legality) noLegalHost(vm model.VM, self string) string {
	if vm.Zone == "" && vm.AntiAffinity == "" {
		return ""
	}
	candidates := l.hosts
	inZone := func(h string) bool { z := l.zoneOf[h]; return vm.Zone == "" || z == "" || z == vm.Zone }
	if vm.Zone != "" {
		candidates = l.inZone[vm.Zone] + l.inZone[""]
	}
	if _, ok := l.zoneOf[self]; ok && inZone(self) {
		candidates--
	}
	if candidates <= 0 {
		return fmt.Sprintf("%s: zone %s has no other enabled compute host", vm.Name, vm.Zone)
	}
	blocked := map[string]bool{}
	for _, g := range vm.Groups() {
		for h := range l.withGroup[g] {
			if h != self && inZone(h) {
				blocked[h] = true
			}
		}
	}
	if len(blocked) < candidates {
		return ""
	}
	return fmt.Sprintf(
		"%s: anti-affinity group %s: members on %d of the %d other hosts it may use",
		vm.Name,
		vm.AntiAffinity,
		len(blocked),
		candidates,
	)
}

func judge(
	n model.Node,
	workers int,
	pdbs map[string]model.PDB,
	podRooms, vmRooms, scratch []room,
	lg *legality,
	o Options,
	w Weights,
) Victim {
	v := Victim{Node: n.Name, VMs: len(n.VMs)}
	k := n.Kube
	add := func(code model.ReasonCode, override model.Override, format string, a ...any) {
		v.Reasons = append(
			v.Reasons,
			model.Reason{Code: code, Severity: model.Blocks, Object: n.Name, Override: override, Message: fmt.Sprintf(format, a...)},
		)
	}
	if !k.Ready {
		// A dead node is not scaled down: its VMs cannot be live-migrated off a dead
		// nova-compute, and its way is a recovery (rebuilt elsewhere, fenced first).
		add(model.NodeIsDead, "", "is NotReady: a dead node's way is recover (fence it, rebuild its VMs elsewhere), not a scale-down")
	}
	if k.Annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"] == "true" {
		add(model.ScaleDownDisabled, "", `annotated cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`)
	}
	if k.Annotations["karpenter.sh/do-not-disrupt"] == "true" {
		add(model.DoNotDisrupt, "", `annotated karpenter.sh/do-not-disrupt: "true"`)
	}
	if c := n.Compute; c != nil && c.Reserved() {
		// Empty by design: removing it takes away the room a dead host's VMs are kept.
		add(model.FailoverReserve, "", "the failover reserve: kept empty for a dead host's VMs (%s)", c.DisabledReason)
	}
	if _, held := k.Annotations["drainctl.io/operation"]; held {
		add(model.HeldByOther, "", "under maintenance: an operation is recorded on it (drainctl.io/operation)")
	}
	if c := n.Compute; c != nil && !c.Enabled && !strings.HasPrefix(c.DisabledReason, "drainctl: ") {
		add(model.HeldByOther, "", "nova-compute disabled by someone else (%q)", c.DisabledReason)
	}
	if _, held := k.Annotations["weave.works/kured-node-lock"]; held {
		add(model.HeldByOther, "", "held by kured (weave.works/kured-node-lock)")
	}
	apiserver := false
	for _, p := range n.Pods {
		if strings.HasPrefix(p.Name, "kube-apiserver") && p.Namespace == "kube-system" {
			apiserver = true
		}
	}
	if k.IsControlPlane() || apiserver {
		add(model.ControlPlane, "", "is a control-plane node")
	}
	for _, sel := range o.ProtectedNodes {
		if sel.Matches(labels.Set(k.Labels)) {
			add(model.ProtectedNode, "", "matches protected selector %q in policy.protected_nodes", sel.String())
		}
	}
	self := 0
	if k.Ready && k.Schedulable && !k.IsControlPlane() {
		self = 1
	}
	if workers-self == 0 {
		add(model.LastSchedulable, "", "no other Ready, schedulable worker would remain")
	}
	// Its pods must be able to go, and to fit elsewhere.
	movable := make([]item, 0, len(n.Pods))
	for i := range n.Pods {
		p := &n.Pods[i]
		verdict, _ := ClassifyPod(*p, o)
		switch verdict {
		case Block: // every reason, as the plan gives them (one override lifted must not meet the next)
			v.Reasons = append(v.Reasons, PodBlocks(*p, o)...)
			continue
		case Stay:
			continue
		}
		if r := PDBReason(*p, pdbs, o); r != nil {
			v.Reasons = append(v.Reasons, model.Reason{Code: model.PDBExhausted, Severity: model.Blocks, Object: p.Key(),
				Message: "PodDisruptionBudget " + r.Message + " allows no disruption now"})
			continue
		}
		it := item{cpu: p.Requests.MilliCPU, mem: p.Requests.MemoryBytes, pod: p}
		if p.Constrained() {
			it.k8s = &lazyPod{pod: p}
		}
		movable = append(movable, it)
	}
	v.Pods = len(movable)
	if unplaced := place(movable, n.Name, podRooms, scratch, fitsPod); len(unplaced) > 0 {
		add(model.NoHostWithRoom, "", "%d pod(s) fit on no other node: %s", len(unplaced), strings.Join(first(unplaced, 3), ", "))
	}
	// Its VMs must fit on the other enabled, up compute hosts.
	for _, vm := range n.VMs {
		v.VMMemory += vm.RAMMB
		if r := VMReason(vm, o); r != nil && r.Severity == model.Blocks {
			v.Reasons = append(v.Reasons, *r)
		}
		if why := lg.noLegalHost(vm, n.Name); why != "" {
			add(model.NoLegalHost, "", "no legal host for VM %s", why)
		}
	}
	vmItems := make([]item, len(n.VMs))
	for i := range n.VMs {
		vmItems[i] = item{cpu: int64(n.VMs[i].VCPUs), mem: n.VMs[i].RAMMB, vm: &n.VMs[i]}
	}
	if unplaced := place(vmItems, n.Name, vmRooms, scratch, fitsVM); len(unplaced) > 0 {
		add(
			model.NoHostWithRoom,
			"",
			"%d VM(s) fit on no other enabled compute host: %s",
			len(unplaced),
			strings.Join(first(unplaced, 3), ", "),
		)
	}
	if k.Allocatable.MilliCPU > 0 {
		v.CPUUtil = float64(n.Requested.MilliCPU) / float64(k.Allocatable.MilliCPU)
	}
	v.Candidate = len(v.Reasons) == 0
	if v.Candidate { // where everything would go, kept for candidates only
		for i := range movable {
			movable[i].k8s = nil // needed while placing only (a built Pod is 1.3 KiB)
		}
		v.placed = append(movable, vmItems...)
	}
	v.Cost = w.PerPod*float64(v.Pods) + w.PerVMGiB*float64(v.VMMemory)/1024 + w.PerUtilPoint*100*v.CPUUtil
	return v
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}

// item is a pod or VM to place: its size (milliCPU and bytes, or vCPUs and MB) and where it went.
type item struct {
	cpu, mem int64
	pod      *model.Pod
	k8s      *lazyPod // for a pod that constrains where it runs
	vm       *model.VM
	dest     string
}

func (it item) name() string {
	if it.pod != nil {
		return it.pod.Key()
	}
	return it.vm.Name
}

// fitsPod and fitsVM test and take room for one item.
func fitsPod(r *room, it item) bool {
	if r.cpu < it.cpu || r.mem < it.mem || r.pods < 1 || !schedulableOn(it, r) {
		return false
	}
	r.cpu, r.mem, r.pods = r.cpu-it.cpu, r.mem-it.mem, r.pods-1
	return true
}

func fitsVM(r *room, it item) bool {
	if r.ram < it.mem || r.vcpu < float64(it.cpu) {
		return false
	}
	if ok, _ := it.vm.Legal(r.zone, r.groups); !ok {
		return false
	}
	r.ram, r.vcpu = r.ram-it.mem, r.vcpu-float64(it.cpu)
	return true
}

// place puts the items, largest first, each on the first of the emptiest other nodes with
// room (first-fit decreasing), so two never count on the same space, and returns those
// that fit nowhere. Only the pool emptiest nodes are tried: an item that fits on none of
// them counts as not fitting (conservative: a "yes" is always real).
func place(items []item, self string, rooms []room, scratch []room, fit func(*room, item) bool) []string {
	if len(items) == 0 {
		return nil
	}
	free := scratch[:0]
	for _, r := range rooms {
		if r.name != self {
			free = append(free, r)
			if len(free) == cap(scratch) {
				break
			}
		}
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].mem != items[j].mem {
			return items[i].mem > items[j].mem
		}
		return items[i].cpu > items[j].cpu
	})
	var unplaced []string
	for i := range items {
		for j := range free {
			if fit(&free[j], items[i]) {
				items[i].dest = free[j].name
				break
			}
		}
		if items[i].dest == "" {
			unplaced = append(unplaced, items[i].name())
		}
	}
	return unplaced
}

// schedulableOn checks taints and tolerations, nodeSelector and required node affinity the
// way the scheduler does (k8s.io/component-helpers). A pod without constraints fits any node
// without NoSchedule/NoExecute taints: the common case costs nothing.
func schedulableOn(it item, r *room) bool {
	if it.k8s == nil || (!r.tainted && !it.k8s.selects()) { // tolerations matter against taints only
		return !r.tainted
	}
	node, pod := r.node.get(), it.k8s.get()
	if _, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); bad {
		return false
	}
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return err == nil && ok
}
