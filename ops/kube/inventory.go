package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/notify"
)

// Inventory keeps Nodes, PodDisruptionBudgets and ReplicaSets (to name a pod's Deployment) in
// shared informers, and Pods by node in a store of its own (podstore.go). After the initial
// sync it issues no LIST: every change arrives by watch.
type Inventory struct {
	factory informers.SharedInformerFactory
	nodes   cache.SharedIndexInformer
	pods    *podStore
	podsLW  cache.ListerWatcher
	pdbs    cache.SharedIndexInformer
	rs      cache.SharedIndexInformer

	mu         sync.Mutex
	selectors  map[string]pdbSelector // by namespace/name, reused while the PDB is unchanged
	signal     notify.Signal
	changed    map[string]bool // nodes whose Node object or pods changed since TakeChanged
	changedAll bool            // a change that may touch any node (a PDB's selector), or not asked yet
	// seenSelectors: each PDB's selector as last seen, to tell a new selector from a status.
	seenSelectors map[string]string
	events        uint64 // changes seen, of any kind

	syncDeadline time.Time   // the first read must end by then
	synced       atomic.Bool // every informer has synced
	running      sync.WaitGroup

	// epoch moves when a PDB's selector or a ReplicaSet comes, changes or goes: the pods are
	// completed again (podstore.go).
	epoch atomic.Uint64
}

type pdbSelector struct {
	resourceVersion string
	selector        labels.Selector
}

// NewInventory prepares the informers; Start runs them.
func NewInventory(cs kubernetes.Interface) *Inventory {
	inv := &Inventory{selectors: map[string]pdbSelector{}, changed: map[string]bool{}, changedAll: true,
		seenSelectors: map[string]string{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(func(obj any) (any, error) {
		inv.recordChange(obj)
		return strip(obj)
	}))
	inv.factory = f
	// Nodes and pods are converted to the model as they are decoded (nodes.go, pods.go). As
	// the factory's informers do: a client that cannot stream a watch-list (the fake
	// clientset of the demo) is read with LIST and WATCH instead.
	inv.nodes = cache.NewSharedIndexInformer(
		cache.ToListWatcherWithWatchListSemantics(nodeListWatch(cs), cs),
		&cachedNode{},
		0,
		cache.Indexers{},
	)
	_ = inv.nodes.SetTransform(func(obj any) (any, error) { inv.recordChange(obj); return obj, nil })
	inv.pods = newPodStore(inv)
	inv.podsLW = cache.ToListWatcherWithWatchListSemantics(podListWatch(cs, inv.pods.cachedPod), cs)
	inv.pdbs = f.Policy().V1().PodDisruptionBudgets().Informer()
	inv.rs = f.Apps().V1().ReplicaSets().Informer()
	// The handlers run after the cache holds the change. Each moves the epoch, if the change
	// completes pods differently, before it signals: a snapshot taken on the signal sees it.
	deleted := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			inv.recordChange(d.Obj) // a deletion seen only on a relist skips the transform
		}
	}
	_, _ = inv.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { inv.notify() },
		UpdateFunc: func(any, any) { inv.notify() },
		DeleteFunc: func(obj any) { deleted(obj); inv.notify() },
	})
	_, _ = inv.pdbs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { inv.touchAll(); inv.notify() },
		UpdateFunc: func(old, obj any) {
			o, n := old.(*policyv1.PodDisruptionBudget), obj.(*policyv1.PodDisruptionBudget)
			if metav1.FormatLabelSelector(o.Spec.Selector) != metav1.FormatLabelSelector(n.Spec.Selector) {
				inv.touchAll() // a status alone completes no pod differently
			}
			inv.notify()
		},
		DeleteFunc: func(obj any) { deleted(obj); inv.touchAll(); inv.notify() },
	})
	// A ReplicaSet names its pods' Deployment. One that comes after its pods (the first read
	// delivers them in any order) renames them: views are told. Its status changes nothing.
	_, _ = inv.rs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { inv.touchAll(); inv.notify() },
		UpdateFunc: func(any, any) {}, // a ReplicaSet's owner never changes
		DeleteFunc: func(any) { inv.touchAll(); inv.notify() },
	})
	return inv
}

// touchAll moves the epoch: every pod is completed again when next read.
func (inv *Inventory) touchAll() { inv.epoch.Add(1) }

