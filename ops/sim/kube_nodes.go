package sim

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// A node's life in the simulated Kubernetes: Ready or not, out of service, its DaemonSets.

// SetNodeReady flips a node's Ready condition (a node going down in the demo).
func (k *Kube) SetNodeReady(name string, ready bool) error {
	obj, err := k.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
	if err != nil {
		return err
	}
	n := obj.(*corev1.Node)
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			// Wall time, not the simulated clock (which starts days back): drainctl measures
			// how long a node has been NotReady against its own clock ([recover] not_ready_for).
			n.Status.Conditions[i].Status = status
			n.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	if !ready {
		k.after(outOfServiceAfter, func() { k.sweepOutOfService(name) })
	}
	err = k.Clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, "")
	if ready {
		k.after(0, func() { k.restoreDaemons(name) })
	}
	return err
}

// SetNodeCondition sets a node condition of type typ True (node-problem-detector's
// KernelDeadlock) or, on false, False, as its reporter would.
func (k *Kube) SetNodeCondition(name, typ string, on bool) error {
	obj, err := k.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
	if err != nil {
		return err
	}
	n := obj.(*corev1.Node)
	status := corev1.ConditionFalse
	if on {
		status = corev1.ConditionTrue
	}
	c := corev1.NodeCondition{Type: corev1.NodeConditionType(typ), Status: status, Reason: typ, LastTransitionTime: metav1.Now(),
		LastHeartbeatTime: metav1.Now(), Message: "set by the demo's :condition"}
	if i := slices.IndexFunc(n.Status.Conditions, func(x corev1.NodeCondition) bool { return string(x.Type) == typ }); i >= 0 {
		n.Status.Conditions[i] = c
	} else {
		n.Status.Conditions = append(n.Status.Conditions, c)
	}
	return k.Clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, "")
}

// SetNodeLabel sets the node's label key to value ("": removed), as kubectl label would.
func (k *Kube) SetNodeLabel(name, key, value string) error {
	obj, err := k.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
	if err != nil {
		return err
	}
	n := obj.(*corev1.Node).DeepCopy()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if value == "" {
		delete(n.Labels, key)
	} else {
		n.Labels[key] = value
	}
	return k.Clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, "")
}

// outOfServiceAfter is how soon the controller manager deletes a dead node's pods once it
// is tainted out-of-service (its pod GC runs every 20 s; the taint manager at once).
const outOfServiceAfter = 5 * time.Second

// nodeWritten lets the write through and looks, a moment later, whether the node is now
// NotReady and tainted out-of-service.
func (k *Kube) nodeWritten(a k8stesting.Action) (bool, runtime.Object, error) {
	var name string
	switch a := a.(type) {
	case k8stesting.UpdateActionImpl:
		if n, ok := a.GetObject().(*corev1.Node); ok {
			name = n.Name
		}
	case k8stesting.PatchActionImpl:
		name = a.GetName()
	}
	if name != "" {
		k.after(outOfServiceAfter, func() { k.sweepOutOfService(name) })
		k.after(0, func() { k.restoreDaemons(name) })
	}
	return false, nil, nil
}

// sweepOutOfService force-deletes the pods of a NotReady node tainted out-of-service that
// do not tolerate the taint, as Kubernetes' non-graceful node shutdown does.
func (k *Kube) sweepOutOfService(name string) {
	obj, err := k.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
	if err != nil {
		return
	}
	n := obj.(*corev1.Node)
	var taint *corev1.Taint
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].Key == "node.kubernetes.io/out-of-service" {
			taint = &n.Spec.Taints[i]
		}
	}
	if taint == nil || nodeReady(n) {
		return
	}
	list, err := k.Clientset.Tracker().List(podsGVR, podsGVK, "")
	if err != nil {
		return
	}
	for _, p := range list.(*corev1.PodList).Items {
		if p.Spec.NodeName != name || corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, taint, false) {
			continue
		}
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" {
			k.mu.Lock()
			if k.daemons == nil {
				k.daemons = map[string][]*corev1.Pod{}
			}
			k.daemons[name] = append(k.daemons[name], p.DeepCopy())
			k.mu.Unlock()
		}
		_ = k.remove(&p)
	}
}

// restoreDaemons plays the DaemonSet controller for a node back in service (Ready, the
// out-of-service taint gone): the DaemonSet pods it lost are created on it again, Ready.
func (k *Kube) restoreDaemons(name string) {
	obj, err := k.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
	if err != nil {
		return
	}
	n := obj.(*corev1.Node)
	if !nodeReady(n) {
		return
	}
	for _, t := range n.Spec.Taints {
		if t.Key == "node.kubernetes.io/out-of-service" {
			return
		}
	}
	k.mu.Lock()
	lost := k.daemons[name]
	delete(k.daemons, name)
	k.nextID++
	id := k.nextID
	k.mu.Unlock()
	for i, old := range lost {
		if _, err := k.getPod(old.Namespace, old.Name); err == nil {
			continue // back already
		}
		p := old.DeepCopy()
		p.ResourceVersion, p.DeletionTimestamp, p.DeletionGracePeriodSeconds = "", nil, nil
		p.UID = typesUID(fmt.Sprintf("%s-d%d-%d", old.UID, id, i))
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(k.clock.Now())},
			}}
		_ = k.Clientset.Tracker().Add(p)
	}
}
