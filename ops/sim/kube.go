package sim

import (
	"fmt"
	"sort"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

var (
	podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
	pdbsGVR = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
	podsGVK = corev1.SchemeGroupVersion.WithKind("Pod")
)

// Kube is a living Kubernetes for the demo and for benchmarks at sizes envtest cannot hold:
// client-go's fake clientset with reactors that play the API server's eviction rules and
// the controllers a drain depends on:
//   - evictions are checked against PDBs (429 with the DisruptionBudget cause, 500 for a pod
//     under two budgets), and the budget is recomputed as pods come and go;
//   - graceful deletion completes after the pod's grace period (on the simulated clock);
//   - ReplicaSet and StatefulSet pods are recreated on another schedulable node with room,
//     and become Ready after ReadyAfter; DaemonSet pods stay;
//   - the spec.nodeName field selector, which the fake ignores, is applied to pod lists;
//   - non-graceful node shutdown: the pods of a NotReady node tainted out-of-service that do
//     not tolerate the taint are force-deleted (and replaced elsewhere).
//
// Tests that need Kubernetes truth use the real kube-apiserver (envtest) instead.
type Kube struct {
	Clientset *fake.Clientset
	clock     *Clock
	// ReadyAfter is how long a recreated pod takes to become Ready (simulated time).
	ReadyAfter time.Duration

	mu      sync.Mutex
	timers  []*time.Timer
	stopped bool
	nextID  int
	// daemons are the DaemonSet pods a dead node lost to its out-of-service taint, by node:
	// the DaemonSet controller puts them back once the node is Ready and untainted.
	daemons map[string][]*corev1.Pod
}

// NewKube makes a simulated cluster holding objs.
func NewKube(clock *Clock, objs ...runtime.Object) *Kube {
	cs := fake.NewClientset(objs...)
	k := &Kube{Clientset: cs, clock: clock, ReadyAfter: 2 * time.Second}
	// kubectl's drain helper discovers the eviction subresource before using it.
	cs.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1"},
		{Name: "nodes", Kind: "Node", Verbs: []string{"get", "list", "watch", "patch", "update", "delete"}}}},
		{
			GroupVersion: "policy/v1",
			APIResources: []metav1.APIResource{{Name: "poddisruptionbudgets", Namespaced: true, Kind: "PodDisruptionBudget"}},
		}}
	cs.PrependReactor("create", "pods", k.evict)
	cs.PrependReactor("delete", "pods", k.deletePod)
	cs.PrependReactor("list", "pods", k.listPods)
	cs.PrependReactor("update", "nodes", k.nodeWritten)
	cs.PrependReactor("patch", "nodes", k.nodeWritten)
	cs.PrependReactor("create", "selfsubjectreviews", whoAmI)
	k.recomputeAllPDBs()
	return k
}

// SimUser is who every client of the simulated cluster is, as its API server answers a
// SelfSubjectReview: one operator (the demo has no identities).
const SimUser = "sim:operator"

func whoAmI(k8stesting.Action) (bool, runtime.Object, error) {
	return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
		UserInfo: authenticationv1.UserInfo{Username: SimUser}}}, nil
}

// Stop cancels pending deletions and recreations.
func (k *Kube) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	for _, t := range k.timers {
		t.Stop()
	}
}

// after runs f after a simulated duration.
func (k *Kube) after(d time.Duration, f func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	k.timers = append(k.timers, time.AfterFunc(k.clock.Real(d), f))
}