// recordChange notes which nodes a change touches, for an incremental ranking. It runs in
// the informers' transform and in the pod store, before the change reaches the cache: a
// snapshot that shows a change has it recorded already. A pod touches its node, a Node
// itself; a PDB's status touches none (the ranking compares budgets), but a new PDB or a new
// selector can touch any node (a PDB that goes is the ranking's to see: it knows which nodes
// it covered).
func (inv *Inventory) recordChange(obj any) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.events++
	switch o := obj.(type) {
	case *cachedNode:
		inv.changed[o.node.Name] = true
	case *cachedPod:
		inv.changed[o.pod.NodeName] = true
	case *policyv1.PodDisruptionBudget:
		key, sel := o.Namespace+"/"+o.Name, metav1.FormatLabelSelector(o.Spec.Selector)
		if prev, seen := inv.seenSelectors[key]; !seen || prev != sel {
			inv.seenSelectors[key] = sel
			inv.changedAll = true
		}
	}
}

// recordAll notes a change that may touch any node: a list of every pod.
func (inv *Inventory) recordAll() {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.events++
	inv.changedAll = true
}

// TakeChanged returns the nodes whose Node object or pods changed since the last call, and
// starts counting afresh; all is true when any node may have changed (the first call, a
// PodDisruptionBudget selecting other pods).
func (inv *Inventory) TakeChanged() (nodes map[string]bool, all bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	nodes, all = inv.changed, inv.changedAll
	inv.changed, inv.changedAll = map[string]bool{}, false
	return nodes, all
}

func (inv *Inventory) notify() { inv.signal.Notify() }

// Events counts the changes seen so far, of any kind (a PDB's status too): equal counts, an
// unchanged cache.
func (inv *Inventory) Events() uint64 {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.events
}

// Subscribe delivers a value after any change to nodes, pods or PDBs (bursts coalesce)
// until cancel is called.
func (inv *Inventory) Subscribe() (<-chan struct{}, func()) { return inv.signal.Subscribe() }

// Start runs the informers until ctx ends and waits up to syncTimeout for the first full sync.
func (inv *Inventory) Start(ctx context.Context, syncTimeout time.Duration) error {
	if err := inv.StartNodes(ctx, syncTimeout); err != nil {
		return err
	}
	return inv.WaitSynced(ctx)
}

// StartNodes runs the informers and waits for the nodes alone: a screen shows them while
// the pods stream in (150,000 pods take 10–20 s; nodes under a second). WaitSynced waits
// for the rest, up to the same syncTimeout from now.
func (inv *Inventory) StartNodes(ctx context.Context, syncTimeout time.Duration) error {
	inv.syncDeadline = time.Now().Add(syncTimeout)
	inv.factory.StartWithContext(ctx)
	pods := cache.NewReflectorWithOptions(inv.podsLW, &cachedPod{}, inv.pods, cache.ReflectorOptions{Name: "pods"})
	inv.running.Add(2)
	go func() { defer inv.running.Done(); inv.nodes.RunWithContext(ctx) }()
	go func() { defer inv.running.Done(); pods.RunWithContext(ctx) }()
	wait, cancel := context.WithDeadline(ctx, inv.syncDeadline)
	defer cancel()
	if !cache.WaitForCacheSync(wait.Done(), inv.nodes.HasSynced) {
		return fmt.Errorf("reading nodes from Kubernetes: %w", context.Cause(wait))
	}
	return nil
}

// WaitSynced waits until nodes, pods and PodDisruptionBudgets are all read: nothing is
// judged or done on a partial cache.
func (inv *Inventory) WaitSynced(ctx context.Context) error {
	if inv.synced.Load() {
		return nil
	}
	wait, cancel := context.WithDeadline(ctx, inv.syncDeadline)
	defer cancel()
	err := inv.factory.WaitForCacheSyncWithContext(wait).AsError()
	if err == nil && !cache.WaitForCacheSync(wait.Done(), inv.nodes.HasSynced, inv.pods.synced.Load) {
		err = fmt.Errorf("nodes and pods not read: %w", context.Cause(wait))
	}
	if err != nil {
		return fmt.Errorf("reading nodes, pods and PodDisruptionBudgets from Kubernetes: %w", err)
	}
	inv.synced.Store(true)
	return nil
}

// Syncing reports whether the first read is still under way.
func (inv *Inventory) Syncing() bool {
	if inv.synced.Load() {
		return false
	}
	for _, synced := range []func() bool{inv.nodes.HasSynced, inv.pods.synced.Load, inv.pdbs.HasSynced, inv.rs.HasSynced} {
		if !synced() {
			return true
		}
	}
	inv.synced.Store(true)
	return false
}

// Shutdown stops the informers (after ctx is cancelled) and waits for them.
func (inv *Inventory) Shutdown() { inv.factory.Shutdown(); inv.running.Wait() }

