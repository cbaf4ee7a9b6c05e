package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
)

// operation is what an operation's kind is, one row per kind, the one table of them: how it
// is planned, what its kind decides in the runner, and what a view knows of it (RowOf). A new
// operation is a row here and its steps (steps.go).
type operation struct {
	plan planner
	opTraits
	view model.OpRow
}

// operationTable is every operation the engine knows. Its planners reach back to it (through
// the traits they read), so it is made where it is first read, not as a package variable.
func operationTable() map[model.OpKind]operation {
	return map[model.OpKind]operation{
		model.OpCordon: {
			plan:     onNode((*Engine).planCordon),
			opTraits: opTraits{leases: true, keepsLease: true, journals: true, ownsJournal: true},
			view:     model.OpRow{Exclusive: true},
		},
		model.OpEvacuate: {
			plan: onNode((*Engine).planEvacuate),
			opTraits: opTraits{leases: true, journals: true, ownsJournal: true, endPhase: PhaseDone, empties: true, judgesStays: true,
				tellsOwners: true},
			view: model.OpRow{Empties: true, Exclusive: true},
		},
		model.OpRecover: {
			plan: onNode((*Engine).planRecoverNode),
			opTraits: opTraits{leases: true, keepsLease: true, journals: true, ownsJournal: true, endPhase: PhaseDone,
				rebuilds: true, judgesStays: true, readsWhole: true},
			view: model.OpRow{DeadNode: true, OneNode: true, Exclusive: true},
		},
		model.OpMigrate: {
			plan: func(e *Engine, _ context.Context, inv model.Inventory, _ model.OpKind, vm string, ro RunOptions) (model.Plan, error) {
				return e.planMigrate(inv, vm, ro)
			},
			opTraits: opTraits{oneVM: true, readsWhole: true, tellsOwners: true},
			view:     model.OpRow{OnVM: true},
		},
		model.OpUncordon: {
			plan:     onNode((*Engine).planUncordon),
			opTraits: opTraits{plansOnService: true},
			view:     model.OpRow{Cordoned: true},
		},
		model.OpAbort: {
			plan:     onNode((*Engine).planAbort),
			opTraits: opTraits{journals: true, endPhase: PhaseAborted},
			view:     model.OpRow{OneNode: true},
		},
		model.OpRollback: {
			plan:     onNode((*Engine).planRollback),
			opTraits: opTraits{journals: true, leaseAfterAbort: true, restoresCordon: true},
			view:     model.OpRow{OneNode: true},
		},
	}
}

var (
	operationsOnce sync.Once
	operations     map[model.OpKind]operation
)

// operationOf is the kind's row (a kind without one, scale-down's report, has none of it).
func operationOf(op model.OpKind) (operation, bool) {
	operationsOnce.Do(func() { operations = operationTable() })
	o, ok := operations[op]
	return o, ok
}

// traitsOf is what the plan's operation decides in the runner.
func traitsOf(op model.OpKind) opTraits {
	o, _ := operationOf(op)
	return o.opTraits
}

// RowOf is what a view knows of an operation's kind: the TUI's checks before it plans, its
// confirm pane, the verbs' arguments, a plan's summary and a record's reader ask the row,
// never the kind.
func RowOf(op model.OpKind) model.OpRow {
	o, _ := operationOf(op)
	return o.view
}

// Works is what the plan works on: its VM for an operation on one VM, else its node.
func Works(p model.Plan) string {
	if RowOf(p.Op).OnVM {
		return p.VM
	}
	return p.Node
}

// Summary is the one line a confirmation shows: "evacuate compute-3: 7 VMs, 40 pods, 2 held
// by web-pdb".
func Summary(p model.Plan) string {
	s := fmt.Sprintf("%s %s", p.Op, Works(p))
	if r := RowOf(p.Op); r.Empties || r.DeadNode {
		s += fmt.Sprintf(": %d VMs, %d pods", len(p.VMs), len(p.Pods)+len(p.Carriers))
	}
	return s + p.WaitsAndBlockers()
}