func (k *Kube) getPod(ns, name string) (*corev1.Pod, error) {
	obj, err := k.Clientset.Tracker().Get(podsGVR, ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// listPods applies the spec.nodeName field selector that the fake's tracker ignores.
func (k *Kube) listPods(a k8stesting.Action) (bool, runtime.Object, error) {
	la, ok := a.(k8stesting.ListActionImpl)
	if !ok {
		return false, nil, nil
	}
	fs := la.GetListRestrictions().Fields
	if fs == nil || fs.Empty() {
		return false, nil, nil
	}
	obj, err := k.Clientset.Tracker().List(podsGVR, podsGVK, la.GetNamespace())
	if err != nil {
		return true, nil, err
	}
	list := obj.(*corev1.PodList)
	ls := la.GetListRestrictions().Labels
	out := &corev1.PodList{ListMeta: list.ListMeta}
	for _, p := range list.Items {
		set := fields.Set{"spec.nodeName": p.Spec.NodeName, "metadata.name": p.Name,
			"metadata.namespace": p.Namespace, "status.phase": string(p.Status.Phase)}
		if fs.Matches(set) && (ls == nil || ls.Matches(labels.Set(p.Labels))) {
			out.Items = append(out.Items, p)
		}
	}
	return true, out, nil
}

// evict plays the eviction subresource, as measured on a real API server (envtest.md).
func (k *Kube) evict(a k8stesting.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	pod, err := k.getPod(ev.Namespace, ev.Name)
	if err != nil {
		return true, nil, err
	}
	if pod.DeletionTimestamp != nil {
		return true, ev, nil // already terminating: accepted, nothing changes
	}
	// Pods that are not running bypass budgets.
	if pod.Status.Phase == corev1.PodRunning {
		pdbs := k.pdbsFor(pod)
		if len(pdbs) > 1 {
			return true, nil, apierrors.NewInternalError(
				fmt.Errorf("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."),
			)
		}
		if len(pdbs) == 1 && isReady(pod) {
			pdb := pdbs[0]
			if pdb.Status.ObservedGeneration < pdb.Generation || pdb.Status.DisruptionsAllowed <= 0 {
				err := apierrors.NewTooManyRequests(
					fmt.Sprintf(
						"Cannot evict pod as it would violate the pod's disruption budget. The disruption budget %s needs %d "+
							"healthy pods and has %d currently",
						pdb.Name,
						pdb.Status.DesiredHealthy,
						pdb.Status.CurrentHealthy,
					),
					0,
				)
				err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
					Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods "+
						"and has %d currently",
						pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)})
				return true, nil, err
			}
			// The API server takes the disruption out of the budget itself.
			pdb.Status.DisruptionsAllowed--
			if pdb.Status.DisruptedPods == nil {
				pdb.Status.DisruptedPods = map[string]metav1.Time{}
			}
			pdb.Status.DisruptedPods[pod.Name] = metav1.NewTime(k.clock.Now())
			if err := k.Clientset.Tracker().Update(pdbsGVR, pdb, pdb.Namespace); err != nil {
				return true, nil, err
			}
		}
	}
	var grace *int64
	if ev.DeleteOptions != nil {
		grace = ev.DeleteOptions.GracePeriodSeconds
	}
	return true, ev, k.terminate(pod, grace)
}

// deletePod handles DELETE with a grace period the way the API server and kubelet do.
func (k *Kube) deletePod(a k8stesting.Action) (bool, runtime.Object, error) {
	da := a.(k8stesting.DeleteActionImpl)
	pod, err := k.getPod(da.GetNamespace(), da.GetName())
	if err != nil {
		return true, nil, err
	}
	return true, nil, k.terminate(pod, da.DeleteOptions.GracePeriodSeconds)
}

// terminate marks the pod terminating and finishes the deletion after its grace period.
func (k *Kube) terminate(pod *corev1.Pod, grace *int64) error {
	g := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if grace != nil && *grace >= 0 {
		g = *grace
	}
	if pod.Spec.NodeName == "" || g == 0 {
		return k.remove(pod)
	}
	if pod.DeletionTimestamp == nil {
		now := metav1.NewTime(k.clock.Now())
		pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &g
		if err := k.Clientset.Tracker().Update(podsGVR, pod, pod.Namespace); err != nil {
			return err
		}
		k.recomputePDBs(pod.Namespace)
		uid := pod.UID
		k.after(time.Duration(g)*time.Second, func() {
			if p, err := k.getPod(pod.Namespace, pod.Name); err == nil && p.UID == uid {
				_ = k.remove(p)
			}
		})
	}
	return nil
}

// remove deletes the pod for good and lets its controller replace it. A pod already gone
// (two sweeps, a force-delete after a sweep) was replaced by whoever removed it: never twice.
func (k *Kube) remove(pod *corev1.Pod) error {
	if cur, err := k.getPod(pod.Namespace, pod.Name); err == nil && cur.UID != pod.UID {
		return nil // replaced already (a StatefulSet pod keeps its name): this one is gone
	}
	if err := k.Clientset.Tracker().Delete(podsGVR, pod.Namespace, pod.Name); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	k.recomputePDBs(pod.Namespace)
	if ref := metav1.GetControllerOf(pod); ref != nil && (ref.Kind == "ReplicaSet" || ref.Kind == "StatefulSet") {
		k.replace(pod)
	}
	return nil
}

