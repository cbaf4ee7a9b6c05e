package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// LeaseNamespace holds drainctl's per-node maintenance leases and its leader leases: a
// namespace of its own, so that its RBAC grants no access to anyone else's leases (the
// scheduler's and the controller-manager's are in kube-system). EventNamespace is where the
// Events drainctl records on Nodes go (cluster-scoped objects' Events live in "default").
const (
	LeaseNamespace = "drainctl"
	EventNamespace = "default"
)

// Client is the engine's Kubernetes side: the inventory's cache for reads, the clientset
// for writes.
type Client struct {
	*Inventory
	cs kubernetes.Interface
}

var _ ops.Kube = (*Client)(nil)

// NewClient pairs a clientset with its (started) inventory.
func NewClient(cs kubernetes.Interface, inv *Inventory) *Client {
	return &Client{Inventory: inv, cs: cs}
}

// Clientset is the underlying clientset.
func (c *Client) Clientset() kubernetes.Interface { return c.cs }

// PDB reads a budget's status from the cache.
func (c *Client) PDB(ns, name string) (model.PDB, bool) {
	obj, ok, _ := c.pdbs.GetStore().GetByKey(ns + "/" + name)
	if !ok {
		return model.PDB{}, false
	}
	p := obj.(*policyv1.PodDisruptionBudget)
	return model.PDB{Namespace: ns, Name: name, DisruptionsAllowed: p.Status.DisruptionsAllowed,
		CurrentHealthy: p.Status.CurrentHealthy, DesiredHealthy: p.Status.DesiredHealthy, ExpectedPods: p.Status.ExpectedPods}, true
}

// Disrupted reports whether the budget's status, as cached, lists the pod among its
// disrupted pods: the API server counted its eviction against the budget.
func (c *Client) Disrupted(ns, pdb, pod string) bool {
	obj, ok, _ := c.pdbs.GetStore().GetByKey(ns + "/" + pdb)
	if !ok {
		return false
	}
	_, listed := obj.(*policyv1.PodDisruptionBudget).Status.DisruptedPods[pod]
	return listed
}

// updateNode applies change to a fresh copy of the node and writes it, retrying on conflict.
func (c *Client) updateNode(ctx context.Context, name string, change func(*corev1.Node) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !change(n) {
			return nil
		}
		_, err = c.cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// Cordon sets spec.unschedulable and the maintenance taint.
func (c *Client) Cordon(ctx context.Context, node string, taint model.Taint) error {
	err := c.updateNode(ctx, node, func(n *corev1.Node) bool {
		changed := !n.Spec.Unschedulable
		n.Spec.Unschedulable = true
		for _, t := range n.Spec.Taints {
			if t.Key == taint.Key {
				return changed
			}
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: taint.Key, Value: taint.Value, Effect: corev1.TaintEffect(taint.Effect), TimeAdded: ptr.To(metav1.Now())})
		return true
	})
	if err != nil {
		return fmt.Errorf("cordoning %s: %w", node, err)
	}
	return nil
}

// Uncordon clears spec.unschedulable and removes the taint.
func (c *Client) Uncordon(ctx context.Context, node string, taintKey string) error {
	err := c.updateNode(ctx, node, func(n *corev1.Node) bool {
		changed := n.Spec.Unschedulable
		n.Spec.Unschedulable = false
		kept := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key == taintKey {
				changed = true
				continue
			}
			kept = append(kept, t)
		}
		n.Spec.Taints = kept
		return changed
	})
	if err != nil {
		return fmt.Errorf("uncordoning %s: %w", node, err)
	}
	return nil
}

// SetTaint adds the taint, or removes every taint with its key.
func (c *Client) SetTaint(ctx context.Context, node string, taint model.Taint, on bool) error {
	err := c.updateNode(ctx, node, func(n *corev1.Node) bool {
		kept := n.Spec.Taints[:0:0]
		for _, t := range n.Spec.Taints {
			if t.Key != taint.Key {
				kept = append(kept, t)
			}
		}
		had := len(kept) != len(n.Spec.Taints)
		if on == had {
			return false
		}
		if on {
			kept = append(kept, corev1.Taint{Key: taint.Key, Value: taint.Value, Effect: corev1.TaintEffect(taint.Effect), TimeAdded: ptr.To(metav1.Now())})
		}
		n.Spec.Taints = kept
		return true
	})
	if err != nil {
		verb := "removing"
		if on {
			verb = "setting"
		}
		return fmt.Errorf("%s taint %s on %s: %w", verb, taint.Key, node, err)
	}
	return nil
}

// SetAnnotation sets (or, with "", removes) a node annotation with a merge patch.
func (c *Client) SetAnnotation(ctx context.Context, node, key, value string) error {
	return c.patchMeta(ctx, node, "annotations", key, value)
}