// opTraits is what an operation's kind decides in the runner, read where a decision is made,
// instead of checks on the kind scattered through the engine.
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

// planner builds an operation's plan from an inventory read: a column of the operations'
// table (operations.go).
type planner func(e *Engine, ctx context.Context, inv model.Inventory, op model.OpKind, target string, ro RunOptions) (model.Plan, error)

// nodePlan is what a node's planner starts from: the node as read, and the plan it fills.
type nodePlan struct {
	p       *model.Plan
	inv     model.Inventory
	node    model.Node
	ro      RunOptions
	leaving map[string]bool // the nodes leaving with this one (a batch, a campaign's wave)
	// cordoned, computeDone, journaled: the node as the steps will find it.
	cordoned, computeDone, journaled bool
}

func (n *nodePlan) step(kind model.StepKind, done bool, detail string) {
	n.p.Steps = append(n.p.Steps, model.Step{Kind: kind, Done: done, Detail: detail})
}

// onNode makes a node's planner a planner: it finds the node, reads what every node plan
// starts from, and notes a nova-compute someone else disabled.
func onNode(f func(e *Engine, ctx context.Context, n *nodePlan) error) planner {
	return func(e *Engine, ctx context.Context, inv model.Inventory, op model.OpKind, target string, ro RunOptions) (model.Plan, error) {
		node, ok := inv.Node(target)
		if !ok || node.Kube == nil {
			return model.Plan{}, &UsageError{
				Problem: fmt.Sprintf("no Kubernetes node named %q", target),
				Hint:    "the node list shows their names",
			}
		}
		p := model.Plan{Op: op, Node: node.Name, Host: node.Host}
		if node.Hypervisor != nil {
			p.Provider = node.Hypervisor.ID
		}
		n := &nodePlan{p: &p, inv: inv, node: node, ro: ro, leaving: map[string]bool{}}
		for _, l := range ro.Leaving {
			n.leaving[l] = true
		}
		k := node.Kube
		n.cordoned = !k.Schedulable && k.HasTaint(e.cfg.Policy.TaintKey)
		n.computeDone = node.Compute == nil || !node.Compute.Enabled
		_, n.journaled = ReadJournal(*k)
		if node.Compute != nil && !node.Compute.Enabled && !DisabledByDrainctl(*node.Compute) {
			p.Reasons = append(p.Reasons, model.Reason{Code: model.DisabledByOther, Severity: model.Notes, Object: node.Host,
				Message: fmt.Sprintf(
					"nova-compute already disabled by someone else (%q); drainctl leaves it so",
					node.Compute.DisabledReason,
				)})
		}
		err := f(e, ctx, n)
		return p, err
	}
}

// noteHolder notes, on a plan of an operation that takes the node's lease, that another
// drainctl holds it: a run now is refused at its lease, and a plan nothing else refuses must
// not read as one that will run. One plan asked by itself (Plan), not the many of a
// forecast (PlanOn), which would read a lease a node.
func (e *Engine) noteHolder(ctx context.Context, p *model.Plan) error {
	if !traitsOf(p.Op).leases || p.Node == "" {
		return nil
	}
	holder, until, err := e.kube.LeaseHolder(ctx, p.Node)
	if err != nil {
		return err
	}
	if holder != "" && holder != e.o.Holder && !e.mayReplace(holder) {
		p.Reasons = append(p.Reasons, model.Reason{Code: model.HeldByOther, Severity: model.Notes, Object: p.Node,
			Message: fmt.Sprintf(
				"%s holds the node's lease (until %s): a run now is refused by it; abort asks it to stop",
				holder,
				until.UTC().Format(time.RFC3339),
			)})
	}
	return nil
}

// planCordon: cordon and disable nova-compute; what would refuse emptying the node is said,
// but a control-plane node may be cordoned (that empties nothing).
func (e *Engine) planCordon(_ context.Context, n *nodePlan) error {
	if r := policy.HostReason(n.node, n.inv, n.ro.Policy); r != nil {
		n.p.Reasons = append(n.p.Reasons, *r)
	}
	for _, r := range policy.NodeReasons(n.node, n.inv, n.leaving, n.ro.Policy) {
		if r.Code != model.ControlPlane {
			n.p.Reasons = append(n.p.Reasons, r)
		}
	}
	e.planMaintenance(n)
	if !n.p.Pending() || onlyLeasePending(*n.p) {
		markAllDone(n.p) // nothing to change: no lease either, so a rerun makes no mutating call
	}
	return nil
}

