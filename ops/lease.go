package ops

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
)

// Leases and cancellation across processes. Every running engine has its own holder
// identity; the node's lease (on the cluster, where every process sees it) says which one
// works the node. Another engine takes a live lease over only when its holder is provably
// gone; it asks a live holder to stop by a request on the node, which the holder obeys at
// its next safe point.

// CancelAnnotation is where abort and rollback ask the node's holder to stop.
const CancelAnnotation = "drainctl.io/cancel"

// DefaultHolder is a new identity for this process's engine: drainctl/user@host/pid-random.
// Two terminals of one operator are two holders; the host and pid let a rerun on the same
// machine see that a holder's process has died.
func DefaultHolder() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("drainctl/%s@%s/%s/%s", name, host, instance(), processSpace())
}

// processSpace names where this process's PIDs mean something: the machine's boot and its
// PID namespace, hashed. Two containers sharing a hostname each have their own PIDs: a PID
// absent here proves nothing about a process in another space.
func processSpace() string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	if len(boot) == 0 || ns == "" {
		return "unknown"
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + " " + ns))
	return hex.EncodeToString(sum[:6])
}

// SingletonHolder is the identity of one instance of a role that runs once in a cluster
// (the leader-elected controller, the proxy): role/pid-random, and the prefix of the
// holders it succeeds. A new instance takes its predecessor's work over without waiting
// for the lease to expire: while it runs, the previous instance is gone.
func SingletonHolder(role string) (holder, successorOf string) {
	return role + "/" + instance(), role + "/"
}

// NodeDaemonRole is the role of the per-node daemon of node: its holder is
// drainctl-daemon@NODE/instance, and it takes over its predecessor's on the same node.
func NodeDaemonRole(node string) string { return "drainctl-daemon@" + node }

func instance() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b))
}

