// Package policy decides, without any I/O, what an operation may do: which pods to evict
// and which block it, which VMs can move, which nodes may be emptied. Every "no" is a typed
// model.Reason naming the object and the override that lifts it. Rules are small functions
// applied in order; the first decisive one wins (cluster-autoscaler's drainability rules).
package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/drainctl/drainctl/model"
)

// Options are the operator's overrides and the configured policy.
type Options struct {
	// Now is the plan's time (the engine's clock): how old an owner's stays is. Zero: now.
	Now                time.Time
	Force              bool // bare pods, safe-to-evict=false, do-not-disrupt, VMs that cannot move
	IgnoreDaemonSets   bool // DaemonSet pods stay (default true)
	DeleteEmptyDirData bool
	DisableEviction    bool // delete instead of evict: PDBs are bypassed
	AllowControlPlane  bool
	AllowLastNode      bool
	// IgnoreFailoverRoom: a plan may leave less room for the next host failure than
	// [capacity] asks (--ignore-failover-room).
	IgnoreFailoverRoom bool
	ProtectedPods      []labels.Selector
	ProtectedNodes     []labels.Selector
	HypervisorPods     labels.Selector // carriers: evicted after the hypervisor is empty
	DrainRules         []DrainRule     // config.toml [[drain.order]]
	// MoveStopped: SHUTOFF VMs move cold ([policy] move_stopped, default true).
	MoveStopped bool
	// RespectLocks: a locked VM stays ([policy] respect_locks); by default it moves as an
	// admin may move it, the lock kept.
	RespectLocks bool
	// Maintenance: the VMs' own policies where their metadata names none ([policy.maintenance]).
	Maintenance model.MaintenanceConfig
	// ByHand: one VM an operator moves by itself (migrate): its maintenance policy is about
	// its host's maintenance, and does not apply.
	ByHand bool
	// NotAdmin: the Nova credentials are no admin's, so Nova refuses to move a locked server
	// (the engine sets it from the token's roles).
	NotAdmin bool
	// NodeRemoved: the node does not come back (scale-down): a VM asking to be restarted in
	// place is moved as its state says instead.
	NodeRemoved bool
	// ColdMigrateRunning: a running VM that cannot live-migrate moves cold, with downtime.
	ColdMigrateRunning bool
	// SkipVMs are VMs (names or IDs) left on the node knowingly (--skip-vm).
	SkipVMs []string
	// OverrideVMPolicies are VMs (names or IDs) moved as their state says although their own
	// maintenance policy asks otherwise (stays, restart-in-place, a value none of them).
	OverrideVMPolicies []string
	// AcceptDiskLoss: a recovery may rebuild a VM from its image, losing its local disk.
	AcceptDiskLoss bool
	// KeepLocalDisks: a recovery leaves a VM whose local disk a rebuild would lose, with
	// its reason (automatic recovery: that loss is a person's to accept).
	KeepLocalDisks bool
}

// ParseSelectors turns configured selectors into label selectors; the error names the bad one.
func ParseSelectors(key string, in []string) ([]labels.Selector, error) {
	out := make([]labels.Selector, 0, len(in))
	for _, s := range in {
		sel, err := labels.Parse(s)
		if err != nil {
			return nil, &model.FieldError{
				Key:     key,
				Problem: fmt.Sprintf("bad selector %q: %v", s, err),
				Fix:     `use the kubectl form, e.g. "app=db" or "tier in (db, cache)"`,
			}
		}
		out = append(out, sel)
	}
	return out, nil
}

// Verdict is what happens to a pod in an evacuation.
type Verdict int

const (
	Evict Verdict = iota // evicted in evict-pods
	Later                // a carrier pod: evicted once the hypervisor is empty
	Stay                 // left on the node, harmlessly (DaemonSet, mirror, finished)
	Block                // refuses the plan unless overridden
)

// PodRule is one rule; decisive=false passes the pod to the next rule.
type PodRule func(p model.Pod, o Options) (v Verdict, r *model.Reason, decisive bool)