// SetLabel sets (or, with "", removes) a node label with a merge patch.
func (c *Client) SetLabel(ctx context.Context, node, key, value string) error {
	return c.patchMeta(ctx, node, "labels", key, value)
}

func (c *Client) patchMeta(ctx context.Context, node, field, key, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{field: map[string]any{key: v}}})
	if _, err := c.cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		verb := map[string]string{"annotations": "annotating", "labels": "labelling"}[field]
		return fmt.Errorf("%s %s: %w", verb, node, err)
	}
	return nil
}

// Evict asks for the pod's eviction. The typed client retries a 429 that carries
// Retry-After up to ten times (about 100 s) before returning it; the engine wants every
// refusal at once, to report it and wait for the budget itself, so it posts through the
// REST client with no retries where it has one (the fake clientset has none).
func (c *Client) Evict(ctx context.Context, pod model.Pod, grace *int64, useDelete bool) error {
	opts := &metav1.DeleteOptions{GracePeriodSeconds: grace}
	if pod.UID != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(pod.UID)
	}
	var err error
	switch {
	case useDelete:
		err = c.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, *opts)
	default:
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}, DeleteOptions: opts}
		if rc := c.cs.CoreV1().RESTClient(); !isNilREST(rc) {
			err = rc.Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("eviction").
				Body(ev).MaxRetries(0).Do(ctx).Error()
		} else {
			err = c.cs.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
		}
	}
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err) && pod.UID != "":
		return nil // the UID precondition failed: a new pod of the same name, ours is gone
	case apierrors.IsTooManyRequests(err):
		return &ops.BudgetError{Pod: pod.Key(), PDB: budgetName(err), Message: statusMessage(err)}
	case transient(err):
		return &ops.TransientError{Err: err}
	}
	return fmt.Errorf("evicting %s: %w", pod.Key(), err)
}

// isNilREST spots the fake clientset, whose RESTClient() is a nil *rest.RESTClient.
func isNilREST(rc rest.Interface) bool {
	if rc == nil {
		return true
	}
	p, ok := rc.(*rest.RESTClient)
	return ok && p == nil
}

// budgetName digs the PDB's name out of the API server's message ("The disruption budget
// web-pdb needs 2 healthy pods…").
func budgetName(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return ""
	}
	msgs := []string{st.Status().Message}
	if d := st.Status().Details; d != nil {
		for _, c := range d.Causes {
			msgs = append(msgs, c.Message)
		}
	}
	for _, m := range msgs {
		if _, rest, ok := strings.Cut(m, "disruption budget "); ok {
			if name, _, ok := strings.Cut(rest, " "); ok {
				return name
			}
		}
	}
	return ""
}

func statusMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return err.Error()
}

// PodsForDeletion runs kubectl drain's filters (DaemonSet, mirror, local storage, bare pod)
// plus extra, drainctl's own rules, and returns the pods to remove and kubectl's refusals.
func (c *Client) PodsForDeletion(ctx context.Context, node string, o ops.DrainFilterOptions, extra func(model.Pod) bool) ([]model.Pod, []error, error) {
	h := &drain.Helper{Ctx: ctx, Client: c.cs, Force: o.Force, IgnoreAllDaemonSets: o.IgnoreDaemonSets,
		DeleteEmptyDirData: o.DeleteEmptyDirData, GracePeriodSeconds: -1, Out: io.Discard, ErrOut: io.Discard}
	if extra != nil {
		h.AdditionalFilters = []drain.PodFilter{func(p corev1.Pod) drain.PodDeleteStatus {
			if extra(c.podModel(&p, c.pdbsIn(p.Namespace))) {
				return drain.MakePodDeleteStatusSkip()
			}
			return drain.MakePodDeleteStatusOkay()
		}}
	}
	list, errs := h.GetPodsForDeletion(node)
	if list == nil {
		return nil, errs, nil
	}
	var out []model.Pod
	for _, p := range list.Pods() {
		out = append(out, c.podModel(&p, c.pdbsIn(p.Namespace)))
	}
	return out, errs, nil
}

func leaseName(node string) string { return "drainctl-" + node }

// AcquireLease creates or takes over the node's lease. A lease held by another holder and
// renewed within its duration is refused.
func (c *Client) AcquireLease(ctx context.Context, node, holder string, ttl time.Duration, mayReplace func(string) bool) error {
	return c.acquire(ctx, node, holder, ttl, mayReplace, 3)
}

