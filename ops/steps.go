package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/poll"
)

// stepFunc carries out one kind of plan step. Each re-reads the cluster first, so a step
// another actor already did is a no-op, and returns a line for the report.
type stepFunc func(r *runner, ctx context.Context) (string, error)

// stepTable is every step kind the engine knows; a plan step without an entry is a bug that
// TestEveryStepKindHasAFunction catches.
func stepTable() map[model.StepKind]stepFunc {
	return map[model.StepKind]stepFunc{
		model.StepCordon:         (*runner).cordon,
		model.StepDisableCompute: (*runner).disableCompute,
		model.StepMigrateVMs:     (*runner).migrateVMs,
		model.StepEvictPods:      func(r *runner, ctx context.Context) (string, error) { return r.evictStep(ctx, false) },
		model.StepEvictCarriers:  func(r *runner, ctx context.Context) (string, error) { return r.evictStep(ctx, true) },
		model.StepVerify:         (*runner).verify,
		model.StepAbort:          (*runner).abort,
		model.StepCanary:         (*runner).canary,
		model.StepEnableCompute:  (*runner).enableCompute,
		model.StepRestartVMs:     (*runner).restartVMs,
		model.StepUncordon:       (*runner).uncordon,
		model.StepRelease:        (*runner).release,
		model.StepFence:          (*runner).fence,
		model.StepForceDown:      (*runner).forceDown,
		model.StepOutOfService:   (*runner).outOfService,
		model.StepRebuildVMs:     (*runner).rebuildVMs,
		model.StepPodsGone:       (*runner).podsGone,
		model.StepForceUp:        (*runner).forceUp,
		model.StepInService:      (*runner).inService,
		model.StepReturnVMs:      (*runner).returnVMs,
	}
}

// do runs one step.
func (r *runner) do(ctx context.Context, kind model.StepKind) (string, error) {
	f, ok := r.e.steps[kind]
	if !ok {
		return "", fmt.Errorf("step %s is not implemented", kind)
	}
	return f(r, ctx)
}

func (r *runner) cordon(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	r.journal(PhaseCordoned, "")
	k, _ := e.kube.Node(p.Node)
	if !k.Schedulable && k.HasTaint(e.cfg.Policy.TaintKey) {
		return "already cordoned", nil
	}
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	if err := e.kube.Cordon(ctx, p.Node, model.Taint{Key: e.cfg.Policy.TaintKey, Value: "drainctl", Effect: "NoSchedule"}); err != nil {
		return "", err
	}
	r.nodeChanged("cordoned")
	return "unschedulable, tainted " + e.cfg.Policy.TaintKey, nil
}

// computeService re-reads the node's nova-compute service; false when it has none.
func (r *runner) computeService(ctx context.Context) (model.ComputeService, bool, error) {
	return r.e.serviceOn(ctx, r.plan.Host)
}

// serviceOn reads host's nova-compute service now: every decision on a service (disable it,
// send a VM there, bring one home, explain a wait) opens with this one read. False when
// there is no Nova, no host, or no service on it.
func (e *Engine) serviceOn(ctx context.Context, host string) (model.ComputeService, bool, error) {
	if e.nova == nil || host == "" {
		return model.ComputeService{}, false, nil
	}
	svcs, err := e.nova.ComputeServices(ctx, host)
	if err != nil || len(svcs) == 0 {
		return model.ComputeService{}, false, err
	}
	for _, s := range svcs {
		if s.Host == host {
			return s, true, nil
		}
	}
	return svcs[0], true, nil
}

func (r *runner) disableCompute(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	svc, ok, err := r.computeService(ctx)
	switch {
	case err != nil:
		return "", err
	case !ok && (e.nova == nil || p.Host == ""):
		return "no compute service", nil
	case !ok || !svc.Enabled:
		return "already disabled", nil
	}
	reason := ComputeReason(p.Op, e.o.Holder, r.ro.Why, e.now())
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	if _, err := e.nova.SetServiceEnabled(ctx, p.Host, false, reason); err != nil {
		return "", err
	}
	r.nodeChanged("nova-compute disabled: " + reason)
	return reason, nil
}

