package campaign

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/opcmd"
)

// node works node i of the campaign from the phase its record shows: a rerun repeats the
// phase it stopped in (each is idempotent: the evacuation and uncordon skip what is done;
// the operator's step runs again).
func (r *Campaign) node(ctx context.Context, i int, plan *model.Plan) error {
	e := r.e
	name := r.Record().Nodes[i].Name
	phase := r.Record().Nodes[i].Phase
	emit := r.emit
	if plan != nil { // pending or evacuating
		r.setPhase(ctx, i, model.PhaseEvacuating, "")
		ro := r.o.Run
		ro.Leaving, ro.Later = nil, pendingBut(r.Record(), name)
		ro.Campaign = r.o.Name // journaled: a resume checks the node is still emptied under this campaign
		ro.KeepLease = true    // the node stays ours through the step, until uncordon releases it
		dctx, cancel := context.WithTimeoutCause(ctx, r.o.NodeDeadline, ErrNodeDeadline)
		rep, err := e.Run(dctx, *plan, ro, r.blockers(ctx, i, emit))
		cancel()
		if err == nil && len(rep.Left) > 0 {
			r.mu.Lock()
			if r.kept == nil {
				r.kept, r.inPlace = map[string][]string{}, map[string][]string{}
			}
			r.kept[name] = rep.Left
			for _, vm := range rep.VMs {
				if ops.MoveFactsOf(vm.Method).InPlace && vm.Result == ops.MigSkipped {
					r.inPlace[name] = append(r.inPlace[name], vm.VM)
				}
			}
			r.mu.Unlock()
			r.note(
				name,
				model.PhaseEvacuating,
				fmt.Sprintf("NOT EMPTY: %d VM(s) left on it as asked: %s", len(rep.Left), strings.Join(rep.Left, "; ")),
			)
		}
		blocked := r.setBlocked(ctx, i, "")
		if err != nil {
			if ctx.Err() == nil && errors.Is(context.Cause(dctx), ErrNodeDeadline) {
				return r.undrainable(ctx, i, blocked)
			}
			return r.failed(ctx, i, model.PhaseEvacuating, err)
		}
		phase = model.PhaseStep
	}
	if phase == model.PhaseStep {
		r.setPhase(ctx, i, model.PhaseStep, "")
		if err := r.step(ctx, i, name); err != nil {
			return r.failed(ctx, i, model.PhaseStep, err)
		}
		phase = model.PhaseReturning
	}
	var returned time.Time // the way back began in this process: its enable's answer opens the verify
	if phase == model.PhaseReturning {
		returned = time.Now()
		r.keepLeft(i, name)
		r.setPhase(ctx, i, model.PhaseReturning, "")
		ro := r.o.Run
		ro.Leaving, ro.ReturnVMs = nil, false // the campaign brings them home itself, in the background
		// The way back plans on the last read (the service as Nova answered this campaign's
		// disable): its enable step reads the service afresh before it acts, and decides there.
		ro.FromCache = true
		up, err := e.Plan(ctx, model.OpUncordon, name, ro)
		if err == nil {
			_, err = e.Run(ctx, up, ro, r.sayRestarts(name, emit))
		}
		if err != nil {
			return r.failed(ctx, i, model.PhaseReturning, err)
		}
		phase = model.PhaseVerifying
	}
	r.setPhase(ctx, i, model.PhaseVerifying, "")
	if err := r.verifyReturned(ctx, name, returned); err != nil {
		return r.failed(ctx, i, model.PhaseVerifying, err)
	}
	if err := e.AnnotateNode(ctx, name, DoneAnnotation, r.o.Name); err != nil {
		r.note(
			name,
			model.PhaseVerifying,
			"the node's mark of this campaign ("+DoneAnnotation+") NOT written: a resume would work it again: "+err.Error(),
		)
	}
	r.setPhase(ctx, i, model.PhaseDone, "")
	r.bringHomeLater(ctx, i)
	return nil
}

// sayRestarts passes a return's events on and puts its restart-vms step in the campaign's own
// log: the VMs stopped in place are started there, or said why not, and the campaign's end
// says that rather than "started again when it returns" of a node that has returned.
func (r *Campaign) sayRestarts(node string, emit func(ops.Event)) func(ops.Event) {
	return func(ev ops.Event) {
		emit(ev)
		s, ok := ev.(ops.StepEvent)
		if !ok || s.Step != model.StepRestartVMs || s.State != ops.StepDone {
			return
		}
		r.note(node, model.PhaseReturning, "restart-in-place: "+s.Detail)
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.inPlace[node]) == 0 {
			return
		}
		kept := slices.DeleteFunc(slices.Clone(r.kept[node]), func(left string) bool {
			return slices.ContainsFunc(r.inPlace[node], func(vm string) bool { return strings.HasPrefix(left, vm+": ") })
		})
		r.kept[node] = append(kept, "restart-in-place: "+s.Detail)
	}
}

