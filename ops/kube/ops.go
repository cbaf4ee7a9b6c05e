package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/answers"
)

// LeaseNamespace is the default namespace of drainctl's own (Options.Namespace, [kubernetes]
// namespace): its per-node maintenance leases, its leader leases and its records live there,
// so that its RBAC grants no access to anyone else's (the scheduler's and the
// controller-manager's leases are in kube-system). EventNamespace is where the Events drainctl
// records on Nodes go (cluster-scoped objects' Events live in "default").
const (
	LeaseNamespace = "drainctl"
	EventNamespace = "default"
)

// Client is the engine's Kubernetes side: the inventory's cache for reads, the clientset
// for writes.
type Client struct {
	*Inventory
	cs kubernetes.Interface
	ns string // drainctl's own namespace: its leases and records
	// Answers are told the API server's answers, when the client's configuration was tuned
	// with them (Options.Answers).
	Answers *answers.Listeners

	userMu sync.Mutex
	user   string // this client's Kubernetes user, as the API server authenticates it ("": not yet known)

	// written is each record as this client last wrote it: the next write updates it without
	// reading it first (a campaign's record is written many times a second, and is large); a
	// write refused as stale reads it again.
	writtenMu sync.Mutex
	written   map[string]*corev1.ConfigMap
}

var _ ops.Kube = (*Client)(nil)

// NewClient pairs a clientset with its (started) inventory; drainctl's leases and records
// are in LeaseNamespace unless InNamespace says another.
func NewClient(cs kubernetes.Interface, inv *Inventory) *Client {
	return &Client{Inventory: inv, cs: cs, ns: LeaseNamespace}
}

// InNamespace keeps drainctl's leases and records in ns (every drainctl of the cluster must
// name the same one); empty keeps LeaseNamespace.
func (c *Client) InNamespace(ns string) *Client {
	if ns != "" {
		c.ns = ns
	}
	return c
}

// Namespace is drainctl's own namespace, where its leases and records are.
func (c *Client) Namespace() string { return c.ns }

// OnAnswer adds fn to the listeners of every answer of the API server from now on (none
// without Answers).
func (c *Client) OnAnswer(fn func(took time.Duration, status int)) {
	if c.Answers != nil {
		c.Answers.On(fn)
	}
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
		n.Spec.Taints = append(
			n.Spec.Taints,
			corev1.Taint{Key: taint.Key, Value: taint.Value, Effect: corev1.TaintEffect(taint.Effect), TimeAdded: ptr.To(metav1.Now())},
		)
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
			kept = append(
				kept,
				corev1.Taint{Key: taint.Key, Value: taint.Value, Effect: corev1.TaintEffect(taint.Effect), TimeAdded: ptr.To(metav1.Now())},
			)
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
func (c *Client) PodsForDeletion(
	ctx context.Context,
	node string,
	o ops.DrainFilterOptions,
	extra func(model.Pod) bool,
) ([]model.Pod, []error, error) {
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

// NodeFresh reads the Node and its kubelet's Lease from the API server, not the cache: what a
// destructive step acts on is the node as it is now. found is false when it is gone.
func (c *Client) NodeFresh(ctx context.Context, name string) (model.KubeNode, bool, error) {
	n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return model.KubeNode{}, false, nil
	case err != nil:
		return model.KubeNode{}, false, fmt.Errorf("reading node %s: %w", name, err)
	}
	k := nodeModel(n)
	if k.Heartbeat, err = c.kubeletHeartbeat(ctx, name); err != nil {
		return model.KubeNode{}, false, err
	}
	return k, true, nil
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
