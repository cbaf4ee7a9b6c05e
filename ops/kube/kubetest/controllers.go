package kubetest

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// DaemonSet creates a DaemonSet (kubectl's drain filters look it up) and returns its UID.
func DaemonSet(t testing.TB, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	sel := map[string]string{"ds": name}
	ds, err := cs.AppsV1().DaemonSets(ns).Create(Ctx(t), &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(ds.UID)
}

// Controllers plays, in namespace ns, the kubelet (graceful deletions finish after
// DeleteAfter) and the disruption controller (every PDB's status follows its pods), as a
// real cluster would, until the test ends.
type Controllers struct {
	DeleteAfter time.Duration
	// ReplaceOn, when set, plays the ReplicaSet controller and the scheduler: a ReplicaSet pod
	// that is deleted (terminating) comes back at once (a new name) on this node, Ready
	// ReadyAfter later.
	ReplaceOn  string
	ReadyAfter time.Duration
	// Every is how often it looks (default 20 ms); a fleet of namespaces looks less often,
	// or its lists would load the API server more than what is measured.
	Every time.Duration
	// Non-graceful node shutdown, as the controller manager plays it (Kubernetes 1.28+): the
	// pods of a NotReady node tainted node.kubernetes.io/out-of-service that do not tolerate
	// the taint are force-deleted. Always played.

	mu       sync.Mutex
	frozen   map[string]bool
	replaced map[types.UID]bool
	dead     map[string]*corev1.Taint // the nodes out of service, read every quarter second
	deadAt   time.Time
}

// firstSeen reports whether this is the first time the terminating pod is seen.
func (c *Controllers) firstSeen(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.replaced == nil {
		c.replaced = map[types.UID]bool{}
	}
	if c.replaced[uid] {
		return false
	}
	c.replaced[uid] = true
	return true
}

// Freeze stops recomputing a PDB: it keeps whatever status the test writes (a budget that
// never allows).
func (c *Controllers) Freeze(pdb string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen == nil {
		c.frozen = map[string]bool{}
	}
	c.frozen[pdb] = true
}

func (c *Controllers) isFrozen(pdb string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frozen[pdb]
}

// Run starts the loops.
func (c *Controllers) Run(t testing.TB, cs kubernetes.Interface, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(cmp.Or(c.Every, 20*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				c.step(ctx, cs, ns)
			}
		}
	}()
}

func (c *Controllers) step(ctx context.Context, cs kubernetes.Interface, ns string) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	if time.Since(c.deadAt) > 250*time.Millisecond { // a node list per tick would load the shared API server
		c.dead, c.deadAt = outOfService(ctx, cs), time.Now()
	}
	dead := c.dead
	for _, p := range pods.Items {
		if taint, ok := dead[p.Spec.NodeName]; ok && !corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, taint, false) {
			_ = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			continue
		}
		// The ReplicaSet controller counts a terminating pod as gone: its replacement is
		// created at once, while the old one still terminates.
		if ref := metav1.GetControllerOf(&p); p.DeletionTimestamp != nil && c.ReplaceOn != "" && ref != nil && ref.Kind == "ReplicaSet" && c.firstSeen(p.UID) {
			c.replace(ctx, cs, p)
		}
		if p.DeletionTimestamp != nil && time.Since(p.DeletionTimestamp.Time.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0))*time.Second)) >= c.DeleteAfter {
			err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				return
			}
		}
		if p.Status.Phase == corev1.PodPending && p.Annotations["kubetest/ready-at"] != "" {
			if at, err := time.Parse(time.RFC3339Nano, p.Annotations["kubetest/ready-at"]); err == nil && time.Now().After(at) {
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
				_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			}
		}
	}
	pdbs, err := cs.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	pods, err = cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, pdb := range pdbs.Items {
		if c.isFrozen(pdb.Name) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		// As the real disruption controller: a pod the eviction API has just let go
		// (DisruptedPods) counts as disrupted until its deletion shows, for the API server
		// writes the budget before it deletes the pod, and a status computed in between
		// must not give the disruption back.
		var expected, healthy int32
		disrupted := map[string]metav1.Time{}
		for _, p := range pods.Items {
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			expected++
			at, evicted := pdb.Status.DisruptedPods[p.Name]
			if evicted && p.DeletionTimestamp == nil && time.Since(at.Time) < 2*time.Minute {
				disrupted[p.Name] = at
				continue
			}
			if p.DeletionTimestamp == nil && ready(&p) {
				healthy++
			}
		}
		desired := expected
		if pdb.Spec.MinAvailable != nil {
			v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
			desired = int32(v)
		} else if pdb.Spec.MaxUnavailable != nil {
			v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
			desired = expected - int32(v)
		}
		allowed := max(0, healthy-desired)
		st := pdb.Status
		if st.ObservedGeneration == pdb.Generation && st.DisruptionsAllowed == allowed && st.CurrentHealthy == healthy &&
			st.DesiredHealthy == desired && st.ExpectedPods == expected && len(st.DisruptedPods) == len(disrupted) {
			continue
		}
		pdb.Status.DisruptedPods = disrupted
		pdb.Status.ObservedGeneration, pdb.Status.DisruptionsAllowed = pdb.Generation, allowed
		pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods = healthy, desired, expected
		_, _ = cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, &pdb, metav1.UpdateOptions{})
	}
}

var replacements atomic.Int64

// replace creates the pod's replacement on ReplaceOn, Pending until ReadyAfter has passed.
func (c *Controllers) replace(ctx context.Context, cs kubernetes.Interface, old corev1.Pod) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: old.Namespace, Labels: old.Labels, OwnerReferences: old.OwnerReferences,
		Name:        fmt.Sprintf("%s-r%d", strings.SplitN(old.Name, "-r", 2)[0], replacements.Add(1)),
		Annotations: map[string]string{"kubetest/ready-at": time.Now().Add(c.ReadyAfter).Format(time.RFC3339Nano)}},
		Spec: corev1.PodSpec{NodeName: c.ReplaceOn, Containers: old.Spec.Containers, TerminationGracePeriodSeconds: old.Spec.TerminationGracePeriodSeconds}}
	if created, err := cs.CoreV1().Pods(old.Namespace).Create(ctx, p, metav1.CreateOptions{}); err == nil {
		created.Status.Phase = corev1.PodPending
		_, _ = cs.CoreV1().Pods(old.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	}
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// outOfService maps each NotReady node tainted out-of-service to that taint.
func outOfService(ctx context.Context, cs kubernetes.Interface) map[string]*corev1.Taint {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]*corev1.Taint{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		for j := range n.Spec.Taints {
			if n.Spec.Taints[j].Key == "node.kubernetes.io/out-of-service" && !ready {
				out[n.Name] = &n.Spec.Taints[j]
			}
		}
	}
	return out
}
