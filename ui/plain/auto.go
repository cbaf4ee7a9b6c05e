package plain

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// Auto is a headless run of one verb.
type Auto struct {
	Engine      *ops.Engine
	Run         ops.RunOptions
	DryRun      bool
	JSON        bool
	MaxParallel int // nodes worked at once
	Stdout      io.Writer
	Stderr      io.Writer
}

// Verbs lists the verbs --auto knows, for usage errors.
const Verbs = "list, plan, cordon, evacuate, migrate, uncordon, abort, rollback, doctor"

// Do runs verb on its arguments. The error carries the exit code (ops.ExitCodeOf).
func (a *Auto) Do(ctx context.Context, verb string, args []string) error {
	switch verb {
	case "plan":
		if len(args) < 2 {
			return &ops.UsageError{Problem: "plan needs a verb and its targets", Hint: "e.g. drainctl --auto plan evacuate compute-3"}
		}
		a.DryRun = true
		return a.Do(ctx, args[0], args[1:])
	case "cordon", "evacuate", "uncordon", "abort", "rollback", "migrate":
		if len(args) == 0 {
			what := "NODE"
			if verb == "migrate" {
				what = "VM"
			}
			return &ops.UsageError{Problem: verb + " needs at least one " + what, Hint: "drainctl --auto list shows them"}
		}
		if (verb == "abort" || verb == "rollback") && len(args) > 1 {
			return &ops.UsageError{Problem: verb + " takes one node"}
		}
		return a.operate(ctx, model.OpKind(verb), args)
	case "doctor":
		return a.doctor(ctx)
	}
	return &ops.UsageError{Problem: fmt.Sprintf("unknown verb %q", verb), Hint: "the verbs are: " + Verbs}
}

// operate plans every target first, refuses the whole batch if any plan is blocked (exit 3,
// nothing changed), then runs the plans, several nodes at once up to MaxParallel.
func (a *Auto) operate(ctx context.Context, op model.OpKind, targets []string) error {
	ro := a.Run
	if op == model.OpEvacuate {
		ro.Leaving = targets
	}
	plans := make([]model.Plan, 0, len(targets))
	var refusals []model.Reason
	for _, t := range targets {
		p, err := a.Engine.Plan(ctx, op, t, ro)
		if err != nil {
			return err
		}
		plans = append(plans, p)
		refusals = append(refusals, p.Blockers()...)
	}
	if a.DryRun || len(refusals) > 0 {
		for _, p := range plans {
			if a.JSON {
				a.printer(nil).Emit(ops.PlanReady{Base: ops.Base{Node: p.Node}, Plan: p})
			} else {
				WritePlan(a.Stdout, p)
			}
		}
		if len(refusals) > 0 {
			return &ops.RefusedError{Reasons: refusals}
		}
		return nil
	}
	pr := a.printer(a.Stderr)
	sem := make(chan struct{}, max(1, a.MaxParallel))
	errs := make([]error, len(plans))
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = &ops.Interrupted{Node: p.Node, Phase: "queue", Cause: ctx.Err()}
				return
			}
			defer func() { <-sem }()
			_, errs[i] = a.Engine.Run(ctx, p, ro, pr.Emit)
		}()
	}
	wg.Wait()
	return worst(errs)
}

func (a *Auto) printer(progress io.Writer) *Printer {
	if progress == nil {
		progress = io.Discard
	}
	var j io.Writer
	if a.JSON {
		j = a.Stdout
	}
	return NewPrinter(progress, j)
}

// worst picks the error whose exit code tells a script the most: usage, then interrupted
// (work left to resume), then failed, then refused.
func worst(errs []error) error {
	rank := map[int]int{ops.ExitOK: 0, ops.ExitFailed: 2, ops.ExitRefused: 1, ops.ExitInterrupted: 3, ops.ExitUsage: 4}
	var out error
	for _, err := range errs {
		if err != nil && (out == nil || rank[ops.ExitCodeOf(err)] > rank[ops.ExitCodeOf(out)]) {
			out = err
		}
	}
	if out != nil {
		var n int
		for _, err := range errs {
			if err != nil {
				n++
			}
		}
		if n > 1 {
			return &batchError{first: out, n: n}
		}
	}
	return out
}

type batchError struct {
	first error
	n     int
}

func (b *batchError) Error() string {
	return fmt.Sprintf("%d nodes did not finish; first: %v", b.n, b.first)
}
func (b *batchError) Unwrap() error { return b.first }

// doctor prints where Kubernetes and Nova disagree; exit 0 when they all agree.
func (a *Auto) doctor(ctx context.Context) error {
	inv, err := a.Engine.Inventory().Read(ctx)
	if err != nil {
		return err
	}
	var found []string
	for _, n := range inv.Nodes {
		for _, m := range n.Mismatches(inv.NovaConfigured) {
			if m.Code == model.NoComputeService || m.Code == model.NoHypervisor {
				continue // expected on control-plane and storage nodes
			}
			found = append(found, fmt.Sprintf("%s: %s", m.Code, m.Message))
		}
		for _, m := range n.Migrations {
			if m.SourceCompute == n.Host && m.Stuck(inv.At) {
				found = append(found, fmt.Sprintf("MigrationStuck: migration %d of %s has been %s since %s", m.ID, m.InstanceID, m.Status, m.UpdatedAt.Format("15:04:05")))
			}
		}
	}
	for _, vm := range inv.UnplacedVMs {
		found = append(found, fmt.Sprintf("VMOnUnknownHost: VM %s (%s) is on host %q, which no Kubernetes node or compute service matches", vm.Name, vm.ShortID(), vm.Host))
	}
	if !inv.NovaConfigured {
		fmt.Fprintln(a.Stdout, "Nova is not configured: only Kubernetes was checked")
	}
	for _, f := range found {
		fmt.Fprintln(a.Stdout, f)
	}
	if len(found) > 0 {
		return &disagreement{n: len(found)}
	}
	fmt.Fprintln(a.Stdout, "Kubernetes and Nova agree")
	return nil
}

type disagreement struct{ n int }

func (d *disagreement) Error() string {
	return fmt.Sprintf("%d disagreement(s) between Kubernetes and Nova", d.n)
}
