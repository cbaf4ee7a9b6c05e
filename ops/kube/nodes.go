package kube

import (
	"context"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/drainctl/drainctl/model"
)

// cachedNode is what the node informer keeps of a Node: the model's view of it, made as the
// Node is decoded, as for pods. A Node's images, conditions, addresses and system facts are
// ~5 KiB that drainctl never reads (25 MiB at 5,000 nodes), and a snapshot no longer converts
// every Node again.
type cachedNode struct {
	resourceVersion string
	node            model.KubeNode
}

// GetObjectMeta lets the informer key the entry and read the bookmark's annotations.
func (c *cachedNode) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: c.node.Name, UID: types.UID(c.node.UID), ResourceVersion: c.resourceVersion,
		Annotations: c.node.Annotations}
}

// GetObjectKind and DeepCopyObject make it a runtime.Object. The entry is never changed once
// made, so a copy shares its maps and slices.
func (c *cachedNode) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (c *cachedNode) DeepCopyObject() runtime.Object   { cp := *c; return &cp }

func newCachedNode(n *corev1.Node) *cachedNode {
	return &cachedNode{resourceVersion: n.ResourceVersion, node: nodeModel(n)}
}

// cachedNodeList is a page of cachedNodes, as the reflector reads a list.
type cachedNodeList struct {
	metav1.ListMeta
	Items []cachedNode
}

func (l *cachedNodeList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (l *cachedNodeList) DeepCopyObject() runtime.Object {
	cp := *l
	cp.Items = slices.Clone(l.Items)
	return &cp
}

// nodeListWatch lists and watches every Node, converting each into a cachedNode as it arrives.
func nodeListWatch(cs kubernetes.Interface) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := cs.CoreV1().Nodes().List(ctx, o)
			if err != nil {
				return nil, err
			}
			out := &cachedNodeList{ListMeta: list.ListMeta, Items: make([]cachedNode, len(list.Items))}
			for i := range list.Items {
				out.Items[i] = *newCachedNode(&list.Items[i])
			}
			return out, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := cs.CoreV1().Nodes().Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if n, ok := e.Object.(*corev1.Node); ok {
					e.Object = newCachedNode(n)
				}
				return e, true
			}), nil
		},
	}
}

// nodeModel converts a Node to the model. Its slices are clipped: a caller's append never
// writes into the cached copy.
func nodeModel(n *corev1.Node) model.KubeNode {
	annotations := n.Annotations
	if _, ok := annotations[corev1.LastAppliedConfigAnnotation]; ok {
		annotations = make(map[string]string, len(n.Annotations))
		for k, v := range n.Annotations {
			if k != corev1.LastAppliedConfigAnnotation {
				annotations[k] = v
			}
		}
	}
	m := model.KubeNode{
		Name: n.Name, UID: string(n.UID), ProviderID: n.Spec.ProviderID, Schedulable: !n.Spec.Unschedulable,
		BootID: n.Status.NodeInfo.BootID, Labels: n.Labels, Annotations: annotations, Created: n.CreationTimestamp.Time,
		Allocatable: model.Resources{MilliCPU: n.Status.Allocatable.Cpu().MilliValue(),
			MemoryBytes: n.Status.Allocatable.Memory().Value(), Pods: n.Status.Allocatable.Pods().Value()},
	}
	for k := range n.Labels {
		if role, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && role != "" {
			m.Roles = append(m.Roles, role)
		}
	}
	sort.Strings(m.Roles)
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			m.Ready, m.ReadySince = c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	for _, t := range n.Spec.Taints {
		m.Taints = append(m.Taints, model.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	m.Roles, m.Taints = slices.Clip(m.Roles), slices.Clip(m.Taints)
	return m
}
