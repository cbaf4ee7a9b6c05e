package policy

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/drainctl/drainctl/model"
)

// A dead host's recovery: its VMs are rebuilt elsewhere by Nova's evacuate, which Nova
// allows for servers ACTIVE, SHUTOFF or ERROR with no task in progress.

// Disk fates of a VM rebuilt elsewhere.
const (
	DiskOnVolume = "keeps its disk (boots from a volume)"
	DiskShared   = "keeps its disk (shared instance storage)"
	DiskLost     = "rebuilt from its image: its local disk is lost"
)

// VMRecover is how a recovery treats a VM of a dead host: rebuilt elsewhere, followed (an
// evacuation under way), or left with a reason (blocking, unless --force or --skip-vm);
// and what becomes of its disk (a loss is a LostForGood note).
func VMRecover(vm model.VM, sharedStorage bool, o Options) (model.MoveMethod, []model.Reason) {
	stays := func(format string, a ...any) (model.MoveMethod, []model.Reason) {
		m, r := staysFor(vm, o, "the dead host", model.NotRecovered, model.OverrideSkipVM, format, a...)
		return m, []model.Reason{*r}
	}
	switch {
	case vm.Phase == model.PhaseRebuilding || vm.Task == model.TaskRebuilding:
		return model.MoveFollow, nil
	case vm.Busy():
		return stays(
			"task %q was in progress when the host died: Nova evacuates no server with a task (openstack server set --state "+
				"active, then run again)",
			vm.TaskState,
		)
	case vm.Phase != model.PhaseRunning && vm.Phase != model.PhaseStopped && vm.Phase != model.PhaseBroken:
		return stays(
			"status %s: Nova evacuates ACTIVE, SHUTOFF and ERROR servers only (openstack server set --state active, then run again)",
			vm.Status,
		)
	}
	if o.SkipVM(vm) {
		return model.MoveStays, []model.Reason{
			{Code: model.VMSkipped, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID, By: model.OverrideSkipVM,
				Message: "left on the dead host as asked (skipped): it would be rebuilt elsewhere"},
		}
	}
	if DiskFate(vm, sharedStorage) == DiskLost && o.KeepLocalDisks {
		return model.MoveStays, []model.Reason{{Code: model.VMSkipped, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
			Message: fmt.Sprintf(
				"stays on the dead host: a rebuild would lose its local disk (%d GB), a loss automatic recovery leaves to a "+
					"person (a recovery by hand that accepts it rebuilds the VM)",
				vm.DiskGB,
			)}}
	}
	var notes []model.Reason
	// Its owner's stays is about maintenance: on a dead host it would mean staying down. It is
	// rebuilt all the same, and said (the plan, the ledger, the notice), not merely counted.
	if p, from := VMPolicyOf(vm, o); p == model.PolicyStays && !o.OverridesPolicy(vm) {
		notes = append(notes, model.Reason{Code: model.VMAsksToStay, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
			Message: fmt.Sprintf(
				"its owner asks that it stay (stays, %s): on a dead host that is staying down, so it is rebuilt elsewhere all the same",
				cmp.Or(from, "the default"),
			)})
	}
	if DiskFate(vm, sharedStorage) == DiskLost {
		notes = append(notes, model.Reason{Code: model.LostForGood, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
			Message: fmt.Sprintf(
				"%s (%d GB): nothing written since it was created survives ([recover] shared_storage = true if the disks "+
					"are on shared storage)",
				DiskLost,
				vm.DiskGB,
			)})
	}
	return model.MoveRebuild, notes
}

// RebuildOrder sorts a dead host's VMs as they are rebuilt: the highest recovery priority
// first, then the largest.
func RebuildOrder(vms []model.VM, prio model.PriorityConfig, honour model.Honour) {
	of := func(vm model.VM) int { p, _, _ := prio.Of(vm, honour); return p }
	slices.SortStableFunc(vms, func(a, b model.VM) int {
		return cmp.Or(cmp.Compare(of(b), of(a)), cmp.Compare(b.RAMMB, a.RAMMB))
	})
}

// LeftForRoom is a VM of a dead host that the other hosts have no room for: left there, with
// its reason.
type LeftForRoom struct {
	VM     model.VM
	Reason model.Reason
}

// ByPriority orders a dead host's VMs to rebuild by their recovery priority (highest first,
// then the largest), and keeps the longest run of them the other hosts have room for (as
// CapacityReason judges room); the rest, the lowest, are left, each with its reason.
func ByPriority(
	node model.Node,
	vms []model.VM,
	inv model.Inventory,
	cpuRatio float64,
	o Options,
	prio model.PriorityConfig,
) (fits []model.VM, left []LeftForRoom) {
	sorted := slices.Clone(vms)
	RebuildOrder(sorted, prio, o.Maintenance.Honour)
	room := func(n int) bool { return CapacityReason(node, sorted[:n], inv, nil, cpuRatio, o) == nil }
	if room(len(sorted)) {
		return sorted, nil
	}
	n := sort.Search(len(sorted), func(n int) bool { return !room(n) }) - 1 // the longest run with room
	n = max(n, 0)
	for _, vm := range sorted[n:] {
		p, from, _ := prio.Of(vm, o.Maintenance.Honour)
		msg := fmt.Sprintf(
			"left on the dead host: the other hosts have room for %d of its %d VM(s) to rebuild, and its recovery priority %d "+
				"(%s) is among the lowest; the higher are rebuilt first",
			n,
			len(sorted),
			p,
			from,
		)
		left = append(
			left,
			LeftForRoom{
				VM:     vm,
				Reason: model.Reason{Code: model.NoHostWithRoom, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID, Message: msg},
			},
		)
	}
	return sorted[:n], left
}

