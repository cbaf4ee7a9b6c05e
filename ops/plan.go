package ops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
)

// Plan builds the plan for op on target (a node, or a VM for migrate) from a fresh read of
// the cluster (with ro.ByHost, its node's host afresh on the last whole read of Nova). It
// changes nothing on the cluster but forgetting the fence records of nodes seen Ready
// (ForgetFences).
func (e *Engine) Plan(ctx context.Context, op model.OpKind, target string, ro RunOptions) (model.Plan, error) {
	inv, err := e.readFor(ctx, op, []string{target}, ro)
	if err != nil {
		return model.Plan{}, err
	}
	return e.planRead(ctx, inv, op, target, ro)
}

// readFor reads the cluster for plans on targets: the view's cache joined again
// (FromCache), their hosts afresh on the last whole read of Nova (ByHost), or all of it.
func (e *Engine) readFor(ctx context.Context, op model.OpKind, targets []string, ro RunOptions) (model.Inventory, error) {
	switch {
	case ro.FromCache:
		return e.inv.Rejoin(ctx)
	case ro.ByHost && traitsOf(op).plansOnService:
		return e.inv.ReadServices(ctx, targets...)
	case ro.ByHost && !traitsOf(op).readsWhole && !e.cfg.Capacity.Need().On():
		// With [capacity] on, an emptying plan reads the cloud whole: the room for the next
		// failure is every host's, and another actor's VMs landed anywhere since the last whole
		// read (up to wholeReadEvery) may have taken it.
		return e.inv.ReadNodes(ctx, targets...)
	case ro.ByHost && ro.Seen != nil && ro.To != "": // a one-VM move, read just before, to a host it names
		return e.inv.ReadVMTo(ctx, *ro.Seen, ro.To)
	}
	return e.inv.Read(ctx)
}

// planRead is Plan on a read already made (a batch's plans share one).
func (e *Engine) planRead(ctx context.Context, inv model.Inventory, op model.OpKind, target string, ro RunOptions) (model.Plan, error) {
	e.ForgetFences(ctx) // a node seen Ready: its last fence proves nothing any more
	p, err := e.planOn(ctx, inv, op, target, ro)
	if err != nil {
		return p, err
	}
	return p, e.noteHolder(ctx, &p)
}

// planOn builds the plan from an inventory already read: a campaign plans each of its nodes
// from one read, not one read (or join) a node. Each operation's planner is in its row of the
// operations' table (operations.go).
func (e *Engine) planOn(ctx context.Context, inv model.Inventory, op model.OpKind, target string, ro RunOptions) (model.Plan, error) {
	row, ok := operationOf(op)
	if !ok {
		return model.Plan{}, &UsageError{Problem: fmt.Sprintf("unknown operation %q", op)}
	}
	return row.plan(e, ctx, inv, op, target, e.asCredentials(ro))
}

// asCredentials is ro with what the Nova credentials allow (Nova moves a locked server for an
// admin only), and the engine's time for the policy's clock.
func (e *Engine) asCredentials(ro RunOptions) RunOptions {
	ro.Policy.NotAdmin = e.nova != nil && !e.nova.Admin()
	ro.Policy.Now = e.now() // an owner's stays is as old as the engine's clock says
	return ro
}

func (e *Engine) isRunning(node string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.running[node]
	return ok
}

func onlyLeasePending(p model.Plan) bool {
	for _, s := range p.Steps {
		if !s.Done && s.Kind != model.StepLease && s.Kind != model.StepVerify {
			return false
		}
	}
	return true
}

func markAllDone(p *model.Plan) {
	for i := range p.Steps {
		p.Steps[i].Done = true
	}
}

func computeDetail(n model.Node) string {
	switch {
	case n.Compute == nil:
		return "no nova-compute service on this node"
	case !n.Compute.Enabled:
		return "nova-compute already disabled"
	}
	return "disable nova-compute on " + n.Host
}