// PodRules are the rules in order.
var PodRules = []PodRule{finished, mirror, daemonSet, drainSkip, protected, safeToEvictFalse, doNotDisrupt, localStorage, bare, carrier}

// ClassifyPod applies the rules; a pod no rule decides is evicted.
func ClassifyPod(p model.Pod, o Options) (Verdict, *model.Reason) {
	for _, rule := range PodRules {
		if v, r, ok := rule(p, o); ok {
			return v, r
		}
	}
	return Evict, nil
}

// PodBlocks is every reason the pod blocks an evacuation (ClassifyPod stops at the first):
// a plan shows them all at once, so an operator does not lift one override to meet the next.
func PodBlocks(p model.Pod, o Options) []model.Reason {
	var out []model.Reason
	for _, rule := range PodRules {
		v, r, ok := rule(p, o)
		if !ok {
			continue
		}
		if v != Block {
			break
		}
		out = append(out, *r)
	}
	return out
}

// Losses are what evicting the pod under the overrides loses for good: a bare pod (nothing
// recreates it), a local volume's data. Nil when nothing is.
func Losses(p model.Pod, o Options) []model.Reason {
	var out []model.Reason
	if p.OwnerKind == "" && o.Force && !p.Mirror {
		out = append(out, model.Reason{Code: model.LostForGood, Severity: model.Notes, Object: p.Key(), By: model.OverrideForce,
			Message: "bare pod: once evicted nothing recreates it"})
	}
	if p.LocalVolume != "" && o.DeleteEmptyDirData {
		out = append(
			out,
			model.Reason{Code: model.LostForGood, Severity: model.Notes, Object: p.Key(), By: model.OverrideDeleteEmptyDirData,
				Message: fmt.Sprintf("the data of local volume %q is deleted", p.LocalVolume)},
		)
	}
	return out
}

func reason(code model.ReasonCode, sev model.Severity, obj string, override model.Override, format string, a ...any) *model.Reason {
	return &model.Reason{Code: code, Severity: sev, Object: obj, Message: fmt.Sprintf(format, a...), Override: override}
}

func finished(p model.Pod, _ Options) (Verdict, *model.Reason, bool) {
	return Stay, nil, p.Finished() || p.Terminating
}

func mirror(p model.Pod, _ Options) (Verdict, *model.Reason, bool) {
	if !p.Mirror {
		return 0, nil, false
	}
	return Stay, reason(ControlPlaneNote, model.Notes, p.Key(), "", "static pod (mirror): managed by the kubelet, stays"), true
}

// ControlPlaneNote marks static pods; they never block and are never evicted.
const ControlPlaneNote model.ReasonCode = "StaticPod"

func daemonSet(p model.Pod, o Options) (Verdict, *model.Reason, bool) {
	if p.OwnerKind != "DaemonSet" {
		return 0, nil, false
	}
	if o.IgnoreDaemonSets {
		return Stay, nil, true
	}
	return Block, reason(model.DaemonSetPod, model.Blocks, p.Key(), model.OverrideIgnoreDaemonSets,
		"DaemonSet pod %s would be recreated on the node at once", p.OwnerName), true
}

func protected(p model.Pod, o Options) (Verdict, *model.Reason, bool) {
	for _, sel := range o.ProtectedPods {
		if sel.Matches(labels.Set(p.Labels)) {
			return Block, reason(model.ProtectedPod, model.Blocks, p.Key(), "",
				"matches protected selector %q in policy.protected_pods", sel.String()), true
		}
	}
	return 0, nil, false
}

func safeToEvictFalse(p model.Pod, o Options) (Verdict, *model.Reason, bool) {
	if p.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] != "false" || o.Force {
		return 0, nil, false
	}
	return Block, reason(model.SafeToEvictFalse, model.Blocks, p.Key(), model.OverrideForce,
		`annotated cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`), true
}