// notEmpty says which nodes were worked with VMs left on them on purpose ("": none).
func (r *Campaign) notEmpty() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for _, n := range r.rec.Nodes {
		if vms := r.kept[n.Name]; len(vms) > 0 {
			parts = append(parts, n.Name+" ("+strings.Join(vms, "; ")+")")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%d node(s) NOT EMPTY, VMs left on them as asked: %s", len(parts), strings.Join(parts, ", "))
}

// leftAway says whether a VM was left on a node as asked (--skip-vm, --force), not only
// restarted in place (which the node's return starts again there).
func (r *Campaign) leftAway() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kept := range r.kept {
		if slices.ContainsFunc(kept, func(left string) bool { return !strings.HasPrefix(left, "restart-in-place: ") }) {
			return true
		}
	}
	return false
}

// What a campaign does with a node that does not drain within its deadline.
const (
	Quarantine = "quarantine" // roll it back, label it, go on
	// QuarantineLabel marks a node a campaign could not drain (its value: "deadline").
	QuarantineLabel = "drainctl.io/quarantined"
	// QuarantineReason, an annotation of a quarantined node, says what held its drain.
	QuarantineReason = "drainctl.io/quarantined-reason"
)

// ErrNodeDeadline stops a node's drain that took longer than the campaign's node deadline.
var ErrNodeDeadline = errors.New("the node deadline passed")

// undrainable handles a node whose drain passed the deadline, as --undrainable says; blocked
// is what held it last.
func (r *Campaign) undrainable(ctx context.Context, i int, blocked string) error {
	name := r.Record().Nodes[i].Name
	why := fmt.Sprintf("not drained within its deadline (%s)", r.o.NodeDeadline)
	if blocked != "" {
		why += ": " + blocked
	}
	past := ops.NewCampaignEvent(
		r.e.Now(),
		r.Record(),
		name,
		model.PhaseEvacuating,
		fmt.Sprintf("%s; the campaign's rule for it: %s", why, r.o.Undrainable),
	)
	past.PastDeadline = true
	r.emit(past)
	if r.o.Undrainable != "fail" {
		ro := r.o.Run
		ro.Leaving = nil
		back, err := r.e.Plan(ctx, model.OpRollback, name, ro)
		if err == nil {
			_, err = r.e.Run(ctx, back, ro, r.emit)
		}
		if err != nil {
			return r.stop(ctx, i, fmt.Errorf("%s; its rollback failed: %w", why, err))
		}
		why += "; rolled back"
	}
	if r.o.Undrainable != Quarantine {
		return r.stop(ctx, i, errors.New(why))
	}
	if err := r.e.LabelNode(ctx, name, QuarantineLabel, "deadline"); err != nil {
		return r.stop(ctx, i, fmt.Errorf("%s; labelling it failed: %w", why, err))
	}
	if err := r.e.AnnotateNode(ctx, name, QuarantineReason, why); err != nil {
		return r.stop(ctx, i, fmt.Errorf("%s; annotating it failed: %w", why, err))
	}
	r.setPhase(ctx, i, model.PhaseQuarantined, why+"; labelled "+QuarantineLabel)
	return nil
}

// stop ends node i as failed and stops the campaign starting new nodes.
func (r *Campaign) stop(ctx context.Context, i int, err error) error {
	name := r.Record().Nodes[i].Name
	r.mu.Lock()
	if r.stopping == nil {
		r.stopping = err
	}
	r.mu.Unlock()
	r.setPhase(ctx, i, model.PhaseFailed, err.Error())
	return fmt.Errorf("campaign %s stopped at %s: %w", r.o.Name, name, err)
}

// blockers passes node i's events on, and records what holds its drain while it holds: a
// pod a budget refuses, a VM's migration stalled or retried, a node slot waited for.
func (r *Campaign) blockers(ctx context.Context, i int, emit func(ops.Event)) func(ops.Event) {
	return func(ev ops.Event) {
		emit(ev)
		switch ev := ev.(type) {
		case ops.PodEvent:
			switch ev.State {
			case ops.PodBlocked:
				what := "pod " + ev.Pod + " held by its PodDisruptionBudget"
				if ev.PDB != "" {
					what = "pod " + ev.Pod + " held by PodDisruptionBudget " + ev.PDB
				}
				r.setBlocked(ctx, i, what)
			case ops.PodGone, ops.PodEvicted:
				r.setBlocked(ctx, i, "")
			}
		case ops.MigrationEvent:
			switch ev.State {
			case ops.MigStalled, ops.MigRetrying, ops.MigFailed:
				r.setBlocked(ctx, i, fmt.Sprintf("VM %s: migration %s %s", ev.VM, ev.State, ev.Message))
			case ops.MigCompleted:
				r.setBlocked(ctx, i, "")
			}
		case ops.StepEvent:
			if ev.State == ops.StepQueued {
				r.setBlocked(ctx, i, "waiting for a node slot: "+ev.Detail)
			}
		case ops.PlanReady, ops.NodeChanged, ops.RunDone, ops.CampaignEvent: // nothing holds the drain
		}
	}
}