// replace plays the ReplicaSet/StatefulSet controller and the scheduler: a new pod on
// another schedulable node where its requests fit, Ready after ReadyAfter. A StatefulSet pod
// keeps its name; a ReplicaSet pod gets a new one.
func (k *Kube) replace(old *corev1.Pod) {
	node := k.placeFor(old)
	p := old.DeepCopy()
	p.ResourceVersion, p.DeletionTimestamp, p.DeletionGracePeriodSeconds = "", nil, nil
	k.mu.Lock()
	k.nextID++
	id := k.nextID
	k.mu.Unlock()
	p.UID = typesUID(fmt.Sprintf("%s-r%d", old.UID, id))
	if ref := metav1.GetControllerOf(old); ref.Kind == "ReplicaSet" {
		p.Name = fmt.Sprintf("%s-%s", ref.Name, randSuffix(5_000_000+id)) // the generator's names stay below
	}
	p.Spec.NodeName = node
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if node == "" {
		_ = k.Clientset.Tracker().Add(p) // unschedulable: stays Pending
		return
	}
	if err := k.Clientset.Tracker().Add(p); err != nil {
		return
	}
	k.after(k.ReadyAfter, func() {
		cur, err := k.getPod(p.Namespace, p.Name)
		if err != nil || cur.UID != p.UID {
			return
		}
		cur.Status.Phase = corev1.PodRunning
		cur.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(k.clock.Now())},
		}
		_ = k.Clientset.Tracker().Update(podsGVR, cur, cur.Namespace)
		k.recomputePDBs(cur.Namespace)
	})
}

// placeFor picks the schedulable, Ready node other than the pod's own with the most free
// CPU that fits the pod's requests (and tolerates its taints only by having none).
func (k *Kube) placeFor(pod *corev1.Pod) string {
	obj, err := k.Clientset.Tracker().List(corev1.SchemeGroupVersion.WithResource("nodes"), corev1.SchemeGroupVersion.WithKind("Node"), "")
	if err != nil {
		return ""
	}
	podsObj, _ := k.Clientset.Tracker().List(podsGVR, podsGVK, "")
	used := map[string]int64{}
	usedMem := map[string]int64{}
	for _, p := range podsObj.(*corev1.PodList).Items {
		req := resourcehelper.PodRequests(&p, resourcehelper.PodResourcesOptions{})
		used[p.Spec.NodeName] += req.Cpu().MilliValue()
		usedMem[p.Spec.NodeName] += req.Memory().Value()
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	best, bestFree := "", int64(-1)
	nodes := obj.(*corev1.NodeList).Items
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		if n.Name == pod.Spec.NodeName || n.Spec.Unschedulable || !nodeReady(&n) || hasNoSchedule(&n, pod) {
			continue
		}
		free := n.Status.Allocatable.Cpu().MilliValue() - used[n.Name]
		freeMem := n.Status.Allocatable.Memory().Value() - usedMem[n.Name]
		if free < req.Cpu().MilliValue() || freeMem < req.Memory().Value() {
			continue
		}
		if free > bestFree {
			best, bestFree = n.Name, free
		}
	}
	return best
}

func hasNoSchedule(n *corev1.Node, pod *corev1.Pod) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, &t, false) {
			return true
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (k *Kube) pdbsFor(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	obj, err := k.Clientset.Tracker().List(pdbsGVR, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), pod.Namespace)
	if err != nil {
		return nil
	}
	var out []*policyv1.PodDisruptionBudget
	for i := range obj.(*policyv1.PodDisruptionBudgetList).Items {
		pdb := &obj.(*policyv1.PodDisruptionBudgetList).Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, pdb)
		}
	}
	return out
}

func (k *Kube) recomputeAllPDBs() {
	obj, err := k.Clientset.Tracker().List(pdbsGVR, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), "")
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, pdb := range obj.(*policyv1.PodDisruptionBudgetList).Items {
		if !seen[pdb.Namespace] {
			seen[pdb.Namespace] = true
			k.recomputePDBs(pdb.Namespace)
		}
	}
}

// recomputePDBs plays the disruption controller for a namespace.
func (k *Kube) recomputePDBs(ns string) {
	obj, err := k.Clientset.Tracker().List(pdbsGVR, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), ns)
	if err != nil {
		return
	}
	podsObj, err := k.Clientset.Tracker().List(podsGVR, podsGVK, ns)
	if err != nil {
		return
	}
	pods := podsObj.(*corev1.PodList).Items
	for _, pdb := range obj.(*policyv1.PodDisruptionBudgetList).Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		var expected, healthy int32
		for i := range pods {
			p := &pods[i]
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			expected++
			if p.DeletionTimestamp == nil && isReady(p) {
				healthy++
			}
		}
		desired := expected
		switch {
		case pdb.Spec.MinAvailable != nil:
			v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
			desired = int32(v)
		case pdb.Spec.MaxUnavailable != nil:
			v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
			desired = expected - int32(v)
		}
		allowed := healthy - desired
		if allowed < 0 {
			allowed = 0
		}
		cp := pdb.DeepCopy()
		cp.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
			CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected}
		_ = k.Clientset.Tracker().Update(pdbsGVR, cp, ns)
	}
}