func doNotDisrupt(p model.Pod, o Options) (Verdict, *model.Reason, bool) {
	if p.Annotations["karpenter.sh/do-not-disrupt"] != "true" || o.Force {
		return 0, nil, false
	}
	return Block, reason(
		model.DoNotDisrupt,
		model.Blocks,
		p.Key(),
		model.OverrideForce,
		`annotated karpenter.sh/do-not-disrupt: "true"`,
	), true
}

func localStorage(p model.Pod, o Options) (Verdict, *model.Reason, bool) {
	if p.LocalVolume == "" || o.DeleteEmptyDirData || p.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "true" {
		return 0, nil, false
	}
	for _, v := range strings.Split(p.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"], ",") {
		if strings.TrimSpace(v) == p.LocalVolume {
			return 0, nil, false
		}
	}
	return Block, reason(model.LocalStorage, model.Blocks, p.Key(), model.OverrideDeleteEmptyDirData,
		"local volume %q would lose its data", p.LocalVolume), true
}

func bare(p model.Pod, o Options) (Verdict, *model.Reason, bool) {
	if p.OwnerKind != "" || o.Force {
		return 0, nil, false
	}
	return Block, reason(model.BarePod, model.Blocks, p.Key(), model.OverrideForce,
		"no controller: once evicted nothing recreates it (the last copy)"), true
}

func carrier(p model.Pod, o Options) (Verdict, *model.Reason, bool) {
	if o.HypervisorPods == nil || o.HypervisorPods.Empty() || !o.HypervisorPods.Matches(labels.Set(p.Labels)) {
		return 0, nil, false
	}
	return Later, nil, true
}

// PDBReason says that a pod's budget allows no disruption now (the eviction will wait for
// it), or nil. With DisableEviction budgets are bypassed, which is itself the override.
func PDBReason(p model.Pod, pdbs map[string]model.PDB, o Options) *model.Reason {
	if o.DisableEviction {
		return nil
	}
	for _, name := range p.PDBs {
		if b, ok := pdbs[p.Namespace+"/"+name]; ok && b.DisruptionsAllowed <= 0 {
			return &model.Reason{Code: model.PDBExhausted, Severity: model.Waits, Object: p.Key(), Message: name,
				Override: model.OverrideDisableEviction}
		}
	}
	return nil
}

// VMMove decides how an evacuation takes a VM off its host, and why when it does not:
// running VMs move live, stopped ones cold (it costs them nothing), a migration already
// under way is followed; a VM that cannot or may not move stays, with a typed reason that
// blocks the plan unless its own override is given (--skip-vm NAME leaves it, knowingly;
// --force leaves every such VM as it always did). The reason is nil when the VM moves as
// planned, and a Downtime note when a running VM is moved cold.
func VMMove(vm model.VM, o Options) (model.MoveMethod, *model.Reason) {
	method, r := vmMove(vm, o)
	// It would move (or moves only cold, pinned to its host's hardware): as its own policy asks.
	if (method == model.MoveLive || method == model.MoveCold || (r != nil && r.Code == model.VMPinned)) && !o.ByHand {
		method, r = asItsPolicy(vm, o, method, r)
	}
	if o.SkipVM(vm) && method != model.MoveStays { // left knowingly although it could move
		return model.MoveStays, &model.Reason{
			Code:     model.VMSkipped,
			Severity: model.Notes,
			Object:   vm.Name,
			ObjectID: vm.ID,
			By:       model.OverrideSkipVM,
			Message:  fmt.Sprintf("left on the node as asked (skipped): it would move %s", method),
		}
	}
	return method, withLock(vm, method, r)
}

// withLock adds to a moving VM's reason that it is locked: a lock guards its owner's own
// destructive calls, not an admin's maintenance, and is kept through the move. Said beside its
// own policy's note, never instead of it.
func withLock(vm model.VM, method model.MoveMethod, r *model.Reason) *model.Reason {
	const lock = "locked by its owner: moved as an admin may move it, the lock kept"
	switch {
	case !vm.Locked || method == model.MoveStays || method == model.MoveFollow || r != nil && r.Code == model.VMLocked:
		return r
	case r == nil:
		return &model.Reason{Code: model.VMLocked, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID, Message: lock}
	case r.Severity == model.Notes && !strings.Contains(r.Message, lock):
		said := *r
		said.Message += "; " + lock
		return &said
	}
	return r
}