// planEvacuation adds the VMs and, unless ro.VMsOnly, the pods, with their reasons and steps.
func (e *Engine) planEvacuation(p *model.Plan, node model.Node, inv model.Inventory, leaving map[string]bool, ro RunOptions) {
	pdbs := map[string]model.PDB{}
	for _, b := range inv.PDBs {
		pdbs[b.Namespace+"/"+b.Name] = b
	}
	var movable []model.VM
	p.VMs = make([]model.VM, len(node.VMs))
	methods := map[model.MoveMethod]int{}
	j, _ := ReadJournal(*node.Kube)
	for i, vm := range node.VMs {
		method, r := policy.VMMove(vm, ro.Policy)
		vm.Method = method
		vm.Policy, vm.PolicyFrom = policy.VMPolicyOf(vm, ro.Policy)
		p.VMs[i] = vm
		methods[method]++
		if moverOf(method).InPlace && vm.Phase != model.PhaseRunning && slices.Contains(j.Restart, vm.ID) {
			r = &model.Reason{Code: model.Downtime, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
				Message: "restart-in-place: stopped by drainctl for it; started on the node again when it returns"}
		}
		if r != nil {
			p.Reasons = append(p.Reasons, *r)
		}
		if moverOf(method).Leaves {
			movable = append(movable, vm)
		}
	}
	if r := policy.ComputeDownReason(node, movable); r != nil {
		p.Reasons = append(p.Reasons, *r)
	}
	p.Reasons = append(p.Reasons, policy.PlacementReasons(node, movable, inv, leaving, e.cpuRatio())...)
	if r := policy.CapacityReason(node, movable, inv, leaving, e.cpuRatio(), ro.Policy); r != nil {
		p.Reasons = append(p.Reasons, *r)
	}
	if r := policy.FailoverReason(node, movable, inv, leaving, e.cpuRatio(), e.cfg.Capacity.Need(), ro.Policy); r != nil {
		p.Reasons = append(p.Reasons, *r)
	}
	vmDetail := moveDetail(methods)
	if !e.NovaConfigured() || node.Compute == nil {
		vmDetail = "no VMs to move: this node has no compute service"
	}
	waiting := coldWaiting(node, inv)
	if len(waiting) > 0 {
		vmDetail += fmt.Sprintf("; confirm %d cold migration(s) of drainctl's: %s", len(waiting), strings.Join(waiting, ", "))
	}
	told := 0
	for m, n := range methods {
		if moverOf(m).Notice != "" {
			told += n
		}
	}
	switch lead := e.OwnerLead(ro); { // owners.go: told ahead
	case told == 0 || !traitsOf(p.Op).tellsOwners || e.cfg.Notify.OwnerLead <= 0:
	case lead > 0:
		vmDetail += fmt.Sprintf("; each owner told %s ahead in its VM's metadata (%s)", lead, model.NoticeKey)
	default:
		vmDetail += fmt.Sprintf("; each owner told in its VM's metadata (%s), the lead waived for this run", model.NoticeKey)
	}
	p.Steps = append(p.Steps, model.Step{Kind: model.StepMigrateVMs, Done: len(node.VMs) == 0 && len(waiting) == 0, Detail: vmDetail})
	if ro.VMsOnly {
		return
	}
	skipped := 0
	for _, pod := range node.Pods {
		v, r := policy.ClassifyPod(pod, ro.Policy)
		switch v {
		case policy.Block:
			p.Reasons = append(p.Reasons, policy.PodBlocks(pod, ro.Policy)...)
		case policy.Evict:
			p.Pods = append(p.Pods, pod)
			p.Reasons = append(p.Reasons, policy.Losses(pod, ro.Policy)...)
			if w := policy.PDBReason(pod, pdbs, ro.Policy); w != nil {
				p.Reasons = append(p.Reasons, *w)
			}
			if _, _, bad := policy.DrainOrder(pod, ro.Policy); bad != nil {
				p.Reasons = append(p.Reasons, *bad)
			}
		case policy.Later:
			p.Carriers = append(p.Carriers, pod)
		case policy.Stay:
			if r != nil && r.Code == model.DrainSkip {
				skipped++
			}
		}
	}
	// The pods in eviction order, so the plan lists them as they will go.
	groups := policy.GroupByOrder(p.Pods, ro.Policy)
	p.Pods = p.Pods[:0]
	for _, g := range groups {
		p.Pods = append(p.Pods, g.Pods...)
	}
	sort.SliceStable(p.Reasons, func(i, j int) bool { return severityRank(p.Reasons[i].Severity) < severityRank(p.Reasons[j].Severity) })
	// A campaign's pods go while its VMs move (the pods other than the hypervisor's carriers
	// wait for no VM; the carriers still go after the VMs). A person's evacuation keeps its
	// steps one after the other, as its plan shows them.
	beside := ro.Campaign != "" && len(p.Steps) > 0 && p.Steps[len(p.Steps)-1].Kind == model.StepMigrateVMs
	p.Steps = append(
		p.Steps,
		model.Step{Kind: model.StepEvictPods, Done: len(p.Pods) == 0, Detail: evictDetail(groups, len(p.Pods), skipped), Beside: beside},
		model.Step{
			Kind:   model.StepEvictCarriers,
			Done:   len(p.Carriers) == 0,
			Detail: fmt.Sprintf("then %d hypervisor pod(s)", len(p.Carriers)),
		},
		model.Step{Kind: model.StepVerify, Done: false, Detail: "nothing that had to go is left"},
	)
}