func (r *runner) migrateVMs(ctx context.Context) (string, error) {
	if r.e.nova == nil || r.plan.Host == "" {
		return "no VMs: no compute service", nil
	}
	r.journal(PhaseMigrating, "")
	return r.migrate(ctx)
}

func (r *runner) evictStep(ctx context.Context, carriers bool) (string, error) {
	r.mu.Lock()
	beside := r.beside
	r.mu.Unlock()
	if !beside { // beside the VMs' moves, the journal keeps saying "migrating"
		r.journal(PhaseEvicting, "")
	}
	return r.evict(ctx, carriers)
}

// abort stops the operation working the node, wherever it runs: one of this process stops
// at once; another process is asked (a request on the node) and waited for. Then its
// migrations in progress are aborted, and a rollback takes the node's lease for the steps
// that put it back.
func (r *runner) abort(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	if done := e.Cancel(p.Node); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if err := r.stopHolder(ctx); err != nil {
		return "", err
	}
	if traitsOf(p.Op).leaseAfterAbort {
		if err := r.holdLease(ctx, r.stop); err != nil {
			return "", err
		}
	}
	defer r.clearCancel(context.WithoutCancel(ctx))
	if e.nova == nil || p.Host == "" {
		return "no migrations", nil
	}
	var said []string
	for _, m := range moverOrder { // each method's moves undone its way: live aborted, cold reverted
		if undo := movers[m].undo; undo != nil {
			s, err := undo(r, ctx)
			if err != nil {
				return "", err
			}
			if s != "" {
				said = append(said, s)
			}
		}
	}
	return strings.Join(said, "; "), nil
}

func (r *runner) enableCompute(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	svc, ok, err := r.computeService(ctx)
	switch {
	case err != nil:
		return "", err
	case !ok && (e.nova == nil || p.Host == ""):
		return "no compute service", nil
	case !ok || svc.Enabled:
		return "already enabled", nil
	case !DisabledByDrainctl(svc) && !r.ro.ForceCompute:
		return fmt.Sprintf("left disabled: someone else disabled it (%q); the force override re-enables it", svc.DisabledReason), nil
	case canaryFailed(svc) && !r.canaryPassed && !r.ro.ForceCompute:
		return fmt.Sprintf(
			"left disabled: %s; uncordon runs the canary again (the force override enables it unproven)",
			svc.DisabledReason,
		), nil
	}
	if err := r.stillHolder(ctx); err != nil {
		return "", err
	}
	if _, err := e.nova.SetServiceEnabled(ctx, p.Host, true, ""); err != nil {
		return "", err
	}
	e.inv.Touched(p.Host) // a host back at work: the next plan by host (a campaign's next node) reads it again
	r.nodeChanged("nova-compute enabled")
	return "enabled", nil
}

func (r *runner) uncordon(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	k, _ := e.kube.Node(p.Node)
	if j, ok := ReadJournal(k); ok && traitsOf(p.Op).restoresCordon && !j.WasSchedulable {
		// The node was cordoned before drainctl came: only the taint goes.
		if !k.HasTaint(e.cfg.Policy.TaintKey) {
			return "was cordoned before: left cordoned", nil
		}
	}
	if k.Schedulable && !k.HasTaint(e.cfg.Policy.TaintKey) {
		return "already schedulable", nil
	}
	if err := e.kube.Uncordon(ctx, p.Node, e.cfg.Policy.TaintKey); err != nil {
		return "", err
	}
	r.nodeChanged("uncordoned")
	return "schedulable", nil
}

func (r *runner) release(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	r.clearCancel(ctx)
	if k, ok := e.kube.Node(p.Node); ok {
		if j, ok := ReadJournal(k); ok && j.Fenced != "" {
			// A recovery's proof ends with it. Not deleted (an identity that may not): it
			// proves nothing once the node has been Ready anyway.
			if err := e.kube.DeleteRecord(ctx, fenceKey(p.Node)); err != nil {
				r.nodeChanged("fence record left (it proves nothing once the node is Ready): " + err.Error())
			}
		}
	}
	if err := e.kube.SetAnnotation(ctx, p.Node, JournalAnnotation, ""); err != nil {
		return "", err
	}
	if err := e.kube.ReleaseLease(ctx, p.Node, e.o.Holder); err != nil {
		return "", err
	}
	return "journal cleared, lease released", nil
}