// staysFor is a VM left where it is (on, "the node" or "the dead host") for a reason: a
// blocker with its override, a note when --skip-vm names it (left knowingly) or under
// --force (the node will not be empty).
func staysFor(
	vm model.VM,
	o Options,
	on string,
	code model.ReasonCode,
	override model.Override,
	format string,
	a ...any,
) (model.MoveMethod, *model.Reason) {
	r := &model.Reason{
		Code:     code,
		Severity: model.Blocks,
		Object:   vm.Name,
		ObjectID: vm.ID,
		Message:  fmt.Sprintf(format, a...),
		Override: override,
	}
	switch {
	case o.SkipVM(vm):
		r.Code, r.Severity, r.Override, r.By = model.VMSkipped, model.Notes, "", model.OverrideSkipVM
		r.Message = "left on " + on + " as asked (skipped): " + r.Message
	case o.Force:
		r.Severity = model.Notes
	}
	return model.MoveStays, r
}

func vmMove(vm model.VM, o Options) (model.MoveMethod, *model.Reason) {
	stays := func(code model.ReasonCode, override model.Override, format string, a ...any) (model.MoveMethod, *model.Reason) {
		return staysFor(vm, o, "the node", code, override, format, a...)
	}
	skip := model.OverrideSkipVM
	switch {
	case vm.Task == model.TaskMigrating || vm.Phase == model.PhaseMovingLive:
		return model.MoveFollow, nil // already moving: the engine follows it
	case vm.Phase == model.PhaseMovingCold && vm.Task.InColdMove():
		return model.MoveFollow, nil // a cold migration under way: followed
	case vm.Phase == model.PhaseAwaitingConfirm:
		return stays(
			model.VMAwaitsConfirm,
			skip,
			"VERIFY_RESIZE: a migration to this host waits for its confirm (openstack server migrate confirm, or revert)",
		)
	case vm.Locked && o.RespectLocks:
		return stays(model.VMLocked, skip, "the server is locked and policy.respect_locks = true (openstack server unlock)")
	case vm.Locked && o.NotAdmin:
		return stays(
			model.VMLocked,
			skip,
			"the server is locked, and Nova moves a locked server for an admin only: these credentials have no admin role "+
				"(openstack server unlock, or admin credentials)",
		)
	case vm.Locked:
		// A lock guards its owner's own destructive calls (delete, rebuild, resize), not an
		// admin's maintenance: Nova lets an admin move a locked server, the lock kept.
		unlocked := vm
		unlocked.Locked = false
		return VMMove(unlocked, o) // the lock is said once its policy has spoken (VMMove)
	case vm.Busy():
		return stays(model.VMTaskInProgress, skip, "task %q in progress", vm.TaskState)
	case vm.Phase == model.PhaseBroken:
		fault := vm.Fault
		if fault == "" {
			fault = "no fault recorded"
		}
		return stays(model.VMError, skip, "ERROR: %s (drainctl never resets a broken server: repair or delete it)", fault)
	case vm.Phase == model.PhaseStopped:
		if !o.MoveStopped {
			return stays(model.VMStopped, skip, "SHUTOFF and policy.move_stopped = false")
		}
		return model.MoveCold, nil
	case vm.Phase == model.PhaseRunning || vm.Phase == model.PhasePaused:
		if vm.Pinned == "" {
			return model.MoveLive, nil
		}
		if vm.Phase == model.PhasePaused { // Nova cold-migrates ACTIVE and stopped servers only
			return stays(model.VMPinned, skip, "paused and cannot live-migrate (%s): unpause it to move it cold, or leave it", vm.Pinned)
		}
		if o.ColdMigrateRunning {
			return model.MoveCold, Downtime(vm)
		}
		by := fmt.Sprintf("flavor %s has %s", vm.Flavor, vm.Pinned)
		if strings.HasPrefix(vm.Pinned, "port ") {
			by = "its " + vm.Pinned
		}
		return stays(model.VMPinned, model.OverrideColdMigrateRunning, "cannot live-migrate: %s (a cold move stops it, %s)", by, memory(vm))
	}
	// SUSPENDED, SHELVED, RESCUE, SOFT_DELETED…: Nova moves them neither live nor cold.
	return stays(
		model.VMUnmovable,
		skip,
		"status %s: Nova moves such a server neither live nor cold (resume, unrescue or shelve-offload it)",
		vm.Status,
	)
}