// setBlocked records what holds node i ("" : nothing now) when it changed, and returns what
// held it before.
func (r *Campaign) setBlocked(ctx context.Context, i int, what string) (was string) {
	r.mu.Lock()
	n := &r.rec.Nodes[i]
	was = n.Blocked
	if was == what {
		r.mu.Unlock()
		return was
	}
	n.Blocked = bounded(what)
	name := n.Name
	r.mu.Unlock()
	r.save(ctx)
	if what != "" {
		r.note(name, model.PhaseEvacuating, "blocked: "+what)
	}
	return was
}

// failed handles a node that did not get through a phase. Interrupted: the record keeps
// the phase, for a rerun. With on-failure skip, the node is rolled back (migrations
// aborted, back to how it was) and the campaign goes on; otherwise, or when the rollback
// fails too, the campaign starts no new node and this one stays as its journal says.
func (r *Campaign) failed(ctx context.Context, i int, ph model.NodePhase, err error) error {
	name := r.Record().Nodes[i].Name
	if ctx.Err() != nil || errors.As(err, new(*ops.Interrupted)) {
		r.note(name, ph, "interrupted: "+err.Error())
		if errors.As(err, new(*ops.Interrupted)) {
			return err
		}
		return &ops.Interrupted{Node: name, Phase: string(ph), Cause: context.Cause(ctx)}
	}
	if r.o.OnFailure == "skip" {
		ro := r.o.Run
		ro.Leaving = nil
		back, perr := r.e.Plan(ctx, model.OpRollback, name, ro)
		if perr == nil {
			_, perr = r.e.Run(ctx, back, ro, r.emit)
		}
		if perr == nil {
			r.setPhase(ctx, i, model.PhaseSkipped, fmt.Sprintf("%s failed (%v); rolled back", ph, err))
			return nil
		}
		err = fmt.Errorf("%w; its rollback failed too: %v", err, perr)
	}
	r.mu.Lock()
	if r.stopping == nil {
		r.stopping = err
	}
	r.mu.Unlock()
	r.setPhase(ctx, i, model.PhaseFailed, fmt.Sprintf("%s: %v", ph, err))
	return fmt.Errorf("campaign %s stopped at %s (%s): %w", r.o.Name, name, ph, err)
}

// step is the operator's work on the emptied node: --exec, then --wait-ready. The node's
// lease is renewed meanwhile, so nobody else starts on it; losing it stops the step.
func (r *Campaign) step(ctx context.Context, i int, node string) error {
	e := r.e
	ctx, cancel := context.WithTimeoutCause(ctx, e.Config().Timeouts.Operation.D(), errors.New("timeouts.operation passed"))
	defer cancel()
	ctx, release, err := e.HoldKey(ctx, node)
	if err != nil {
		return err
	}
	defer release()

	k, _ := e.KubeNode(node)
	bootBefore := k.BootID
	if r.o.Exec == "" && !r.o.WaitReady {
		r.mu.Lock()
		kept := len(r.kept[node])
		r.mu.Unlock()
		what := "nothing to do while empty"
		if kept > 0 {
			what = fmt.Sprintf("nothing to do (the node is not empty: %d VM(s) left on it as asked)", kept)
		}
		r.note(node, model.PhaseStep, "no command to run, no reboot to wait for: "+what)
		return nil
	}
	if r.o.Exec != "" {
		if err := r.runExec(ctx, node); err != nil {
			return err
		}
	}
	if r.o.WaitReady {
		if err := r.waitRebooted(ctx, node, bootBefore); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return &ops.Interrupted{Node: node, Phase: string(model.PhaseStep), Cause: context.Cause(ctx)}
	}
	return nil
}

// runExec runs the operator's command on the emptied node; each line it prints is reported.
func (r *Campaign) runExec(ctx context.Context, node string) error {
	err := r.e.RunOperator(
		ctx,
		opcmd.Exec,
		r.o.Exec,
		node,
		r.hostOf(ctx, node),
		func(line string) { r.note(node, model.PhaseStep, "exec: "+line) },
	)
	if err != nil && ctx.Err() != nil {
		return &ops.Interrupted{Node: node, Phase: "exec", Cause: context.Cause(ctx)}
	}
	return err
}

