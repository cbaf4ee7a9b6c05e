package model

import "fmt"

// OpKind is an operation drainctl runs on a node or VM.
type OpKind string

const (
	OpCordon   OpKind = "cordon"
	OpEvacuate OpKind = "evacuate"
	OpMigrate  OpKind = "migrate"
	OpUncordon OpKind = "uncordon"
	OpAbort    OpKind = "abort"
	OpRollback OpKind = "rollback"
	// OpRecover fails a dead host over: fenced first, its VMs rebuilt elsewhere (Nova's
	// evacuate), its pods force-deleted by Kubernetes (the out-of-service taint).
	OpRecover OpKind = "recover"
	// OpScaleDown names scale-down's final report (an evacuation, then delete and terminate);
	// it is not planned by itself.
	OpScaleDown OpKind = "scale-down"
)

// StepKind is one step of a plan. Every step is idempotent: it first checks whether the
// cluster is already as it should be.
type StepKind string

const (
	StepLease          StepKind = "lease"           // take the node's maintenance lease
	StepCordon         StepKind = "cordon"          // unschedulable + maintenance taint
	StepDisableCompute StepKind = "disable-compute" // nova-compute disabled with drainctl's reason
	StepMigrateVMs     StepKind = "migrate-vms"     // live-migrate every VM away
	StepEvictPods      StepKind = "evict-pods"      // evict every evictable pod
	StepEvictCarriers  StepKind = "evict-carriers"  // then the pods that carried the VMs
	StepVerify         StepKind = "verify"          // the node holds nothing that had to go
	StepAbort          StepKind = "abort"           // abort migrations in progress
	StepCanary         StepKind = "canary"          // a test server booted on the host, ACTIVE, its console written, deleted
	StepEnableCompute  StepKind = "enable-compute"  // re-enable nova-compute if drainctl disabled it
	StepRestartVMs     StepKind = "restart-vms"     // start the VMs stopped for restart-in-place, where they are
	StepUncordon       StepKind = "uncordon"        // remove the taint, schedulable again
	StepReturnVMs      StepKind = "return-vms"      // bring home the VMs that left the node (--return-vms)
	StepRelease        StepKind = "release"         // give the lease back
	StepDeleteNode     StepKind = "delete-node"     // scale-down: the Node object goes
	StepTerminate      StepKind = "terminate"       // scale-down: the machine goes (cloudpool)
	// A recovery's own steps (a dead host), and its way back (uncordon of a recovered node).
	StepFence        StepKind = "fence"          // the machine is proven off: --fence-cmd, or the operator's word
	StepForceDown    StepKind = "force-down"     // nova-compute forced down (Nova lets its VMs be evacuated)
	StepOutOfService StepKind = "out-of-service" // taint node.kubernetes.io/out-of-service: Kubernetes deletes its pods, detaches volumes
	StepTakeReserve  StepKind = "take-reserve"   // the failover reserve enabled: the rebuilds land there first
	StepRebuildVMs   StepKind = "rebuild-vms"    // Nova's evacuate: each VM rebuilt on another host
	StepPodsGone     StepKind = "pods-gone"      // wait until the node's pods are deleted
	StepForceUp      StepKind = "force-up"       // the host runs again: its service forced up
	StepInService    StepKind = "in-service"     // the out-of-service taint removed
	StepBeReserve    StepKind = "be-reserve"     // the host back, empty: the failover reserve in the used one's place
	// StepSlot is not planned: an evacuation reports it only when it had to wait for one of
	// the cluster's node slots (concurrency.nodes) before moving anything.
	StepSlot StepKind = "slot"
)

// Step is a planned step and whether the cluster already shows it done.
type Step struct {
	Kind   StepKind `json:"kind"`
	Detail string   `json:"detail"`
	Done   bool     `json:"done"`
	// Beside: it runs beside the step before it, not after it (a campaign's pods evicted
	// while its VMs move): the planner's choice, from the caller's request.
	Beside bool `json:"beside,omitempty"`
}

// Plan is what an operation will do, reviewed before anything changes (--dry-run prints it).
type Plan struct {
	Op   OpKind `json:"op"`
	Node string `json:"node,omitempty"`
	Host string `json:"host,omitempty"` // the node's compute host, "" when it has none
	// Provider is the host's Placement resource provider (its hypervisor's ID).
	Provider string `json:"provider,omitempty"`
	VM       string `json:"vm,omitempty"`     // migrate: the VM
	Target   string `json:"target,omitempty"` // migrate --to: the compute host it goes to (its node's, by [mapping])
	Steps    []Step `json:"steps"`
	// What the plan moves.
	VMs      []VM     `json:"vms,omitempty"`
	Pods     []Pod    `json:"pods,omitempty"`     // evicted in evict-pods
	Carriers []Pod    `json:"carriers,omitempty"` // evicted after the hypervisor is empty
	Reasons  []Reason `json:"reasons,omitempty"`
}

// Blockers are the reasons that refuse the plan.
func (p Plan) Blockers() []Reason { return p.withSeverity(Blocks) }

// Losses are what the plan's overrides lose for good (a bare pod, a local volume's data).
func (p Plan) Losses() []Reason {
	var out []Reason
	for _, r := range p.Reasons {
		if r.Code == LostForGood {
			out = append(out, r)
		}
	}
	return out
}

// Waits are the reasons the plan will wait on.
func (p Plan) Waits() []Reason { return p.withSeverity(Waits) }

func (p Plan) withSeverity(s Severity) []Reason {
	var out []Reason
	for _, r := range p.Reasons {
		if r.Severity == s {
			out = append(out, r)
		}
	}
	return out
}

// Pending reports whether any step still has work to do.
func (p Plan) Pending() bool {
	for _, s := range p.Steps {
		if !s.Done {
			return true
		}
	}
	return false
}

// WaitsAndBlockers is the end of a plan's one-line summary (ops.Summary): ", 2 held by
// web-pdb, 1 blocker(s)".
func (p Plan) WaitsAndBlockers() string {
	s := ""
	pdbs := map[string]int{}
	var order []string
	for _, r := range p.Waits() {
		if r.Code == PDBExhausted {
			name := r.Message
			if pdbs[name] == 0 {
				order = append(order, name)
			}
			pdbs[name]++
		}
	}
	for _, name := range order {
		s += fmt.Sprintf(", %d held by %s", pdbs[name], name)
	}
	if b := len(p.Blockers()); b > 0 {
		s += fmt.Sprintf(", %d blocker(s)", b)
	}
	return s
}
