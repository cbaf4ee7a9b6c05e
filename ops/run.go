package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
)

// Run carries out a plan, reporting through emit (which must not block for long: the TUI's
// adapter buffers and coalesces). It refuses a plan with blockers before changing anything,
// skips steps the cluster already shows done, and records where it stands on the node.
// Cancelling ctx stops at the next safe point: no new eviction or migration starts,
// migrations already running are left to finish in Nova, and the journal says "interrupted".
func (e *Engine) Run(ctx context.Context, plan model.Plan, ro RunOptions, emit func(Event)) (Report, error) {
	r := &runner{e: e, plan: plan, ro: ro, emit: emit,
		report: Report{Op: plan.Op, Node: plan.Node, Started: e.now(), Pods: []PodReport{}, VMs: []VMReport{}}}
	emit(PlanReady{Base: e.base(plan.Node), Plan: plan})
	err := r.run(ctx)
	r.report.Finished = e.now()
	switch {
	case err == nil:
		r.report.Result = ResultDone
	case errors.As(err, new(*RefusedError)), errors.As(err, new(*LeaseHeldError)):
		r.report.Result = ResultRefused
	case errors.As(err, new(*Interrupted)):
		r.report.Result = ResultInterrupted
	default:
		r.report.Result = ResultFailed
	}
	if err != nil {
		r.report.Error = err.Error()
	}
	emit(RunDone{Base: e.base(plan.Node), Report: r.report})
	return r.report, err
}

type runner struct {
	mu     sync.Mutex
	gates  map[string]*sync.Mutex // one per PDB: its pods try one at a time
	e      *Engine
	plan   model.Plan
	ro     RunOptions
	emit   func(Event)
	report Report
	phase  string
}

func (r *runner) run(ctx context.Context) error {
	e, p := r.e, r.plan
	if b := p.Blockers(); len(b) > 0 {
		r.report.Reasons = b
		return &RefusedError{Reasons: b}
	}
	if !p.Pending() {
		for _, s := range p.Steps {
			r.step(s.Kind, StepSkipped, "already done")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeouts.Operation.D())
	defer cancel()
	if needsLease(p.Op) { // the operations that abort and rollback stop
		defer e.track(p.Node, cancel)()
	}
	// Abort and rollback take the lease from the operation they stop; everything else
	// holds it for its whole run and renews it.
	if needsLease(p.Op) {
		if err := e.kube.AcquireLease(ctx, p.Node, e.o.Holder, e.o.LeaseTTL); err != nil {
			r.step(model.StepLease, StepFailed, err.Error())
			return err
		}
		r.step(model.StepLease, StepDone, "held by "+e.o.Holder)
		stop := r.renewLease(ctx)
		defer func() {
			stop()
			if p.Op == model.OpCordon || r.ro.KeepLease {
				return // a cordoned node keeps its lease until uncordon
			}
			rctx, c := context.WithTimeout(context.Background(), 10*time.Second)
			defer c()
			_ = e.kube.ReleaseLease(rctx, p.Node, e.o.Holder)
		}()
	}
	for _, s := range p.Steps {
		if s.Kind == model.StepLease {
			continue
		}
		if s.Done && s.Kind != model.StepVerify {
			r.step(s.Kind, StepSkipped, "already done")
			continue
		}
		if err := ctx.Err(); err != nil {
			return r.interrupted(err)
		}
		r.step(s.Kind, StepStarted, s.Detail)
		detail, err := r.do(ctx, s.Kind)
		if err != nil {
			if ctx.Err() != nil {
				r.step(s.Kind, StepStopped, "interrupted")
				return r.interrupted(ctx.Err())
			}
			r.step(s.Kind, StepFailed, err.Error())
			r.journal(PhaseFailed, err.Error())
			return err
		}
		r.step(s.Kind, StepDone, detail)
	}
	switch p.Op {
	case model.OpEvacuate:
		r.journal(PhaseDone, "")
	case model.OpAbort:
		r.journal(PhaseAborted, "")
	}
	return nil
}

func needsLease(op model.OpKind) bool {
	return op == model.OpCordon || op == model.OpEvacuate
}

func (r *runner) step(kind model.StepKind, state, detail string) {
	r.emit(StepEvent{Base: r.e.base(r.plan.Node), Step: kind, State: state, Detail: detail})
}

func (r *runner) interrupted(cause error) error {
	during := r.phase
	if during == "" {
		during = "start"
	}
	r.journal(PhaseInterrupted, "")
	return &Interrupted{Node: r.plan.Node, Phase: during, Cause: cause}
}

// renewLease keeps the lease alive during a long operation.
func (r *runner) renewLease(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(r.e.o.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = r.e.kube.AcquireLease(ctx, r.plan.Node, r.e.o.Holder, r.e.o.LeaseTTL)
			}
		}
	}()
	return cancel
}

// journal records the phase on the node. It is written with a background context so that
// an interruption is recorded even after ctx is cancelled.
func (r *runner) journal(phase, errMsg string) {
	if r.plan.Node == "" || r.plan.Op == model.OpMigrate || r.plan.Op == model.OpUncordon {
		return
	}
	r.phase = phase
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, ok := r.e.kube.Node(r.plan.Node)
	if !ok {
		return
	}
	j, had := ReadJournal(k)
	if !had {
		j = Journal{Op: r.plan.Op, Holder: r.e.o.Holder, Started: r.e.now(), WasSchedulable: k.Schedulable}
	}
	if r.plan.Op == model.OpEvacuate || r.plan.Op == model.OpCordon {
		j.Op = r.plan.Op
	}
	j.Phase, j.Updated, j.Error = phase, r.e.now(), errMsg
	if err := r.e.kube.SetAnnotation(ctx, r.plan.Node, JournalAnnotation, j.encode()); err == nil {
		r.emit(NodeChanged{Base: r.e.base(r.plan.Node), What: "journal: " + phase})
	}
}

