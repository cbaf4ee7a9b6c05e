package model

// ReasonCode names why a node, pod or VM holds an operation up.
type ReasonCode string

// Reasons a plan is refused or must wait.
const (
	// Pods.
	PDBExhausted     ReasonCode = "PDBExhausted"     // a PDB allows no disruption now: eviction waits
	LocalStorage     ReasonCode = "LocalStorage"     // emptyDir or hostPath data would be lost
	BarePod          ReasonCode = "BarePod"          // no controller: nothing recreates it
	DaemonSetPod     ReasonCode = "DaemonSetPod"     // would come back at once
	SafeToEvictFalse ReasonCode = "SafeToEvictFalse" // cluster-autoscaler.kubernetes.io/safe-to-evict: "false"
	DoNotDisrupt     ReasonCode = "DoNotDisrupt"     // karpenter.sh/do-not-disrupt: "true"
	ProtectedPod     ReasonCode = "ProtectedPod"     // matches policy.protected_pods
	DrainSkip        ReasonCode = "DrainSkip"        // a skip rule or label: stays on the node
	LostForGood      ReasonCode = "LostForGood"      // an override evicts the last copy of something
	BadDrainOrder    ReasonCode = "BadDrainOrder"    // a drain-order label that is not a number
	// VMs.
	VMTaskInProgress ReasonCode = "VMTaskInProgress" // a task (resize, snapshot…) is running on it
	VMLocked         ReasonCode = "VMLocked"         // locked by its owner: moved as an admin may (a note), or stays (respect_locks)
	VMError          ReasonCode = "VMError"          // ERROR: Nova's fault says why; drainctl never resets it
	VMStopped        ReasonCode = "VMStopped"        // SHUTOFF and policy.move_stopped = false
	VMPinned         ReasonCode = "VMPinned"         // running, tied to its host's hardware: cannot live-migrate
	VMSkipped        ReasonCode = "VMSkipped"        // --skip-vm: left where it is, the node is not empty
	VMAsksToStay     ReasonCode = "VMAsksToStay"     // its maintenance policy keeps it on the node (stays, restart-in-place)
	VMPolicyUnknown  ReasonCode = "VMPolicyUnknown"  // its maintenance policy is none drainctl knows
	VMUnmovable      ReasonCode = "VMUnmovable"      // a state Nova moves neither live nor cold (SUSPENDED, SHELVED, RESCUE)
	Downtime         ReasonCode = "Downtime"         // a running VM moved cold: stopped, moved, started again
	VMAwaitsConfirm  ReasonCode = "VMAwaitsConfirm"  // VERIFY_RESIZE: someone's cold migration waits for confirm or revert
	NoHostWithRoom   ReasonCode = "NoHostWithRoom"   // the other enabled hosts cannot hold its VMs
	// FailoverRoomShort: the plan would leave less room for the next host failure than
	// [capacity] asks.
	FailoverRoomShort ReasonCode = "FailoverRoomShort"
	NoLegalHost       ReasonCode = "NoLegalHost" // its zone or a hard anti-affinity group leaves it no other host
	// Nodes.
	LastSchedulable   ReasonCode = "LastSchedulable"   // no other Ready, schedulable worker would remain
	ControlPlane      ReasonCode = "ControlPlane"      // a control-plane node (--allow-control-plane)
	ProtectedNode     ReasonCode = "ProtectedNode"     // matches policy.protected_nodes
	NodeNotFound      ReasonCode = "NodeNotFound"      // no such Node (nor compute host)
	NoNovaHost        ReasonCode = "NoNovaHost"        // a hypervisor node that maps to no compute service
	HostConflict      ReasonCode = "HostConflict"      // two nodes map to one compute host
	HeldByOther       ReasonCode = "HeldByOther"       // another actor holds the node's maintenance lease
	DisabledByOther   ReasonCode = "DisabledByOther"   // nova-compute was disabled by someone else
	ScaleDownDisabled ReasonCode = "ScaleDownDisabled" // cluster-autoscaler scale-down-disabled
	FailoverReserve   ReasonCode = "FailoverReserve"   // kept empty for a dead host's VMs ([recover] reserve_label)
	NodeIsDead        ReasonCode = "NodeIsDead"        // NotReady: its way is recover, not a scale-down
	// A recovery's preconditions (a dead host): each refuses it until it holds.
	NodeIsReady   ReasonCode = "NodeIsReady"   // the node is Ready (or not NotReady long enough): not dead
	ComputeIsUp   ReasonCode = "ComputeIsUp"   // its nova-compute still reports up
	ComputeIsDown ReasonCode = "ComputeIsDown" // its nova-compute is down: its VMs cannot be moved, only rebuilt
	NotFenced     ReasonCode = "NotFenced"     // neither --fence-cmd nor --confirm-fenced
	NotRecovered  ReasonCode = "NotRecovered"  // a VM a recovery cannot rebuild (its state)
	DiskLoss      ReasonCode = "DiskLoss"      // a rebuild from the VM's image loses its local disk: asked for by name
	// During a run.
	NotMoved ReasonCode = "NotMoved" // a VM whose move failed, or that became unmovable meanwhile
	// MachineNotEvictable: the cloudpool protects the node's machine (evictable=false).
	MachineNotEvictable ReasonCode = "MachineNotEvictable"
)