// PodsOn returns the pods bound to a node, from the cache, completed and sorted.
func (inv *Inventory) PodsOn(node string) []model.Pod {
	return slices.Clone(inv.pods.run(node, inv.pdbsByNamespace))
}

// PodUID reads the UID of the pod ns/name on node from the cache.
func (inv *Inventory) PodUID(node, ns, name string) (string, bool) {
	return inv.pods.uid(node, ns, name)
}

// pdbsByNamespace is every cached PDB, by namespace.
func (inv *Inventory) pdbsByNamespace() map[string][]*policyv1.PodDisruptionBudget {
	byNS := map[string][]*policyv1.PodDisruptionBudget{}
	for _, o := range inv.pdbs.GetStore().List() {
		p := o.(*policyv1.PodDisruptionBudget)
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
	}
	return byNS
}

func (inv *Inventory) pdbsIn(ns string) []*policyv1.PodDisruptionBudget {
	objs, _ := inv.pdbs.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	out := make([]*policyv1.PodDisruptionBudget, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*policyv1.PodDisruptionBudget))
	}
	return out
}

// Node returns a node from the cache.
func (inv *Inventory) Node(name string) (model.KubeNode, bool) {
	obj, ok, _ := inv.nodes.GetStore().GetByKey(name)
	if !ok {
		return model.KubeNode{}, false
	}
	return obj.(*cachedNode).node, true
}

// Nodes are the cached nodes in model types, by name: without their pods (Snapshot copies
// every pod; a gate or a controller pass that looks at nodes must not).
func (inv *Inventory) Nodes() []model.KubeNode {
	var nodes []model.KubeNode
	for _, o := range inv.nodes.GetStore().List() {
		nodes = append(nodes, o.(*cachedNode).node)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes
}

// PDBs are the cached PodDisruptionBudgets in model types, by namespace and name.
func (inv *Inventory) PDBs() []model.PDB {
	var pdbs []model.PDB
	for _, o := range inv.pdbs.GetStore().List() {
		p := o.(*policyv1.PodDisruptionBudget)
		pdbs = append(pdbs, model.PDB{Namespace: p.Namespace, Name: p.Name,
			DisruptionsAllowed: p.Status.DisruptionsAllowed, CurrentHealthy: p.Status.CurrentHealthy,
			DesiredHealthy: p.Status.DesiredHealthy, ExpectedPods: p.Status.ExpectedPods})
	}
	sort.Slice(pdbs, func(i, j int) bool {
		return pdbs[i].Namespace+"/"+pdbs[i].Name < pdbs[j].Namespace+"/"+pdbs[j].Name
	})
	return pdbs
}

// Snapshot converts the cache into model types. Each node's pods are the store's run,
// shared with every other snapshot until they change (podstore.go).
func (inv *Inventory) Snapshot() model.KubeSnapshot {
	snap := model.KubeSnapshot{Nodes: inv.Nodes(), PDBs: inv.PDBs()}
	var pdbs map[string][]*policyv1.PodDisruptionBudget
	pdbsOnce := func() map[string][]*policyv1.PodDisruptionBudget {
		if pdbs == nil {
			pdbs = inv.pdbsByNamespace()
		}
		return pdbs
	}
	snap.Pods = make([][]model.Pod, 0, len(snap.Nodes))
	for _, n := range snap.Nodes {
		if run := inv.pods.run(n.Name, pdbsOnce); len(run) > 0 {
			snap.Pods = append(snap.Pods, run)
		}
	}
	return snap
}

// selector parses a PDB's selector once per resourceVersion. A nil or empty selector
// selects nothing in policy/v1, as the eviction API treats it.
func (inv *Inventory) selector(pdb *policyv1.PodDisruptionBudget) labels.Selector {
	key := pdb.Namespace + "/" + pdb.Name
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if s, ok := inv.selectors[key]; ok && s.resourceVersion == pdb.ResourceVersion {
		return s.selector
	}
	var sel labels.Selector
	if pdb.Spec.Selector != nil && (len(pdb.Spec.Selector.MatchLabels) > 0 || len(pdb.Spec.Selector.MatchExpressions) > 0) {
		if s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil {
			sel = s
		}
	}
	inv.selectors[key] = pdbSelector{pdb.ResourceVersion, sel}
	return sel
}

// strip drops what drainctl never reads before an object is cached: managed fields, the
// last-applied annotation, ReplicaSets' pod templates (nodes and pods never reach it: they
// arrive as cachedNodes and cachedPods). It must stay idempotent.
func strip(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
				delete(a, corev1.LastAppliedConfigAnnotation)
			}
		}
	}
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		o.Spec.Template = corev1.PodTemplateSpec{}
	}
	return obj, nil
}
