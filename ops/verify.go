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

// The verify step: the node holds nothing that had to go, and Placement says its host holds nothing it should not.

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
		// Evacuated off host once (perhaps moved again since): say so, not that it was rebuilt
		// where it is now.
		why := "VM " + vm.Name + " (evacuated off " + host + ", now on " + vm.Host + "): its allocation on " + host
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
		return "an allocation in " +
			"Placement of consumer " + consumer + " (a server or a migration Nova does not list on " + host + ")", heldByNoOne, nil
	case m.Status == model.MigrationFinished:
		return "the cold migration of VM " + m.InstanceID + " waits in VERIFY_RESIZE for its confirm: it " +
			"holds the VM's room on " + host + " until then", heldKept, nil
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
	cold, err := e.nova.ColdFrom(ctx, host, 0)
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
				if m, reason := r.classify(vm); (moverOf(m).Stays && reason.Severity != model.Blocks) || moverOf(m).InPlace {
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