// Severity says what a reason does to an operation.
type Severity string

const (
	Blocks Severity = "blocks" // refused unless its override is given
	Waits  Severity = "waits"  // proceeds, but will wait (a PDB that allows nothing yet)
	Notes  Severity = "notes"  // information: what will be left as it is
)

// Override is the operator's permission that lifts a blocker, in the engine's words: the
// engine speaks no CLI. The views render it (a flag on the command line, a key in the TUI).
type Override string

// The overrides.
const (
	OverrideForce              Override = "force"                // bare pods, safe-to-evict, do-not-disrupt; no room; someone's disable
	OverrideDeleteEmptyDirData Override = "delete-emptydir-data" // local volumes' data is deleted
	OverrideDisableEviction    Override = "disable-eviction"     // delete instead of evict: PDBs are not asked
	OverrideIgnoreDaemonSets   Override = "ignore-daemonsets"
	OverrideAllowLastNode      Override = "allow-last-node"
	OverrideAllowControlPlane  Override = "allow-control-plane"
	OverrideColdMigrateRunning Override = "cold-migrate-running" // a running VM moved cold, with downtime
	OverrideSkipVM             Override = "skip-vm"              // the reason's Object (a VM) stays where it is
	OverrideVMPolicy           Override = "override-vm-policy"   // the reason's Object (a VM) moves although its own policy asks otherwise
	OverrideFenced             Override = "fenced"               // the dead machine is proven off: a fence command or the operator's word
	OverrideConfirmFenced      Override = "confirm-fenced"       // given: the operator's word that the machine is off
	OverrideFewerAtOnce        Override = "fewer-at-once"        // a campaign: fewer nodes at once, or less headroom asked
	OverrideIgnoreFailoverRoom Override = "ignore-failover-room" // [capacity]: less room kept for the next host failure
	OverrideAcceptDiskLoss     Override = "accept-disk-loss"     // recover: VMs rebuilt from their image lose their local disk
)

// Given is an override the operator gave, with the object it names (a VM for skip-vm and
// override-vm-policy).
type Given struct {
	Override Override `json:"override"`
	Object   string   `json:"object,omitempty"`
}

// Reason is one typed reason, naming the object and the override that lifts it.
type Reason struct {
	Code     ReasonCode `json:"code"`
	Severity Severity   `json:"severity"`
	Object   string     `json:"object"` // pod ns/name, VM name, node name
	// ObjectID is the VM's ID when Object is a VM: a suggested command names it by ID (its
	// name is its owner's choice, and need not be unique).
	ObjectID string   `json:"objectID,omitempty"`
	Message  string   `json:"message"`
	Override Override `json:"override,omitempty"`
	// By is the override given that makes it so (a loss under --force): a view names it.
	By Override `json:"by,omitempty"`
}

// Text is the object and the message, without the override (a view names it in its own terms).
func (r Reason) Text() string { return r.Object + ": " + r.Message }