// waitRebooted waits until the node has rebooted (seen NotReady, or its boot ID changed) and
// is Ready again with its nova-compute service up.
func (r *Campaign) waitRebooted(ctx context.Context, node, bootBefore string) error {
	r.note(node, model.PhaseStep, "waiting for the node to reboot and come back Ready")
	rebooted := false
	return r.waitFor(ctx, node, time.Time{}, func(k model.KubeNode, svc *model.ComputeService) (bool, string) {
		if !k.Ready || (bootBefore != "" && k.BootID != bootBefore) {
			rebooted = true
		}
		switch {
		case !rebooted:
			return false, "not rebooted yet"
		case !k.Ready:
			return false, "NotReady"
		case svc != nil && !svc.Up:
			return false, "Ready; nova-compute not up yet"
		}
		return true, ""
	})
}

// verifyReturned waits (VerifyWithin) until the node takes work again: Ready, schedulable,
// without drainctl's taint, its nova-compute service enabled and up. What Nova answered to the
// way back's enable, begun at returned, is its first sight of the service.
func (r *Campaign) verifyReturned(ctx context.Context, node string, returned time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.VerifyWithin)
	defer cancel()
	taint := r.e.Config().Policy.TaintKey
	othersReason := ""
	err := r.waitFor(ctx, node, returned, func(k model.KubeNode, svc *model.ComputeService) (bool, string) {
		switch {
		case !k.Ready:
			return false, "node NotReady"
		case !k.Schedulable || k.HasTaint(taint):
			return false, "node still cordoned"
		case svc != nil && !svc.Enabled && !ops.DisabledByDrainctl(*svc):
			// Someone else disabled it (before the campaign, or since): not ours to enable,
			// and no wait changes it. The node is back as drainctl found it.
			othersReason = svc.DisabledReason
			return true, ""
		case svc != nil && !svc.Enabled:
			return false, "nova-compute disabled"
		case svc != nil && !svc.Up:
			return false, "nova-compute down"
		}
		return true, ""
	})
	if err == nil && othersReason != "" {
		r.note(
			node,
			model.PhaseVerifying,
			fmt.Sprintf("schedulable again; nova-compute stays disabled by someone else (%q): drainctl leaves it so", othersReason),
		)
	}
	return err
}

// waitFor polls the node (on every Kubernetes change, and every timeouts.poll for Nova)
// until ok says so; the error says what it last waited for. Its first look at the service is
// Nova's answer to the last change drainctl made to it, when that came after answeredSince
// (zero: none): a wait, not an act, and that answer is Nova's word on the service then.
func (r *Campaign) waitFor(
	ctx context.Context,
	node string,
	answeredSince time.Time,
	ok func(model.KubeNode, *model.ComputeService) (bool, string),
) error {
	e := r.e
	changes, unsubscribe := e.Subscribe()
	defer unsubscribe()
	host := r.hostOf(ctx, node)
	tick := time.NewTicker(e.PollInterval())
	defer tick.Stop()
	why := "nothing read yet"
	for {
		k, found := e.KubeNode(node)
		if !found {
			return fmt.Errorf("node %s is gone from Kubernetes", node)
		}
		var svc *model.ComputeService
		answered, first := model.ComputeService{}, false
		if !answeredSince.IsZero() && host != "" {
			answered, first = e.Inventory().ServiceAnswered(host, answeredSince)
			answeredSince = time.Time{} // once: the next looks read it
		}
		if first {
			svc = &answered
		} else if e.NovaConfigured() && host != "" {
			if ss, err := e.ComputeServices(ctx, host); err == nil && len(ss) > 0 {
				svc = &ss[0]
			} else if err != nil {
				why = "reading nova-compute: " + err.Error()
			}
		}
		done, w := ok(k, svc)
		if done {
			return nil
		}
		why = w
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("node %s did not come back in time (%v): %s", node, context.Cause(ctx), why)
			}
			return &ops.Interrupted{Node: node, Phase: "wait", Cause: context.Cause(ctx)}
		case <-changes:
		case <-tick.C:
		}
	}
}

// hostOf is the node's compute host, from the Kubernetes cache and the last Nova read (the
// mapping does not change during a campaign; a fresh Nova read costs a full snapshot).
func (r *Campaign) hostOf(ctx context.Context, node string) string {
	if inv, err := r.e.Inventory().Rejoin(ctx); err == nil {
		if n, ok := inv.Node(node); ok {
			return n.Host
		}
	}
	return ""
}