// DiskFate says what a rebuild elsewhere does to the VM's disk.
func DiskFate(vm model.VM, sharedStorage bool) string {
	switch {
	case vm.VolumeBacked:
		return DiskOnVolume
	case sharedStorage:
		return DiskShared
	}
	return DiskLost
}

// DeathRule is what makes a machine dead enough to recover.
type DeathRule struct {
	NotReadyFor time.Duration // NotReady at least this long: the node lifecycle controller's word
	Quiet       time.Duration // [recover] heartbeat_timeout: a heartbeat that stood still this long
	// KubeletSilence: a kubelet Lease not renewed for Quiet stands for NotReady (automatic
	// recovery, which watched it stand still on drainctl's own clock: a renewTime is the
	// node's clock, and alone would let a node whose clock runs behind look dead).
	KubeletSilence bool
}

// DeadHost says why a node may not be recovered (fenced and failed over) now; nil reasons
// when it may. fenced: the operator gave --fence-cmd or --confirm-fenced, or the node's
// journal records a fence already. Nova's own verdict is not waited for: a nova-compute that
// has not reported for Quiet (Nova's clock) is taken for down, and recover forces it down.
func DeadHost(node model.Node, now time.Time, rule DeathRule, fenced bool) []model.Reason {
	var out []model.Reason
	block := func(code model.ReasonCode, override model.Override, format string, a ...any) {
		out = append(
			out,
			model.Reason{Code: code, Severity: model.Blocks, Object: node.Name, Message: fmt.Sprintf(format, a...), Override: override},
		)
	}
	k := node.Kube
	silentKubelet := rule.KubeletSilence && !k.Heartbeat.IsZero() && now.Sub(k.Heartbeat) >= rule.Quiet
	switch {
	case silentKubelet:
	case rule.KubeletSilence && !k.Heartbeat.IsZero():
		block(model.NodeIsReady, "", "its kubelet renewed its Lease %s ago: the machine runs (heartbeat_timeout is %s)",
			now.Sub(k.Heartbeat).Round(time.Second), rule.Quiet)
	case k.Ready:
		block(model.NodeIsReady, "", "the node is Ready: recover is for a dead machine (evacuate empties a live one)")
	case k.ReadySince.IsZero():
		block(model.NodeIsReady, "", "the node has never reported NotReady: recover is for a dead machine")
	case now.Sub(k.ReadySince) < rule.NotReadyFor:
		block(model.NodeIsReady, "", "NotReady for %s only; a recovery waits until it has been NotReady for %s ([recover] not_ready_for)",
			now.Sub(k.ReadySince).Round(time.Second), rule.NotReadyFor)
	}
	if c := node.Compute; c != nil && c.Up && !c.ForcedDown && c.Silent < rule.Quiet {
		block(
			model.ComputeIsUp,
			"",
			"nova-compute on %s still reports up (its last report %s ago): the machine may still run its VMs (a VM rebuilt "+
				"elsewhere would run twice on one disk)",
			node.Host,
			c.Silent.Round(time.Second),
		)
	}
	if !fenced {
		block(model.NotFenced, model.OverrideFenced,
			"the machine is not proven off: a fence command that powers it off (exit 0), or your word that it is off")
	}
	return out
}

// ComputeDownReason refuses moving VMs off a host whose nova-compute is down or forced down:
// Nova moves a VM neither live nor cold without its source's compute service (its API
// refuses a cold move; a live one fails in the conductor), and a machine that is down is
// recovered (fenced, its VMs rebuilt), not evacuated. nil when the host is up or nothing
// would move.
func ComputeDownReason(node model.Node, moving []model.VM) *model.Reason {
	c := node.Compute
	if c == nil || len(moving) == 0 || (c.Up && !c.ForcedDown) {
		return nil
	}
	state := "down"
	if c.ForcedDown {
		state = "forced down"
	}
	return &model.Reason{Code: model.ComputeIsDown, Severity: model.Blocks, Object: node.Name,
		Message: fmt.Sprintf(
			"nova-compute on %s is %s: Nova moves none of its %d VM(s) live or cold; a dead machine's way is recover (X), not evacuate",
			node.Host,
			state,
			len(moving),
		)}
}

// OutOfService is Kubernetes' taint for a node that is shut down for good (non-graceful node
// shutdown, GA in 1.28): the pods on it that do not tolerate it are force-deleted and their
// volumes detached, so that their replacements may start elsewhere.
var OutOfService = model.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: "NoExecute"}

// Outlives reports whether the pod tolerates the out-of-service taint: Kubernetes leaves it
// on the dead node.
func Outlives(p model.Pod) bool {
	t := corev1.Taint{Key: OutOfService.Key, Value: OutOfService.Value, Effect: corev1.TaintEffect(OutOfService.Effect)}
	for _, tol := range p.Tolerations() {
		c := corev1.Toleration{
			Key:      tol.Key,
			Operator: corev1.TolerationOperator(tol.Operator),
			Value:    tol.Value,
			Effect:   corev1.TaintEffect(tol.Effect),
		}
		if c.ToleratesTaint(klog.Background(), &t, false) {
			return true
		}
	}
	return false
}
