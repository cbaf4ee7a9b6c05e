package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/ops"
)

// A node's maintenance lease (drainctl-<node> in drainctl's namespace): who works the node, kept
// renewed while it does; and the leader lease of the roles that run once in a cluster.

func leaseName(node string) string { return "drainctl-" + node }

// AcquireLease creates or takes over the node's lease. A lease held by another holder and
// renewed within its duration is refused.
func (c *Client) AcquireLease(ctx context.Context, node, holder string, ttl time.Duration, mayReplace func(string) bool) error {
	return c.acquire(ctx, node, holder, ttl, mayReplace, 3)
}

// acquire is AcquireLease with a bound on the re-reads after a race (a lease created or
// changed between our read and our write).
func (c *Client) acquire(ctx context.Context, node, holder string, ttl time.Duration, mayReplace func(string) bool, tries int) error {
	leases := c.cs.CoordinationV1().Leases(c.ns)
	now := metav1.NewMicroTime(time.Now())
	secs := int32(ttl.Seconds())
	l, err := leases.Get(ctx, leaseName(node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName(node), Namespace: c.ns,
			Labels: map[string]string{LeaseHolderLabel: holderLabel(holder)}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       &holder,
				LeaseDurationSeconds: &secs,
				AcquireTime:          &now,
				RenewTime:            &now,
			}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && tries > 0 {
			return c.acquire(ctx, node, holder, ttl, mayReplace, tries-1)
		}
		if apierrors.IsNotFound(err) && tries > 0 && c.ensureLeaseNamespace(ctx) == nil {
			return c.acquire(ctx, node, holder, ttl, mayReplace, tries-1)
		}
		if apierrors.IsNotFound(err) {
			return fmt.Errorf(
				"namespace %s, where drainctl keeps its leases, does not exist and cannot be created: kubectl apply -f "+
					"deploy/namespace.yaml",
				c.ns,
			)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("reading lease %s/%s: %w", c.ns, leaseName(node), err)
	}
	if h, until := liveHolder(l); h != "" && h != holder && (mayReplace == nil || !mayReplace(h)) {
		var since time.Time
		if l.Spec.AcquireTime != nil {
			since = l.Spec.AcquireTime.Time
		}
		return &ops.LeaseHeldError{Node: node, Holder: h, Since: since, Until: until}
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != holder {
		l.Spec.AcquireTime = &now
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &secs, &now
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[LeaseHolderLabel] = holderLabel(holder)
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			// Changed between our read and our write (its holder renewed or released it):
			// read it again and decide on what it is now.
			if tries > 0 {
				return c.acquire(ctx, node, holder, ttl, mayReplace, tries-1)
			}
			return &ops.LeaseHeldError{Node: node, Holder: "another actor (lease changed under us)", Until: time.Now()}
		}
		return err
	}
	return nil
}

// LeaseHolder reads who holds the node's lease; "" when nobody does or it has expired.
func (c *Client) LeaseHolder(ctx context.Context, node string) (string, time.Time, error) {
	l, err := c.cs.CoordinationV1().Leases(c.ns).Get(ctx, leaseName(node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	h, until := liveHolder(l)
	return h, until, nil
}

// liveHolder is who holds the lease now ("": nobody, or it expired) and until when its last
// renewal holds (zero: never renewed).
func liveHolder(l *coordinationv1.Lease) (string, time.Time) {
	if l.Spec.RenewTime == nil {
		return "", time.Time{}
	}
	until := l.Spec.RenewTime.Add(time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second)
	if !time.Now().Before(until) {
		return "", until
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), until
}

// LeaseHolders is who holds each of the named leases (one LIST of drainctl's leases, not a
// GET each): a name absent, or expired, has "".
func (c *Client) LeaseHolders(ctx context.Context, names []string) (map[string]string, error) {
	list, err := c.cs.CoordinationV1().Leases(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	want := make(map[string]string, len(names))
	for _, n := range names {
		want[leaseName(n)] = n
	}
	out := make(map[string]string, len(names))
	for _, l := range list.Items {
		if name, ok := want[l.Name]; ok {
			if h, _ := liveHolder(&l); h != "" {
				out[name] = h
			}
		}
	}
	return out, nil
}

// LeasesHeldBy is who holds each lease that holder took (by the label it wrote on it): one
// LIST as long as what holder holds, not the namespace's every lease. A lease it took that
// another holder took over since shows that holder ("" expired); one that was deleted, or taken
// over with a new label, is absent.
func (c *Client) LeasesHeldBy(ctx context.Context, holder string) (map[string]string, error) {
	list, err := c.cs.CoordinationV1().Leases(c.ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set{LeaseHolderLabel: holderLabel(holder)}.String()})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list.Items))
	for _, l := range list.Items {
		key, ok := strings.CutPrefix(l.Name, leaseName(""))
		if !ok {
			continue
		}
		out[key], _ = liveHolder(&l)
	}
	return out, nil
}

// LeaseHolderLabel marks a lease with the holder that took it (a digest: a holder's identity
// is not a valid label value), so a holder lists its own leases alone.
const LeaseHolderLabel = "drainctl.io/holder"

func holderLabel(holder string) string {
	sum := sha256.Sum256([]byte(holder))
	return hex.EncodeToString(sum[:10])
}

// ensureLeaseNamespace creates the leases' namespace on a cluster drainctl has not been
// installed on (an operator's first evacuation from a laptop).
func (c *Client) ensureLeaseNamespace(ctx context.Context) error {
	_, err := c.cs.CoreV1().
		Namespaces().
		Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ReleaseLease gives the lease back if holder still holds it.
func (c *Client) ReleaseLease(ctx context.Context, node, holder string) error {
	leases := c.cs.CoordinationV1().Leases(c.ns)
	l, err := leases.Get(ctx, leaseName(node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != holder {
		return nil
	}
	err = leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// RunAsLeader runs fn while this process holds the leader lease lockName in drainctl's namespace;
// fn's context ends when leadership is lost. say hears, once each, why the lease cannot be
// read or written (no namespace, no RBAC): a replica that can never lead says so instead of waiting
// in silence.
func (c *Client) RunAsLeader(
	ctx context.Context,
	lockName, identity string,
	say func(string),
	fn func(context.Context) error,
) error {
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, c.ns, lockName,
		c.cs.CoreV1(), c.cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return err
	}
	lock := &saidLock{Interface: inner, say: say}
	started, done := make(chan struct{}), make(chan error, 1)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{Lock: lock, ReleaseOnCancel: true, Name: lockName,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { close(started); done <- fn(ctx) },
			OnStoppedLeading: func() {}}})
	select {
	case <-started:
	default:
		return ctx.Err() // never led: stopped while waiting for the leadership
	}
	runErr := <-done // its context ended with the leadership: it stops at a safe point
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case runErr != nil:
		return runErr
	}
	// The leadership was lost while ctx was alive (the lease not renewed in time, taken over):
	// exit non-zero so that the pod restarts and campaigns again, rather than idle as a follower.
	return fmt.Errorf(
		"lost the leadership (lease %s/%s): another instance may lead now; exiting so that this one restarts",
		c.ns,
		lockName,
	)
}

// saidLock is the leader lease, saying why it could not be read or written (client-go only
// logs it).
type saidLock struct {
	resourcelock.Interface
	say  func(string)
	last string
}

func (l *saidLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	if !apierrors.IsNotFound(err) { // none yet is how every first leader starts
		l.seen(err)
	}
	return r, raw, err
}

func (l *saidLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.seen(l.Interface.Create(ctx, r))
}

func (l *saidLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.seen(l.Interface.Update(ctx, r))
}

func (l *saidLock) seen(err error) error {
	if err != nil && err.Error() != l.last && l.say != nil {
		l.say(fmt.Sprintf("cannot hold the leader lease %s: %v", l.Describe(), err))
	}
	if err == nil {
		l.last = ""
	} else {
		l.last = err.Error()
	}
	return err
}
