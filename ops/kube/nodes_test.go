package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The node cache keeps the model of a Node: the facts drainctl reads, not the last-applied
// annotation, and slices a caller cannot write through.
func TestCachedNodeIsTheModel(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7",
			Labels:      map[string]string{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/compute": ""},
			Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{…}", "drainctl.io/state": "draining"}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Images:      []corev1.ContainerImage{{Names: []string{"registry.example.com/app:1"}}},
		},
	}
	c := newCachedNode(n)
	got := c.node
	if got.Name != "n1" || got.Schedulable || !got.Ready || got.Allocatable.MilliCPU != 4000 || got.Allocatable.Pods != 110 ||
		len(got.Roles) != 2 || got.Roles[0] != "compute" || len(got.Taints) != 1 || c.GetObjectMeta().GetResourceVersion() != "7" {
		t.Errorf("cached node %+v", got)
	}
	if _, kept := got.Annotations[corev1.LastAppliedConfigAnnotation]; kept || got.Annotations["drainctl.io/state"] != "draining" {
		t.Errorf("annotations %v", got.Annotations)
	}
	if cap(got.Taints) != len(got.Taints) || cap(got.Roles) != len(got.Roles) { // an append would write into the cache
		t.Errorf("the cached slices are not clipped: taints cap %d, roles cap %d", cap(got.Taints), cap(got.Roles))
	}
}