// coldWaiting names the VMs the node's journal says drainctl cold-migrated off it that have
// not ended their move (still moving, or waiting in VERIFY_RESIZE for the confirm): their
// server already shows the destination, so the node looks empty, but the step is not done.
func coldWaiting(node model.Node, inv model.Inventory) []string {
	j, ok := ReadJournal(*node.Kube)
	if !ok || len(j.ColdMoves) == 0 {
		return nil
	}
	ours := map[string]bool{}
	for _, c := range j.ColdMoves {
		ours[c.VM] = true
	}
	var out []string
	for _, n := range inv.Nodes {
		for _, vm := range n.VMs {
			if ours[vm.ID] && (vm.Phase == model.PhaseMovingCold || vm.Phase == model.PhaseAwaitingConfirm) {
				out = append(out, vm.Name)
			}
		}
	}
	return out
}

// moveDetail says how the node's VMs move: "move 5 VM(s): 3 live, 1 cold, 1 stays".
func moveDetail(methods map[model.MoveMethod]int) string {
	n := 0
	var parts []string
	byDefault := 0
	for _, m := range moverOrder {
		if c := methods[m]; c > 0 {
			n += c
			parts = append(parts, fmt.Sprintf("%d %s", c, m))
			if moverOf(m).Default {
				byDefault += c
			}
		}
	}
	if n == 0 {
		return "move 0 VM(s)"
	}
	if byDefault == n {
		return fmt.Sprintf("live-migrate %d VM(s)", n)
	}
	return fmt.Sprintf("move %d VM(s): %s", n, strings.Join(parts, ", "))
}

// evictDetail says how many pods go, in which order groups, and how many skip rules keep.
func evictDetail(groups []policy.PodGroup, pods, skipped int) string {
	s := fmt.Sprintf("evict %d pod(s)", pods)
	if len(groups) > 1 {
		parts := make([]string, len(groups))
		for i, g := range groups {
			parts[i] = fmt.Sprintf("order %d: %d", g.Order, len(g.Pods))
		}
		s += " in " + fmt.Sprint(len(groups)) + " groups, each gone before the next (" + strings.Join(parts, ", ") + ")"
	}
	if skipped > 0 {
		s += fmt.Sprintf("; %d pod(s) stay by drain skip rules", skipped)
	}
	return s
}

func severityRank(s model.Severity) int {
	switch s {
	case model.Blocks:
		return 0
	case model.Waits:
		return 1
	}
	return 2
}

// cpuRatio is Nova's vCPU allocation ratio, from config, for checking room for VMs.
func (e *Engine) cpuRatio() float64 { return e.cfg.ScaleDown.CPUAllocationRatio }

func (e *Engine) planMigrate(inv model.Inventory, target string, ro RunOptions) (model.Plan, error) {
	for _, n := range inv.Nodes {
		for _, vm := range n.VMs {
			if vm.ID != target && vm.Name != target {
				continue
			}
			// By hand, the VM moves as asked; a return moves it as its own policy says, as it left.
			method, r := policy.VMMove(
				vm,
				policy.Options{MoveStopped: ro.Policy.MoveStopped, ColdMigrateRunning: ro.Policy.ColdMigrateRunning,
					ByHand: !ro.Returning, Maintenance: ro.Policy.Maintenance, OverrideVMPolicies: ro.Policy.OverrideVMPolicies},
			)
			vm.Method = method
			p := model.Plan{Op: model.OpMigrate, Node: n.Name, Host: n.Host, VM: vm.Name, Target: ro.To, VMs: []model.VM{vm}}
			if r != nil {
				p.Reasons = append(p.Reasons, *r)
			}
			if ro.To != "" {
				dest, ok := inv.Node(ro.To)
				switch {
				case !ok || dest.Compute == nil:
					return p, &UsageError{Problem: fmt.Sprintf("no compute host named %q", ro.To), Hint: "the node list shows the hosts"}
				case dest.Host == n.Host:
					return p, &UsageError{Problem: fmt.Sprintf("%s is already on %s", vm.Name, ro.To)}
				}
				p.Target = dest.Host // Nova's name of the node's host ([mapping]), not the node's
				// As the picker and an evacuation judge it.
				if r := policy.TargetReason(vm, dest, e.cpuRatio()); r != nil {
					p.Reasons = append(p.Reasons, *r)
				} else if r := policy.FailoverMoveReason(vm, n.Name, dest.Name, inv, e.cpuRatio(), e.cfg.Capacity.Need(),
					ro.Policy); r != nil {
					p.Reasons = append(p.Reasons, *r)
				}
			}
			verb := cmp.Or(moverOf(method).verb, "move") + " " // one that stays: its reason says why not
			detail := verb + vm.Name + ", the scheduler picks the host"
			if ro.To != "" {
				detail = verb + vm.Name + " to " + ro.To
			}
			p.Steps = []model.Step{{Kind: model.StepMigrateVMs, Detail: detail}}
			return p, nil
		}
	}
	return model.Plan{}, &UsageError{
		Problem: fmt.Sprintf("no VM named %q", target),
		Hint:    "use the VM's name or ID; the VM list shows them",
	}
}
