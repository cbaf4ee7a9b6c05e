package kubetest

import (
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
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
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
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
				}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(ds.UID)
}

// Controllers plays, in namespace ns, the kubelet (graceful deletions finish after
// DeleteAfter) and the disruption controller (every PDB's status follows its pods), as a
// real cluster would, until the test ends. Like the real ones it reads from informers and
// acts on their events (and on its own deadlines: a deletion's end, a replacement's
// readiness), never by listing: a fleet's worth of polling lists would load the shared API
// server more than what a test measures.
type Controllers struct {
	DeleteAfter time.Duration
	// ReplaceOn, when set, plays the ReplicaSet controller and the scheduler: a ReplicaSet pod
	// that is deleted (terminating) comes back at once (a new name) on this node, Ready
	// ReadyAfter later.
	ReplaceOn  string
	ReadyAfter time.Duration
	// Non-graceful node shutdown, as the controller manager plays it (Kubernetes 1.28+): the
	// pods of a NotReady node tainted node.kubernetes.io/out-of-service that do not tolerate
	// the taint are force-deleted. Always played.

	mu       sync.Mutex
	frozen   map[string]bool
	replaced map[types.UID]bool
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

// world is what the played controllers read: their informers' caches.
type world struct {
	pods  corelisters.PodLister
	pdbs  policylisters.PodDisruptionBudgetLister
	nodes corelisters.NodeLister
}

// Run starts the informers and the loop that acts on their events and its deadlines.
func (c *Controllers) Run(t testing.TB, cs kubernetes.Interface, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	inNS := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	cluster := informers.NewSharedInformerFactory(cs, 0)
	w := world{pods: inNS.Core().V1().Pods().Lister(), pdbs: inNS.Policy().V1().PodDisruptionBudgets().Lister(),
		nodes: cluster.Core().V1().Nodes().Lister()}
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default: // one is pending: bursts coalesce
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke}
	for _, inf := range []cache.SharedIndexInformer{inNS.Core().V1().Pods().Informer(),
		inNS.Policy().V1().PodDisruptionBudgets().Informer(), cluster.Core().V1().Nodes().Informer()} {
		_, _ = inf.AddEventHandler(handler)
	}
	inNS.Start(ctx.Done())
	cluster.Start(ctx.Done())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done; inNS.Shutdown(); cluster.Shutdown() })
	inNS.WaitForCacheSync(ctx.Done())
	cluster.WaitForCacheSync(ctx.Done())
	go func() {
		defer close(done)
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-timer.C:
			}
			next := c.step(ctx, cs, ns, w)
			timer.Stop()
			if !next.IsZero() {
				timer.Reset(max(time.Until(next), time.Millisecond))
			}
		}
	}()
}

// step does what is due now and returns when something next falls due (zero: nothing).
func (c *Controllers) step(ctx context.Context, cs kubernetes.Interface, ns string, w world) (next time.Time) {
	due := func(at time.Time) bool {
		if time.Now().Before(at) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			return false
		}
		return true
	}
	pods, err := w.pods.List(labels.Everything())
	if err != nil {
		return time.Now().Add(time.Second)
	}
	dead := outOfService(w.nodes)
	for _, p := range pods {
		if taint, ok := dead[p.Spec.NodeName]; ok &&
			!corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, taint, false) {
			_ = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			continue
		}
		// The ReplicaSet controller counts a terminating pod as gone: its replacement is
		// created at once, while the old one still terminates.
		if ref := metav1.GetControllerOf(p); p.DeletionTimestamp != nil && c.ReplaceOn != "" && ref != nil && ref.Kind == "ReplicaSet" &&
			c.firstSeen(p.UID) {
			c.replace(ctx, cs, *p)
		}
		if p.DeletionTimestamp != nil &&
			due(p.DeletionTimestamp.Time.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0))*time.Second).Add(c.DeleteAfter)) {
			err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				return time.Now().Add(100 * time.Millisecond)
			}
		}
		if p.Status.Phase == corev1.PodPending && p.Annotations["kubetest/ready-at"] != "" {
			if at, err := time.Parse(time.RFC3339Nano, p.Annotations["kubetest/ready-at"]); err == nil && due(at) {
				up := p.DeepCopy()
				up.Status.Phase = corev1.PodRunning
				up.Status.Conditions = []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
				}
				if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil {
					due(time.Now().Add(100 * time.Millisecond)) // a stale copy: again once the cache has the new one
				}
			}
		}
	}
	pdbs, err := w.pdbs.List(labels.Everything())
	if err != nil {
		return time.Now().Add(time.Second)
	}
	for _, cached := range pdbs {
		if c.isFrozen(cached.Name) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(cached.Spec.Selector)
		if err != nil {
			continue
		}
		pdb := cached.DeepCopy()
		// As the real disruption controller: a pod the eviction API has just let go
		// (DisruptedPods) counts as disrupted until its deletion shows, for the API server
		// writes the budget before it deletes the pod, and a status computed in between
		// must not give the disruption back.
		var expected, healthy int32
		disrupted := map[string]metav1.Time{}
		for _, p := range pods {
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			expected++
			at, evicted := pdb.Status.DisruptedPods[p.Name]
			if evicted && p.DeletionTimestamp == nil && time.Since(at.Time) < 2*time.Minute {
				disrupted[p.Name] = at
				continue
			}
			if p.DeletionTimestamp == nil && ready(p) {
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
		// Written over the cached copy: a budget the API server changed since is refused
		// (409), and computed again from its event.
		_, _ = cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	}
	return next
}

var replacements atomic.Int64

// replace creates the pod's replacement on ReplaceOn, Pending until ReadyAfter has passed.
func (c *Controllers) replace(ctx context.Context, cs kubernetes.Interface, old corev1.Pod) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: old.Namespace, Labels: old.Labels, OwnerReferences: old.OwnerReferences,
		Name:        fmt.Sprintf("%s-r%d", strings.SplitN(old.Name, "-r", 2)[0], replacements.Add(1)),
		Annotations: map[string]string{"kubetest/ready-at": time.Now().Add(c.ReadyAfter).Format(time.RFC3339Nano)}},
		Spec: corev1.PodSpec{
			NodeName:                      c.ReplaceOn,
			Containers:                    old.Spec.Containers,
			TerminationGracePeriodSeconds: old.Spec.TerminationGracePeriodSeconds,
		}}
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
func outOfService(nodes corelisters.NodeLister) map[string]*corev1.Taint {
	all, err := nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	out := map[string]*corev1.Taint{}
	for _, n := range all {
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