// do runs one step; it re-reads the cluster so that a step another actor already did is a
// no-op, and returns a line for the report.
func (r *runner) do(ctx context.Context, kind model.StepKind) (string, error) {
	e, p := r.e, r.plan
	switch kind {
	case model.StepCordon:
		r.journal(PhaseCordoned, "")
		k, _ := e.kube.Node(p.Node)
		if !k.Schedulable && hasTaint(k, e.cfg.Policy.TaintKey) {
			return "already cordoned", nil
		}
		if err := e.kube.Cordon(ctx, p.Node, model.Taint{Key: e.cfg.Policy.TaintKey, Value: "drainctl", Effect: "NoSchedule"}); err != nil {
			return "", err
		}
		r.emit(NodeChanged{Base: e.base(p.Node), What: "cordoned"})
		return "unschedulable, tainted " + e.cfg.Policy.TaintKey, nil

	case model.StepDisableCompute:
		if e.nova == nil || p.Host == "" {
			return "no compute service", nil
		}
		svcs, err := e.nova.ComputeServices(ctx, p.Host)
		if err != nil {
			return "", err
		}
		if len(svcs) == 0 || !svcs[0].Enabled {
			return "already disabled", nil
		}
		reason := ComputeReason(p.Op, e.o.Holder, r.ro.Why, e.now())
		if _, err := e.nova.SetServiceEnabled(ctx, p.Host, false, reason); err != nil {
			return "", err
		}
		r.emit(NodeChanged{Base: e.base(p.Node), What: "nova-compute disabled: " + reason})
		return reason, nil

	case model.StepMigrateVMs:
		if e.nova == nil || p.Host == "" {
			return "no VMs: no compute service", nil
		}
		r.journal(PhaseMigrating, "")
		return r.migrate(ctx)

	case model.StepEvictPods, model.StepEvictCarriers:
		r.journal(PhaseEvicting, "")
		return r.evict(ctx, kind == model.StepEvictCarriers)

	case model.StepVerify:
		return r.verify(ctx)

	case model.StepAbort:
		// An operation of this process stops at its next safe point and records it.
		if done := e.Cancel(p.Node); done != nil {
			select {
			case <-done:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		if e.nova == nil || p.Host == "" {
			return "no migrations", nil
		}
		return r.abortMigrations(ctx)

	case model.StepEnableCompute:
		if e.nova == nil || p.Host == "" {
			return "no compute service", nil
		}
		svcs, err := e.nova.ComputeServices(ctx, p.Host)
		if err != nil {
			return "", err
		}
		if len(svcs) == 0 || svcs[0].Enabled {
			return "already enabled", nil
		}
		if !DisabledByDrainctl(svcs[0]) && !r.ro.ForceCompute {
			return fmt.Sprintf("left disabled: someone else disabled it (%q); --force re-enables", svcs[0].DisabledReason), nil
		}
		if _, err := e.nova.SetServiceEnabled(ctx, p.Host, true, ""); err != nil {
			return "", err
		}
		r.emit(NodeChanged{Base: e.base(p.Node), What: "nova-compute enabled"})
		return "enabled", nil

	case model.StepUncordon:
		k, _ := e.kube.Node(p.Node)
		if j, ok := ReadJournal(k); ok && p.Op == model.OpRollback && !j.WasSchedulable {
			// The node was cordoned before drainctl came: only the taint goes.
			if !hasTaint(k, e.cfg.Policy.TaintKey) {
				return "was cordoned before: left cordoned", nil
			}
		}
		if k.Schedulable && !hasTaint(k, e.cfg.Policy.TaintKey) {
			return "already schedulable", nil
		}
		if err := e.kube.Uncordon(ctx, p.Node, e.cfg.Policy.TaintKey); err != nil {
			return "", err
		}
		r.emit(NodeChanged{Base: e.base(p.Node), What: "uncordoned"})
		return "schedulable", nil

	case model.StepRelease:
		if err := e.kube.SetAnnotation(ctx, p.Node, JournalAnnotation, ""); err != nil {
			return "", err
		}
		if err := e.kube.ReleaseLease(ctx, p.Node, e.o.Holder); err != nil {
			return "", err
		}
		return "journal cleared, lease released", nil
	}
	return "", fmt.Errorf("step %s is not implemented", kind)
}

// verify checks that nothing that had to go is left on the node.
func (r *runner) verify(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	var left []string
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
		for _, vm := range vms {
			if !skipped[vm.ID] {
				left = append(left, "VM "+vm.Name)
			}
		}
	}
	for _, pod := range e.kube.PodsOn(p.Node) {
		if v, _ := policy.ClassifyPod(pod, r.ro.Policy); v == policy.Evict || v == policy.Later {
			left = append(left, "pod "+pod.Key())
		}
	}
	if len(left) > 0 {
		return "", fmt.Errorf("still on %s: %s", p.Node, strings.Join(left, ", "))
	}
	return "empty of everything that had to go", nil
}