// planEvacuate: cordon, disable nova-compute, then move the VMs and evict the pods (with
// VMsOnly, the VMs alone: the pods are not ours to judge).
func (e *Engine) planEvacuate(_ context.Context, n *nodePlan) error {
	if r := policy.HostReason(n.node, n.inv, n.ro.Policy); r != nil {
		n.p.Reasons = append(n.p.Reasons, *r)
	}
	if n.ro.VMsOnly {
		n.step(model.StepLease, false, "take the maintenance lease")
		n.step(model.StepDisableCompute, n.computeDone, computeDetail(n.node))
		e.planEvacuation(n.p, n.node, n.inv, n.leaving, n.ro)
		if onlyLeasePending(*n.p) {
			markAllDone(n.p)
		}
		return nil
	}
	n.p.Reasons = append(n.p.Reasons, policy.NodeReasons(n.node, n.inv, n.leaving, n.ro.Policy)...)
	e.planMaintenance(n)
	e.planEvacuation(n.p, n.node, n.inv, n.leaving, n.ro)
	// A node removed for good (scale-down) does not return to start the VMs drainctl stopped
	// on it for restart-in-place: they are started where they were moved.
	if j, _ := ReadJournal(*n.node.Kube); n.ro.Policy.NodeRemoved && len(j.Restart) > 0 && e.nova != nil {
		n.step(
			model.StepRestartVMs,
			false,
			fmt.Sprintf(
				"start the %d VM(s) drainctl stopped for restart-in-place where they were moved: the node does not return",
				len(j.Restart),
			),
		)
	}
	if !n.p.Pending() || onlyLeasePending(*n.p) {
		markAllDone(n.p) // nothing to change: no lease either, so a rerun makes no mutating call
	}
	return nil
}

// planMaintenance is the start of cordon and evacuate: the lease, the cordon, nova-compute.
func (e *Engine) planMaintenance(n *nodePlan) {
	n.step(model.StepLease, false, "take the maintenance lease")
	n.step(model.StepCordon, n.cordoned, "unschedulable + taint "+e.cfg.Policy.TaintKey)
	n.step(model.StepDisableCompute, n.computeDone, computeDetail(n.node))
}

func (e *Engine) planRecoverNode(ctx context.Context, n *nodePlan) error {
	return e.planRecover(ctx, n.p, n.node, n.inv, n.ro)
}

// planUncordon: a recovered node's service forced up and its taint gone first, then
// nova-compute enabled (if drainctl disabled it), schedulable, the journal and lease released.
func (e *Engine) planUncordon(_ context.Context, n *nodePlan) error {
	k, node := n.node.Kube, n.node
	j, journaled := ReadJournal(*k)
	e.planWayBack(n.p, node, n.ro)
	enableDone := node.Compute == nil || node.Compute.Enabled || (!DisabledByDrainctl(*node.Compute) && !n.ro.ForceCompute) ||
		node.Compute.Reserved() // a failover reserve stays disabled: no canary either
	if e.cfg.Return.Canary && e.nova != nil && !enableDone { // planned only where it proves something
		n.step(
			model.StepCanary,
			false,
			fmt.Sprintf("boot a canary on %s, ACTIVE with a console log within %s, delete it", node.Host, e.cfg.Return.CanaryTimeout),
		)
	}
	enable := "re-enable nova-compute if drainctl disabled it"
	if node.Compute != nil && node.Compute.Reserved() {
		enable = "nova-compute stays disabled: the failover reserve"
	}
	n.step(model.StepEnableCompute, enableDone, enable)
	e.planRestart(n, j)
	n.step(model.StepUncordon, k.Schedulable && !k.HasTaint(e.cfg.Policy.TaintKey), "schedulable, taint removed")
	if n.ro.ReturnVMs && journaled && e.nova != nil {
		n.step(
			model.StepReturnVMs,
			len(j.Left) == 0,
			fmt.Sprintf(
				"bring home the %d VM(s) that left it, each checked first (moved, resized or deleted since: left where it is)",
				len(j.Left),
			),
		)
	}
	n.step(model.StepRelease, !n.journaled, "clear the journal, release the lease")
	if n.ro.VMsOnly {
		n.p.Steps = novaHalf(n.p.Steps)
	}
	return nil
}