// sourceFreedWithin bounds the wait for a move's source share to go from the host's
// provider once the move has ended: Nova deletes it a moment after (measured on a real Nova:
// 0.4 s after a confirm; a live migration's before its record says completed).
const sourceFreedWithin = time.Minute

// placementHeld is the second proof that the host is empty: no consumer but the VMs left on
// purpose holds an allocation on its Placement provider (Nova's servers list can miss a
// server whose build or move is not recorded on the host yet; Placement's claim cannot).
// Each consumer left is explained from Nova's world (explainHeld): a share Nova keeps on
// purpose is said (notes), one a move that has just ended still holds is waited for
// (bounded), anything else holds the host.
func (r *runner) placementHeld(ctx context.Context, staying map[string]bool) (held, notes []string, err error) {
	if r.plan.Provider == "" {
		return nil, nil, nil
	}
	deadline := r.e.now().Add(sourceFreedWithin)
	for {
		consumers, err := r.e.nova.ProviderConsumers(ctx, r.plan.Provider)
		if errors.Is(err, ErrNoPlacement) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		var going []string
		held, notes = nil, nil
		x := &heldExplainer{r: r}
		for _, c := range consumers {
			if staying[c] {
				continue
			}
			switch why, verdict, err := x.explain(ctx, c); {
			case err != nil:
				return nil, nil, err
			case verdict == heldKept:
				notes = append(notes, why)
			case verdict == heldGoing:
				going = append(going, why)
			default:
				held = append(held, why)
			}
		}
		if len(going) == 0 || r.e.now().After(deadline) {
			for _, g := range going {
				held = append(held, fmt.Sprintf("%s, still there %s after its move ended", g, sourceFreedWithin))
			}
			slices.Sort(held)
			slices.Sort(notes)
			return held, notes, nil
		}
		if !poll.Sleep(ctx, r.e.o.Poll) {
			return nil, nil, ctx.Err()
		}
	}
}

// What a consumer left on the host's provider is.
const (
	heldByNoOne = iota // holds the host: nothing Nova shows explains it
	heldKept           // kept by Nova on purpose until something happens: said
	heldGoing          // a move that has ended still holds it: Nova frees it in a moment
)

// heldExplainer explains the consumers left on one host's provider, reading what it needs
// of Nova once per pass.
type heldExplainer struct {
	r     *runner
	moves map[string]model.Migration // moves from the host, by their UUID (the source's share)
	up    *bool                      // the host's nova-compute reports up
}

func (x *heldExplainer) explain(ctx context.Context, consumer string) (string, int, error) {
	e, host := x.r.e, x.r.plan.Host
	records, err := e.nova.MigrationsOf(ctx, consumer)
	if err != nil {
		return "", 0, err
	}
	if len(records) > 0 { // a server's own allocation
		vm, err := e.nova.Server(ctx, consumer)
		if statusOf(err) == 404 {
			return "the allocation of deleted server " + consumer, heldGoing, nil
		} else if err != nil {
			return "", 0, err
		}
		evacuated := slices.ContainsFunc(records, func(m model.Migration) bool {
			return m.Type == model.MigrationTypeEvacuation && m.SourceCompute == host
		})
		switch {
		case vm.Host == host:
			return "VM " + vm.Name + " (Nova places it here, its allocation says)", heldByNoOne, nil
		case !evacuated:
			return "an allocation of VM " + vm.Name + " (now on " + vm.Host + ")", heldGoing, nil
		}
		up, err := x.computeUp(ctx)
		if err != nil {
			return "", 0, err
		}
		why := "VM " + vm.Name + " rebuilt on " + vm.Host + ": its allocation on " + host
		if up { // started again: it frees the evacuated servers' shares as it starts
			return why, heldGoing, nil
		}
		return why + " stays until " + host + "'s nova-compute starts again (Nova frees it then; uncordon checks)", heldKept, nil
	}
	if err := x.readMoves(ctx); err != nil {
		return "", 0, err
	}
	m, ok := x.moves[consumer]
	switch {
	case !ok:
		return "an allocation in Placement of consumer " + consumer + " (a server or a migration Nova does not list on " + host + ")", heldByNoOne, nil
	case m.Status == model.MigrationFinished:
		return "the cold migration of VM " + m.InstanceID + " waits in VERIFY_RESIZE for its confirm: it holds the VM's room on " + host + " until then", heldKept, nil
	}
	return fmt.Sprintf("the %s of VM %s (%s)", m.Type, m.InstanceID, m.Status), heldGoing, nil
}

