package kube

import (
	"context"
	"maps"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"unique"
	"weak"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/drainctl/drainctl/model"
)

// cachedPod is what the pod reflector hands the pod store (podstore.go): the model's view of
// a pod, made as the pod is decoded (list pages and watch events are converted before the
// reflector sees them), never the API object. At 150,000 pods the API objects cost ~700 MB
// in a cache (3.4 KiB each stripped) and twice that while the first read gathers them; these
// a fraction (shared/notes/scale.md). The PDBs selecting the pod and a ReplicaSet's Deployment are
// looked up when the pod is read: those objects come and go on their own.
type cachedPod struct {
	resourceVersion string
	pod             model.Pod
	labels          *labelSet // the shared set pod.Labels is; the store keeps it beside the pod
}

// GetObjectMeta lets the reflector read the entry (meta.Accessor accepts an
// ObjectMetaAccessor): namespace, name, UID, resourceVersion, and the annotations that mark
// the end of the initial events on a bookmark.
func (c *cachedPod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: c.pod.Namespace, Name: c.pod.Name, UID: types.UID(c.pod.UID),
		ResourceVersion: c.resourceVersion, Annotations: c.pod.Annotations}
}

// GetObjectKind and DeepCopyObject make it a runtime.Object, as the reflector wants. The
// entry is never changed once made, so a copy shares its maps and slices.
func (c *cachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (c *cachedPod) DeepCopyObject() runtime.Object   { cp := *c; return &cp }

func newCachedPod(p *corev1.Pod) *cachedPod {
	c := &cachedPod{resourceVersion: p.ResourceVersion, pod: podBase(p)}
	c.pod.Annotations = readAnnotations(p.Annotations)
	if c.labels = sharedLabels(p.Labels); c.labels != nil {
		c.pod.Labels = c.labels.m
	}
	c.pod.Placement = sharedPlacement(c.pod.Placement)
	return c
}

// readAnnotations keeps the annotations drainctl reads (eviction policy, its own, a
// watch bookmark's) of a cached pod: the rest, a fifth of the cache at 150,000 pods,
// is for other tools (kubectl describe shows it).
func readAnnotations(a map[string]string) map[string]string {
	var out map[string]string
	for k, v := range a {
		if cachedAnnotations[k] || strings.HasPrefix(k, "drainctl.io/") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

var cachedAnnotations = map[string]bool{
	"cluster-autoscaler.kubernetes.io/safe-to-evict":               true,
	"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": true,
	"karpenter.sh/do-not-disrupt":                                  true,
	corev1.MirrorPodAnnotationKey:                                  true,
	metav1.InitialEventsAnnotationKey:                              true,
}

// podListWatch lists and watches every pod as cachedPods, made by convert.
func podListWatch(cs kubernetes.Interface, convert func(*corev1.Pod) *cachedPod) *cache.ListWatch {
	pods := cs.CoreV1().Pods("")
	return summarizing(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		pods.Watch, convert)
}

// podBase converts a pod to the model, all but what other objects say of it (PDBs, the
// Deployment behind a ReplicaSet). The strings every pod repeats are interned: namespaces,
// node names, phases, owners (labels and placements are shared whole by newCachedPod).
func podBase(p *corev1.Pod) model.Pod {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	m := model.Pod{
		Namespace: intern(p.Namespace), Name: p.Name, UID: string(p.UID), NodeName: intern(p.Spec.NodeName),
		Phase: intern(string(p.Status.Phase)), Terminating: p.DeletionTimestamp != nil,
		Requests: model.Resources{MilliCPU: req.Cpu().MilliValue(), MemoryBytes: req.Memory().Value(), Pods: 1},
		Labels:   p.Labels, Annotations: p.Annotations,
	}
	_, m.Mirror = p.Annotations[corev1.MirrorPodAnnotationKey]
	m.Placement = placement(&p.Spec)
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

func intern(s string) string { return unique.Make(s).Value() }

// placement is where a pod may run, nil when nothing restricts it.
func placement(spec *corev1.PodSpec) *model.Placement {
	var pl model.Placement
	for _, t := range spec.Tolerations {
		pl.Tolerations = append(
			pl.Tolerations,
			model.Toleration{Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect)},
		)
	}
	pl.NodeSelector = spec.NodeSelector
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			var mt model.NodeSelectorTerm
			for _, r := range term.MatchExpressions {
				mt.MatchExpressions = append(
					mt.MatchExpressions,
					model.NodeSelectorRequirement{Key: r.Key, Operator: string(r.Operator), Values: r.Values},
				)
			}
			pl.NodeAffinity = append(pl.NodeAffinity, mt)
		}
	}
	if len(pl.Tolerations) == 0 && len(pl.NodeSelector) == 0 && len(pl.NodeAffinity) == 0 {
		return nil
	}
	return &pl
}

// complete fills in what other objects say of a pod: the Deployment behind its ReplicaSet rs
// (its controller, "" for none) and the PDBs (of its namespace) that select it.
func (inv *Inventory) complete(m model.Pod, rs string, pdbs []*policyv1.PodDisruptionBudget) model.Pod {
	if rs != "" {
		m.OwnerKind, m.OwnerName = "ReplicaSet", rs
		if obj, ok, _ := inv.rs.GetStore().GetByKey(m.Namespace + "/" + rs); ok {
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

// completeRun completes a node's pods again, as of epoch.
func (inv *Inventory) completeRun(r podRun, epoch uint64, pdbs map[string][]*policyv1.PodDisruptionBudget) podRun {
	out := podRun{epoch: epoch, pods: make([]model.Pod, len(r.pods)), side: r.side}
	for i, p := range r.pods {
		out.pods[i] = inv.complete(p, r.side[i].rs, pdbs[p.Namespace])
	}
	return out
}

// podModel converts an API pod (read fresh, not from the cache) completely.
func (inv *Inventory) podModel(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) model.Pod {
	m := podBase(p)
	return inv.complete(m, ownerRS(m), pdbs)
}

// A ReplicaSet's pods carry the same labels, and nearly every pod the same two default
// tolerations: the cache keeps one copy for all of them (label maps and toleration slices
// were a third of the cache at 150,000 pods). The tables hold the copies weakly: a copy goes
// with the last pod that has it, its entry with it.
type labelSet struct{ m map[string]string }

var (
	labelSets  sync.Map // canonical form -> weak.Pointer[labelSet]
	placements sync.Map // canonical form -> weak.Pointer[model.Placement]
)

func sharedLabels(m map[string]string) *labelSet {
	if len(m) == 0 {
		return nil
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return share(&labelSets, b.String(), func() *labelSet { return &labelSet{m: m} })
}

func sharedPlacement(pl *model.Placement) *model.Placement {
	if pl == nil {
		return nil
	}
	var b strings.Builder
	for _, t := range pl.Tolerations {
		b.WriteString(t.Key + "\x00" + t.Operator + "\x00" + t.Value + "\x00" + t.Effect + "\x00")
	}
	b.WriteByte(1)
	for _, k := range slices.Sorted(maps.Keys(pl.NodeSelector)) {
		b.WriteString(k + "=" + pl.NodeSelector[k] + "\x00")
	}
	for _, term := range pl.NodeAffinity {
		b.WriteByte(1)
		for _, r := range term.MatchExpressions {
			b.WriteString(r.Key + "\x00" + r.Operator + "\x00" + strings.Join(r.Values, "\x00") + "\x02")
		}
	}
	return share(&placements, b.String(), func() *model.Placement { return pl })
}

// share returns the live copy stored under key, or stores a fresh one as it.
func share[T any](table *sync.Map, key string, fresh func() *T) *T {
	if v, ok := table.Load(key); ok {
		if live := v.(weak.Pointer[T]).Value(); live != nil {
			return live
		}
	}
	made := fresh()
	wp := weak.Make(made)
	table.Store(key, wp)
	goruntime.AddCleanup(made, func(key string) { table.CompareAndDelete(key, wp) }, key)
	return made
}