// Downtime is the note a running VM moved cold carries: it is stopped, moved, started again,
// because --cold-migrate-running was given (By: the flag that makes it so, not one to give).
func Downtime(vm model.VM) *model.Reason {
	return &model.Reason{Code: model.Downtime, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
		Message: fmt.Sprintf("moved cold: stopped, moved and started again (%s)", memory(vm)), By: model.OverrideColdMigrateRunning}
}

func memory(vm model.VM) string {
	if vm.RAMMB >= 1024 && vm.RAMMB%1024 == 0 {
		return fmt.Sprintf("%d GiB of memory", vm.RAMMB/1024)
	}
	return fmt.Sprintf("%d MiB of memory", vm.RAMMB)
}

// VMReason is the reason a VM does not move as planned, or nil (VMMove's reason).
func VMReason(vm model.VM, o Options) *model.Reason {
	_, r := VMMove(vm, o)
	return r
}

// SkipVM reports whether --skip-vm names the VM (by name or ID).
func (o Options) SkipVM(vm model.VM) bool { return names(o.SkipVMs, vm) }

// Given are the overrides turned on, typed (the views name them as flags: text.GivenFlags).
func (o Options) Given() []model.Given {
	var on []model.Given
	for _, f := range []struct {
		on bool
		o  model.Override
	}{{o.Force, model.OverrideForce}, {o.DeleteEmptyDirData, model.OverrideDeleteEmptyDirData}, {o.DisableEviction,
		model.OverrideDisableEviction},
		{o.AllowLastNode, model.OverrideAllowLastNode}, {o.ColdMigrateRunning, model.OverrideColdMigrateRunning}, {o.AcceptDiskLoss,
			model.OverrideAcceptDiskLoss}, {o.IgnoreFailoverRoom, model.OverrideIgnoreFailoverRoom}} {
		if f.on {
			on = append(on, model.Given{Override: f.o})
		}
	}
	for _, vm := range o.SkipVMs {
		on = append(on, model.Given{Override: model.OverrideSkipVM, Object: vm})
	}
	for _, vm := range o.OverrideVMPolicies {
		on = append(on, model.Given{Override: model.OverrideVMPolicy, Object: vm})
	}
	return on
}

// OverridesPolicy says whether the operator moves the VM whatever its own policy asks.
func (o Options) OverridesPolicy(vm model.VM) bool {
	return slices.ContainsFunc(o.OverrideVMPolicies, func(s string) bool { return o.OverrideNames(s, vm) })
}

// OverrideNames says whether an --override-vm-policy value names the VM: its name or ID,
// project=ID (every VM of the project) or policy=P (every VM whose policy is P).
func (o Options) OverrideNames(s string, vm model.VM) bool {
	if id, ok := strings.CutPrefix(s, "project="); ok {
		return id != "" && vm.ProjectID == id
	}
	if p, ok := strings.CutPrefix(s, "policy="); ok {
		asked, _ := VMPolicyOf(vm, o)
		return string(asked) == p
	}
	return s == vm.Name || s == vm.ID
}

func names(list []string, vm model.VM) bool {
	for _, s := range list {
		if s == vm.Name || s == vm.ID {
			return true
		}
	}
	return false
}