// readMoves reads, once, the moves from the host whose migrations may hold its share: the
// cold ones not confirmed or reverted, and every move of the VMs this run moved.
func (x *heldExplainer) readMoves(ctx context.Context) error {
	if x.moves != nil {
		return nil
	}
	e, host := x.r.e, x.r.plan.Host
	x.moves = map[string]model.Migration{}
	cold, err := e.nova.ColdFrom(ctx, host)
	if err != nil {
		return err
	}
	for _, m := range cold {
		x.moves[m.UUID] = m
	}
	for _, v := range x.r.report.VMs {
		if v.Result != MigCompleted {
			continue
		}
		ms, err := e.nova.MigrationsOf(ctx, v.VMID)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.SourceCompute == host && m.UUID != "" {
				x.moves[m.UUID] = m
			}
		}
	}
	return nil
}

func (x *heldExplainer) computeUp(ctx context.Context) (bool, error) {
	if x.up == nil {
		svc, ok, err := x.r.computeService(ctx)
		if err != nil {
			return false, err
		}
		up := ok && svc.Running()
		x.up = &up
	}
	return *x.up, nil
}

func (r *runner) nodeChanged(what string) {
	r.emit(NewNodeChanged(r.e.now(), r.plan.Node, what))
}

// verify checks that nothing that had to go is left on the node.
func (r *runner) verify(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	var left, kept []string
	if e.nova != nil && p.Host != "" {
		vms, err := e.nova.Servers(ctx, p.Host)
		if err != nil {
			return "", err
		}
		skipped := map[string]bool{}
		for _, v := range r.report.VMs {
			if v.Result == MigSkipped {
				skipped[v.VMID] = true
			}
		}
		if traitsOf(p.Op).judgesStays && len(r.report.VMs) == 0 {
			// A resumed run whose migrate step was already done: the VMs that stay are judged
			// again, so the verdict does not depend on which run moved the others.
			for _, vm := range vms {
				if m, reason := r.classify(vm); (m == model.MoveStays && reason.Severity != model.Blocks) || m == model.MoveRestart {
					skipped[vm.ID] = true
					r.report.Left = append(r.report.Left, vm.Name+": "+reason.Message)
				}
			}
		}
		for _, vm := range vms {
			if !skipped[vm.ID] {
				left = append(left, "VM "+vm.Name)
			}
		}
		if len(left) == 0 {
			held, notes, err := r.placementHeld(ctx, skipped)
			if err != nil {
				return "", err
			}
			left = append(left, held...)
			kept = notes
		}
	}
	switch {
	case traitsOf(p.Op).rebuilds && r.ro.Automatic:
		// A dead node's pods are Kubernetes' to delete: automatic recovery deletes none, and
		// its pods step said which it left.
	case traitsOf(p.Op).rebuilds:
		for _, pod := range r.deadPods() {
			left = append(left, "pod "+pod.Key())
		}
	default:
		for _, pod := range e.kube.PodsOn(p.Node) {
			if v, _ := policy.ClassifyPod(pod, r.ro.Policy); v == policy.Evict || v == policy.Later {
				left = append(left, "pod "+pod.Key())
			}
		}
	}
	if len(left) > 0 {
		return "", fmt.Errorf("still on %s: %s", p.Node, strings.Join(left, ", "))
	}
	done := "empty of everything that had to go"
	if n := len(r.report.Left); n > 0 {
		done = fmt.Sprintf("NOT EMPTY: %d VM(s) left on purpose: %s", n, strings.Join(r.report.Left, "; "))
	}
	if len(kept) > 0 {
		done += "; Nova keeps room on " + p.Host + ": " + strings.Join(kept, "; ")
	}
	return done, nil
}
