package kube

import (
	"sort"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/drainctl/drainctl/model"
)

// cachedPod is what the pod informer keeps of a pod: the model's view of it, made once as
// the pod arrives, instead of the API object. At 150,000 pods the API objects cost ~700 MB
// (3.4 KiB each stripped); these cost a fifth of that (shared/notes/scale.md). The PDBs
// selecting the pod and a ReplicaSet's Deployment are looked up when the pod is read: those
// objects come and go on their own.
type cachedPod struct {
	resourceVersion string
	pod             model.Pod
}

// GetObjectMeta lets the informer's store key, index and compare the entry (meta.Accessor
// accepts an ObjectMetaAccessor): namespace, name, UID and resourceVersion are all it reads.
func (c *cachedPod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: c.pod.Namespace, Name: c.pod.Name, UID: types.UID(c.pod.UID), ResourceVersion: c.resourceVersion}
}

func newCachedPod(p *corev1.Pod) *cachedPod {
	return &cachedPod{resourceVersion: p.ResourceVersion, pod: podBase(p)}
}

// podBase converts a pod to the model, all but what other objects say of it (PDBs, the
// Deployment behind a ReplicaSet). Strings that repeat across pods are interned: namespaces,
// node names, phases, owners, label keys and values, tolerations.
func podBase(p *corev1.Pod) model.Pod {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	m := model.Pod{
		Namespace: intern(p.Namespace), Name: p.Name, UID: string(p.UID), NodeName: intern(p.Spec.NodeName),
		Phase: intern(string(p.Status.Phase)), Terminating: p.DeletionTimestamp != nil,
		Requests:    model.Resources{MilliCPU: req.Cpu().MilliValue(), MemoryBytes: req.Memory().Value(), Pods: 1},
		Labels:      internMap(p.Labels),
		Annotations: podAnnotations(p.Annotations),
	}
	_, m.Mirror = p.Annotations[corev1.MirrorPodAnnotationKey]
	for _, t := range p.Spec.Tolerations {
		m.Tolerations = append(m.Tolerations, model.Toleration{Key: intern(t.Key), Operator: intern(string(t.Operator)),
			Value: intern(t.Value), Effect: intern(string(t.Effect))})
	}
	m.NodeSelector = internMap(p.Spec.NodeSelector)
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			var mt model.NodeSelectorTerm
			for _, r := range term.MatchExpressions {
				mt.MatchExpressions = append(mt.MatchExpressions, model.NodeSelectorRequirement{Key: r.Key, Operator: string(r.Operator), Values: r.Values})
			}
			m.NodeAffinity = append(m.NodeAffinity, mt)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			m.Ready = c.Status == corev1.ConditionTrue
		}
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		m.OwnerKind, m.OwnerName = intern(ref.Kind), intern(ref.Name)
	}
	for _, v := range p.Spec.Volumes {
		if (v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory) || v.HostPath != nil {
			m.LocalVolume = v.Name
			break
		}
	}
	return m
}

// podAnnotations keeps a pod's annotations but the last-applied configuration (a copy of the
// whole object, often the largest thing in it); none when there are none.
func podAnnotations(a map[string]string) map[string]string {
	n := len(a)
	if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
		n--
	}
	if n <= 0 {
		return nil
	}
	out := make(map[string]string, n)
	for k, v := range a {
		if k != corev1.LastAppliedConfigAnnotation {
			out[intern(k)] = v
		}
	}
	return out
}

func intern(s string) string { return unique.Make(s).Value() }

func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// complete fills in what other objects say of a pod: the Deployment behind its ReplicaSet
// and the PDBs (of its namespace) that select it.
func (inv *Inventory) complete(m model.Pod, pdbs []*policyv1.PodDisruptionBudget) model.Pod {
	if m.OwnerKind == "ReplicaSet" {
		if obj, ok, _ := inv.rs.GetStore().GetByKey(m.Namespace + "/" + m.OwnerName); ok {
			if d := metav1.GetControllerOf(obj.(*appsv1.ReplicaSet)); d != nil && d.Kind == "Deployment" {
				m.OwnerKind, m.OwnerName = d.Kind, d.Name
			}
		}
	}
	m.PDBs = nil
	for _, pdb := range pdbs {
		if sel := inv.selector(pdb); sel != nil && sel.Matches(labels.Set(m.Labels)) {
			m.PDBs = append(m.PDBs, pdb.Name)
		}
	}
	sort.Strings(m.PDBs)
	return m
}

// podModel converts an API pod (read fresh, not from the cache) completely.
func (inv *Inventory) podModel(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) model.Pod {
	return inv.complete(podBase(p), pdbs)
}