// novaHalf is the way back's Nova half, what is left of it (VMsOnly: the daemon's, after
// someone else uncordoned the node): the host proven (the canary), its service enabled, the
// VMs stopped for restart-in-place started again, then the journal closed, since a node
// left with its journal at "done" would count as under maintenance for the ranking and the
// proxy forever. The Kubernetes half is someone else's.
func novaHalf(steps []model.Step) []model.Step {
	half := []model.StepKind{model.StepCanary, model.StepEnableCompute, model.StepRestartVMs, model.StepRelease}
	var out []model.Step
	for _, s := range steps {
		if slices.Contains(half, s.Kind) && !s.Done {
			out = append(out, s)
		}
	}
	return out
}

// planRestart: the VMs its journal says drainctl stopped for restart-in-place, started again
// where they are (planned only when there are some).
func (e *Engine) planRestart(n *nodePlan, j Journal) {
	if len(j.Restart) > 0 && e.nova != nil {
		n.step(model.StepRestartVMs, false, fmt.Sprintf("start the %d VM(s) stopped for restart-in-place, on this host", len(j.Restart)))
	}
}

// planAbort: abort the node's migrations (and revert drainctl's unconfirmed cold moves),
// stop its evictions, and ask another process working the node to stop.
func (e *Engine) planAbort(ctx context.Context, n *nodePlan) error {
	node := n.node
	inflight := 0
	for _, m := range node.Migrations {
		if m.SourceCompute == node.Host && m.InProgress() {
			inflight++
		}
	}
	// Another process working the node is stopped too: it holds the node's lease.
	holder, _, err := e.kube.LeaseHolder(ctx, node.Name)
	if err != nil {
		return err
	}
	elsewhere := holder != "" && holder != e.o.Holder && !e.mayReplace(holder)
	waiting := coldWaiting(node, n.inv) // the journal's cold moves not confirmed: reverted once Nova proves each
	inflight += len(waiting)
	detail := fmt.Sprintf("abort %d migration(s) in progress, stop evictions", inflight)
	if len(waiting) > 0 {
		detail += fmt.Sprintf(", revert the unconfirmed cold migration(s) Nova shows drainctl asked: %s", strings.Join(waiting, ", "))
	}
	if elsewhere {
		detail += "; ask " + holder + " to stop"
	}
	n.step(model.StepAbort, inflight == 0 && !e.isRunning(node.Name) && !elsewhere, detail)
	return nil
}

// planRollback: abort, then put the node back as it was before drainctl came.
func (e *Engine) planRollback(ctx context.Context, n *nodePlan) error {
	if err := e.planAbort(ctx, n); err != nil {
		return err
	}
	k, node := n.node.Kube, n.node
	j, _ := ReadJournal(*k)
	enableDone := node.Compute == nil || node.Compute.Enabled || !DisabledByDrainctl(*node.Compute)
	enable := "re-enable nova-compute if drainctl disabled it"
	if node.Compute != nil && node.Compute.Reserved() {
		enable = "nova-compute stays disabled: the failover reserve"
	}
	n.step(model.StepEnableCompute, enableDone, enable)
	e.planRestart(n, j)
	wasCordoned := n.journaled && !j.WasSchedulable
	n.step(model.StepUncordon, (k.Schedulable || wasCordoned) && !k.HasTaint(e.cfg.Policy.TaintKey), "back to how it was before")
	n.step(model.StepRelease, !n.journaled, "clear the journal, release the lease")
	return nil
}
