package ops

import "github.com/drainctl/drainctl/model"

// opTraits is what an operation's kind decides in the runner: one row per kind (traits),
// read where a decision is made, instead of checks on the kind scattered through the engine.
// A new operation is a row here, a planner (planners.go) and its steps (steps.go).
type opTraits struct {
	// leases: it takes the node's maintenance lease for its run (and abort and rollback can
	// stop it); keepsLease: it keeps the lease after, the node left in maintenance until
	// uncordon; leaseAfterAbort: it takes the lease once its abort step stopped the holder.
	leases, keepsLease, leaseAfterAbort bool
	// journals: it records its phases in the node's journal; ownsJournal: the journal names
	// it (it puts the node in maintenance); endPhase: the journal's phase when it ends well.
	journals, ownsJournal bool
	endPhase              string
	// empties: it empties the node, so it takes a node slot before its first emptying step,
	// its targets leave the fleet together, and the VMs that arrive while it runs go too.
	empties bool
	// oneVM: it works the plan's one VM, not the node's.
	oneVM bool
	// readsWhole: it plans on a whole read of Nova, every host afresh, not on its node's
	// host read afresh on the last whole read (Inventory.ReadNodes): its VM may be on any
	// host, or it rebuilds a dead host's VMs where every other host's state matters now.
	readsWhole bool
	// plansOnService: of Nova its plan reads only its node's compute service afresh (with
	// RunOptions.ByHost), on the last read: a campaign's way back decides on the service
	// alone, and its enable step reads the service again before it acts.
	plansOnService bool
	// rebuilds: a dead host's VMs are rebuilt elsewhere (Nova's evacuate), judged by
	// policy.VMRecover; no cold move is adopted, and the pods left are those of a dead node.
	rebuilds bool
	// judgesStays: its verify step judges again the VMs that stay (a resumed run).
	judgesStays bool
	// restoresCordon: it puts the node back as it was before drainctl came (a node cordoned
	// before stays cordoned).
	restoresCordon bool
	// tellsOwners: the owners of the VMs it moves are told ahead ([notify] owner_lead).
	tellsOwners bool
}

var traits = map[model.OpKind]opTraits{
	model.OpCordon: {leases: true, keepsLease: true, journals: true, ownsJournal: true},
	model.OpEvacuate: {leases: true, journals: true, ownsJournal: true, endPhase: PhaseDone, empties: true, judgesStays: true,
		tellsOwners: true},
	model.OpRecover: {leases: true, keepsLease: true, journals: true, ownsJournal: true, endPhase: PhaseDone,
		rebuilds: true, judgesStays: true, readsWhole: true},
	model.OpMigrate:  {oneVM: true, readsWhole: true, tellsOwners: true},
	model.OpUncordon: {plansOnService: true},
	model.OpAbort:    {journals: true, endPhase: PhaseAborted},
	model.OpRollback: {journals: true, leaseAfterAbort: true, restoresCordon: true},
}

// traitsOf is the row of the plan's operation (a kind without one has none of the traits).
func traitsOf(op model.OpKind) opTraits { return traits[op] }