// provablyGone: a holder of this machine, in this process space (the same boot, the same
// PID namespace), whose process no longer exists. A holder that names no space (an older
// drainctl) is never provably gone: its lease expires instead.
func provablyGone(holder string) bool {
	holder, _, _ = strings.Cut(holder, "#") // a node slot's holder: the engine's, then its node
	parts := strings.Split(holder, "/")
	if len(parts) != 4 || parts[0] != "drainctl" || parts[3] == "unknown" || parts[3] != processSpace() {
		return false
	}
	_, host, ok := strings.Cut(parts[1], "@")
	me, _ := os.Hostname()
	if !ok || host != me {
		return false
	}
	pidText, _, _ := strings.Cut(parts[2], "-")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// mayReplace says whether this engine may take over a lease that holder still holds.
func (e *Engine) mayReplace(holder string) bool {
	if e.o.Successor != "" && strings.HasPrefix(holder, e.o.Successor) {
		return true
	}
	return provablyGone(holder)
}

func readCancel(n model.KubeNode) (CancelRequest, bool) {
	raw, ok := n.Annotations[CancelAnnotation]
	if !ok {
		return CancelRequest{}, false
	}
	var c CancelRequest
	if json.Unmarshal([]byte(raw), &c) != nil {
		return CancelRequest{}, false
	}
	return c, true
}

// holdLease takes the node's lease (taking over only from a holder that is gone), then keeps
// it: renewed every third of its TTL; when it cannot be renewed before it expires, or
// someone else has it, or a cancel request names this holder, stop is called with the
// cause and the operation stops at its next safe point.
func (r *runner) holdLease(ctx context.Context, stop context.CancelCauseFunc) error {
	e, node := r.e, r.plan.Node
	mayReplace := func(h string) bool { return h == r.lease.stopped || e.mayReplace(h) }
	if err := e.kube.AcquireLease(ctx, node, e.o.Holder, e.o.LeaseTTL, mayReplace); err != nil {
		r.step(model.StepLease, StepFailed, err.Error())
		return err
	}
	r.lease.holding = true
	r.step(model.StepLease, StepDone, "held by "+e.o.Holder)
	r.lease.keepers.Add(2)
	go func() { defer r.lease.keepers.Done(); r.renew(ctx, stop) }()
	go func() { defer r.lease.keepers.Done(); r.watchCancel(ctx, stop) }()
	return nil
}

func (r *runner) renew(ctx context.Context, stop context.CancelCauseFunc) {
	r.e.keepLease(ctx, r.plan.Node, stop)
}

// holdKey takes the lease named key (taking over only from a holder that is gone) and keeps
// it renewed; the returned context ends when the lease is lost, and release stops the
// renewal (it does not give the lease back: a campaign releases its own, a node's is kept
// until uncordon).
func (e *Engine) holdKey(ctx context.Context, key string) (context.Context, func(), error) {
	if err := e.kube.AcquireLease(ctx, key, e.o.Holder, e.o.LeaseTTL, e.mayReplace); err != nil {
		return ctx, func() {}, err
	}
	ctx, stop := context.WithCancelCause(ctx)
	var keeper sync.WaitGroup
	keeper.Add(1)
	go func() { defer keeper.Done(); e.keepLease(ctx, key, stop) }()
	return ctx, func() { stop(nil); keeper.Wait() }, nil
}

// keepLease renews the lease named key (a node's, a campaign's) every third of its TTL
// until ctx ends; when someone else has it, or it could not be renewed before it expires,
// stop is called with the cause.
func (e *Engine) keepLease(ctx context.Context, key string, stop context.CancelCauseFunc) {
	e.keepLeaseAs(ctx, key, e.o.Holder, stop)
}

// keepLeaseAs is keepLease for a lease held under another identity (a node slot's).
func (e *Engine) keepLeaseAs(ctx context.Context, key, holder string, stop context.CancelCauseFunc) {
	last := e.now()
	t := time.NewTicker(e.o.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := e.kube.AcquireLease(ctx, key, holder, e.o.LeaseTTL, nil)
		var held *LeaseHeldError
		switch {
		case err == nil:
			last = e.now()
		case errors.As(err, &held):
			stop(fmt.Errorf("%w: now held by %s", ErrLeaseLost, held.Holder))
			return
		case e.now().Sub(last) > e.o.LeaseTTL*2/3:
			// The next attempt would come after the lease expired: stop while it is ours.
			stop(fmt.Errorf("%w: not renewed for %s: %v", ErrLeaseLost, e.now().Sub(last).Round(time.Millisecond), err))
			return
		}
	}
}

// leaseReadTimeout bounds one read of a node lease's holder.
const leaseReadTimeout = 10 * time.Second

// stillHolder re-reads the node's lease just before a mutating request (a migration, an
// eviction, a service change): taken over meanwhile (an edit, a skewed clock), the run stops
// now, with cause ErrLeaseLost, instead of at its next renewal; the migrations it left in
// flight are Nova's to finish and the new holder's to follow. A read that fails leaves the
// decision to the renewal, which stops the run before the lease can expire.
func (r *runner) stillHolder(ctx context.Context) error {
	if !r.lease.holding {
		return nil
	}
	hs, err := r.e.leaseHolders.Do(ctx) // a read begun after the ask: the acts asking at once share it
	h := hs[r.plan.Node]
	if err != nil || h == r.e.o.Holder {
		return nil
	}
	if h == "" {
		h = "nobody (it expired)"
	}
	cause := fmt.Errorf("%w: now held by %s", ErrLeaseLost, h)
	r.lease.stop(cause)
	return cause
}

// watchCancel obeys a cancel request that names this holder.
func (r *runner) watchCancel(ctx context.Context, stop context.CancelCauseFunc) {
	changes, unsubscribe := r.e.kube.Subscribe()
	defer unsubscribe()
	for {
		if k, ok := r.e.kube.Node(r.plan.Node); ok {
			if c, ok := readCancel(k); ok && c.Holder == r.e.o.Holder {
				stop(&c)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changes:
		}
	}
}

// stopHolder asks the live holder of the node's lease, if another, to stop, and waits
// (bounded) until it has: its lease released or expired, or its journal saying it stopped
// (then r.lease.stopped names it: its lease, if it kept it, may be taken over). A holder that is
// provably gone needs no asking.
func (r *runner) stopHolder(ctx context.Context) error {
	e, node := r.e, r.plan.Node
	holder, until, err := e.kube.LeaseHolder(ctx, node)
	if err != nil || holder == "" || holder == e.o.Holder || e.mayReplace(holder) {
		return err
	}
	req := CancelRequest{Op: r.plan.Op, By: e.o.Holder, Holder: holder, At: e.now()}
	b, _ := json.Marshal(req)
	if err := e.kube.SetAnnotation(ctx, node, CancelAnnotation, string(b)); err != nil {
		return err
	}
	r.nodeChanged(fmt.Sprintf("asked %s to stop (%s)", holder, r.plan.Op))
	deadline := e.now().Add(e.o.CancelWait)
	return poll.Until(ctx, e.o.Poll, nil, func(ctx context.Context) (bool, string, error) {
		h, _, err := e.kube.LeaseHolder(ctx, node)
		if err == nil && h != holder {
			return true, "", nil
		}
		if k, ok := e.kube.Node(node); ok {
			if j, ok := ReadJournal(k); ok && j.Holder == holder && j.Phase == PhaseInterrupted &&
				!j.Updated.Before(req.At.Add(-time.Minute)) {
				r.lease.stopped = holder // stopped; it may not have released its lease yet, or keeps it
				return true, "", nil
			}
		}
		if e.now().After(deadline) {
			return false, "", &LeaseHeldError{Node: node, Holder: holder, Until: until,
				Reason: fmt.Sprintf("it did not stop within %s of the %s request; nothing was changed", e.o.CancelWait, r.plan.Op)}
		}
		return false, "", nil
	})
}

// clearCancel removes this engine's own cancel request once it has been served.
func (r *runner) clearCancel(ctx context.Context) {
	if k, ok := r.e.kube.Node(r.plan.Node); ok {
		if c, ok := readCancel(k); ok && c.By == r.e.o.Holder {
			_ = r.e.kube.SetAnnotation(ctx, r.plan.Node, CancelAnnotation, "")
		}
	}
}