// acquire is AcquireLease with a bound on the re-reads after a race (a lease created or
// changed between our read and our write).
func (c *Client) acquire(ctx context.Context, node, holder string, ttl time.Duration, mayReplace func(string) bool, tries int) error {
	leases := c.cs.CoordinationV1().Leases(LeaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	secs := int32(ttl.Seconds())
	l, err := leases.Get(ctx, leaseName(node), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName(node), Namespace: LeaseNamespace,
			Labels: map[string]string{LeaseHolderLabel: holderLabel(holder)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && tries > 0 {
			return c.acquire(ctx, node, holder, ttl, mayReplace, tries-1)
		}
		if apierrors.IsNotFound(err) && tries > 0 && c.ensureLeaseNamespace(ctx) == nil {
			return c.acquire(ctx, node, holder, ttl, mayReplace, tries-1)
		}
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s, where drainctl keeps its leases, does not exist and cannot be created: kubectl apply -f deploy/namespace.yaml", LeaseNamespace)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("reading lease %s/%s: %w", LeaseNamespace, leaseName(node), err)
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
	l, err := c.cs.CoordinationV1().Leases(LeaseNamespace).Get(ctx, leaseName(node), metav1.GetOptions{})
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
	list, err := c.cs.CoordinationV1().Leases(LeaseNamespace).List(ctx, metav1.ListOptions{})
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
	list, err := c.cs.CoordinationV1().Leases(LeaseNamespace).List(ctx, metav1.ListOptions{
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
	_, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: LeaseNamespace}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ReleaseLease gives the lease back if holder still holds it.
func (c *Client) ReleaseLease(ctx context.Context, node, holder string) error {
	leases := c.cs.CoordinationV1().Leases(LeaseNamespace)
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

// NodeEvent records a Kubernetes Event on the node (kubectl describe node shows it).
func (c *Client) NodeEvent(ctx context.Context, node, eventType, reason, message string) {
	now := metav1.NewTime(time.Now())
	// Best effort, as kubelet's own events: an Event that cannot be written (RBAC, an API
	// server hiccup) must not stop the operation it describes, which the journal records.
	_, _ = c.cs.CoreV1().Events(EventNamespace).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: node + ".", Namespace: EventNamespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node), APIVersion: "v1"},
		Reason:         reason, Message: message, Type: eventType, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "drainctl"},
	}, metav1.CreateOptions{})
}

// RunAsLeader runs fn while this process holds the leader lease LeaseNamespace/lockName;
// fn's context ends when leadership is lost. say hears, once each, why the lease cannot be
// read or written (no namespace, no RBAC): a replica that can never lead says so instead of waiting
// in silence.
func RunAsLeader(ctx context.Context, cs kubernetes.Interface, lockName, identity string, say func(string), fn func(context.Context) error) error {
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, LeaseNamespace, lockName,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
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
	return fmt.Errorf("lost the leadership (lease %s/%s): another instance may lead now; exiting so that this one restarts", LeaseNamespace, lockName)
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

// NodeFresh reads the Node from the API server, not the cache: what a destructive step
// acts on is the node as it is now. found is false when it is gone.
func (c *Client) NodeFresh(ctx context.Context, name string) (model.KubeNode, bool, error) {
	n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return model.KubeNode{}, false, nil
	case err != nil:
		return model.KubeNode{}, false, fmt.Errorf("reading node %s: %w", name, err)
	}
	return nodeModel(n), true, nil
}

// NodeLeaseNamespace holds the kubelets' heartbeats, a Lease per node.
const NodeLeaseNamespace = "kube-node-lease"

// KubeletHeartbeats are the renewTime of every kubelet's Lease, by node: one list, served from
// the API server's watch cache (resourceVersion 0).
func (c *Client) KubeletHeartbeats(ctx context.Context) (map[string]time.Time, error) {
	list, err := c.cs.CoordinationV1().Leases(NodeLeaseNamespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("reading the kubelets' leases in %s: %w", NodeLeaseNamespace, err)
	}
	out := make(map[string]time.Time, len(list.Items))
	for _, l := range list.Items {
		if l.Spec.RenewTime != nil {
			out[l.Name] = l.Spec.RenewTime.Time
		}
	}
	return out, nil
}

// KubeletHeartbeat is the renewTime of the node's kubelet Lease, read from the API server;
// found is false when the node has none.
func (c *Client) KubeletHeartbeat(ctx context.Context, node string) (time.Time, bool, error) {
	l, err := c.cs.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("reading the kubelet lease of %s: %w", node, err)
	case l.Spec.RenewTime == nil:
		return time.Time{}, true, nil
	}
	return l.Spec.RenewTime.Time, true, nil
}

// DeleteNode deletes the Node object; already gone is fine.
func (c *Client) DeleteNode(ctx context.Context, node string) error {
	err := c.cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", node, err)
	}
	return nil
}

// transient: errors that a retry a moment later may not meet: the API server restarting or
// overloaded (5xx, timeouts, connection refused or reset).
func transient(err error) bool {
	switch {
	case apierrors.IsInternalError(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return true
	case utilnet.IsConnectionRefused(err), utilnet.IsConnectionReset(err), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 500 {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
