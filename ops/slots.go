package ops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
)

// Node slots: at most concurrency.nodes nodes are emptied at once, whoever asks (RunBatch,
// roll, the daemon, the NodeMaintenance controller, the proxy's scale-down) and in however
// many drainctl processes (a TUI beside the daemon): a slot is a lease on the cluster,
// where every process sees it, like the migrations lock. An evacuation takes its slot just
// before it starts moving anything: a node waiting for one is already cordoned with its
// nova-compute disabled (cheap, reversible, recorded), so nothing new lands on it, and says
// so (a "queued" step event). Once its slot comes it is judged again with the nodes then
// leaving counted as gone: capacity that held one node's VMs may not hold ten.

// slotKey names slot i's lease (drainctl-node-slot.i, beside the nodes' leases).
func slotKey(i int) string { return fmt.Sprintf("node-slot.%d", i) }

// slotHolder is the identity in a slot's lease: the engine's holder and the node, so that one
// process working two nodes holds two slots (and a dead process's slots can be taken over).
func slotHolder(holder, node string) string { return holder + "#" + node }

// slotNode is the node of a slot's holder identity.
func slotNode(holder string) string {
	_, node, _ := strings.Cut(holder, "#")
	return node
}

// emptying reports whether a step moves something off the node (and so needs a slot).
func emptying(kind model.StepKind) bool {
	return kind == model.StepMigrateVMs || kind == model.StepEvictPods || kind == model.StepEvictCarriers
}

// takeSlot waits for one of the cluster's node slots and keeps it renewed; losing it stops
// the run (cause ErrLeaseLost), as losing the node's lease does. waited says it had to wait;
// others are the nodes holding the other slots when it got one. release gives it back.
func (r *runner) takeSlot(ctx context.Context, stop context.CancelCauseFunc) (release func(), waited bool, others []string, err error) {
	e, node := r.e, r.plan.Node
	n := max(1, e.cfg.Concurrency.Nodes)
	me := slotHolder(e.o.Holder, node)
	forged := map[string]bool{} // holders whose slots prove no node being emptied
	mayReplace := func(h string) bool { return h == me || forged[h] || e.mayReplace(h) }
	keys := make([]string, n)
	for i := range n {
		keys[i] = slotKey(i)
	}
	say := func(msg string) { r.step(model.StepSlot, StepQueued, msg) }
	err = poll.Until(ctx, min(e.o.Poll*5, 2*time.Second), say, func(ctx context.Context) (bool, string, error) {
		var busy []string
		// One read of every slot; a slot is tried only when it looks free (or mine, or its
		// holder provably gone). A failed read tries them all, as the read would have.
		holders, listErr := e.kube.LeaseHolders(ctx, keys)
		for i, key := range keys {
			if h := holders[key]; listErr == nil && h != "" && !mayReplace(h) {
				why := e.slotUnproven(ctx, key, h, holders)
				if why == "" {
					busy = append(busy, slotNode(h))
					continue
				}
				forged[h] = true
				r.nodeChanged(fmt.Sprintf("node slot %d taken over from %s: %s", i+1, h, why))
			}
			err := e.kube.AcquireLease(ctx, key, me, e.o.LeaseTTL, mayReplace)
			var held *LeaseHeldError
			switch {
			case err == nil:
				if waited {
					r.step(model.StepSlot, StepDone, fmt.Sprintf("node slot %d of %d", i+1, n))
				}
				now, err := e.kube.LeaseHolders(ctx, keys) // read again: taken meanwhile counts too
				others = r.slotNodes(ctx, keys, key, now, err)
				release = r.keepSlot(ctx, key, me, stop)
				return true, "", nil
			case errors.As(err, &held):
				busy = append(busy, slotNode(held.Holder))
			case ctx.Err() != nil:
				return false, "", ctx.Err()
			default:
				busy = append(busy, "?") // unreadable: counted as taken, read again soon
			}
		}
		if !waited {
			r.journal(PhaseQueued, "")
		}
		waited = true
		slices.Sort(busy)
		return false, fmt.Sprintf("waiting for a node slot (concurrency.nodes = %d), being emptied: %s", n, strings.Join(busy, ", ")), nil
	})
	if err != nil {
		return nil, waited, nil, err
	}
	return release, waited, others, nil
}

// slotUnproven says why a slot's lease proves no node being emptied ("": it does): a slot is a
// claim that its holder works its node, so the holder must hold that node's own lease, and a
// node takes one slot. A lease anyone of the namespace may write otherwise holds every move.
func (e *Engine) slotUnproven(ctx context.Context, key, holder string, holders map[string]string) string {
	engine, node, ok := strings.Cut(holder, "#")
	if !ok || node == "" {
		return "its holder names no node"
	}
	for _, k := range slices.Sorted(maps.Keys(holders)) {
		if holders[k] == holder && k != key {
			if k < key {
				return "node " + node + " holds another slot already (" + k + ")"
			}
			break
		}
	}
	h, _, err := e.kube.LeaseHolder(ctx, node)
	if err != nil || h == engine {
		return "" // unread: taken as held
	}
	if h == "" {
		return "node " + node + "'s own lease is held by nobody: nothing works it"
	}
	return "node " + node + "'s own lease is held by " + h + ", not by the slot's holder"
}

// slotNodes are the nodes holding the slots other than mine, as the slots' read had them
// (read again one by one when that read failed).
func (r *runner) slotNodes(ctx context.Context, keys []string, mine string, holders map[string]string, listErr error) []string {
	var out []string
	for _, key := range keys {
		if key == mine {
			continue
		}
		h := holders[key]
		if listErr != nil {
			h, _, _ = r.e.kube.LeaseHolder(ctx, key)
		}
		if h != "" {
			out = append(out, slotNode(h))
		}
	}
	return out
}

// keepSlot renews the slot until release, which gives it back.
func (r *runner) keepSlot(ctx context.Context, key, holder string, stop context.CancelCauseFunc) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.e.keepLeaseAs(ctx, key, holder, stop) }()
	return func() {
		cancel()
		<-done
		rctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		_ = r.e.kube.ReleaseLease(rctx, key, holder)
	}
}

// judgeAgain re-plans the node once its slot came after a wait, with the nodes being
// emptied meanwhile counted as gone: a node that was a fine candidate while it queued may
// no longer be (their VMs took the room). Blockers refuse it, leaving it cordoned with its
// nova-compute disabled, as the journal says.
func (r *runner) judgeAgain(ctx context.Context, others []string) error {
	ro := r.ro
	ro.FromCache = false
	ro.Leaving = append(slices.Clone(ro.Leaving), others...)
	again, err := r.e.Plan(ctx, r.plan.Op, r.plan.Node, ro)
	if err != nil {
		return err
	}
	if b := again.Blockers(); len(b) > 0 {
		r.report.Reasons = b
		r.journal(PhaseFailed, "refused when its node slot came: "+b[0].Text())
		return &RefusedError{Reasons: b}
	}
	return nil
}
