package kube

import (
	"slices"
	"sync"
	"sync/atomic"

	policyv1 "k8s.io/api/policy/v1"

	"github.com/drainctl/drainctl/model"
)

// podStore is the pod cache. A reflector writes into it directly (client-go's ReflectorStore:
// no DeltaFIFO, no indexer) and it keeps each node's pods as a snapshot gives them, completed
// and sorted: the one copy of each pod, which snapshots share until the node's pods or what
// completes them change. At 150,000 pods an informer's store, its node index and a snapshot's
// copy cost ~100 MiB; this ~40 MiB.
//
// Pods not bound to a node are not kept: nothing reads them, and one run of them would be
// copied whole on each of their changes.
type podStore struct {
	inv    *Inventory // completes the pods and records the changes
	mu     sync.Mutex
	runs   map[string]podRun // by node name
	synced atomic.Bool       // the first list is in
}

// podRun is a node's pods, sorted by namespace and name and completed as of epoch. Its slices
// are never written once made: a change makes new ones.
type podRun struct {
	epoch uint64
	pods  []model.Pod
	rs    []string // the ReplicaSet each pod's controller is ("" for none): completing names its Deployment
}

func newPodStore(inv *Inventory) *podStore { return &podStore{inv: inv, runs: map[string]podRun{}} }

// Add, Update, Delete, Replace and Resync make it a cache.ReflectorStore. The change is
// recorded before the store shows it, and announced after.
func (s *podStore) Add(obj any) error    { return s.upsert(obj) }
func (s *podStore) Update(obj any) error { return s.upsert(obj) }
func (s *podStore) Resync() error        { return nil }

func (s *podStore) upsert(obj any) error {
	c, ok := obj.(*cachedPod)
	if !ok || c.pod.NodeName == "" {
		return nil
	}
	s.inv.recordChange(c)
	s.mu.Lock()
	node := c.pod.NodeName
	r := s.runs[node]
	i, found := slices.BinarySearchFunc(r.pods, c.pod, model.ComparePods)
	next := podRun{epoch: r.epoch, pods: make([]model.Pod, 0, len(r.pods)+1)}
	if len(r.pods) == 0 {
		next.epoch = s.inv.epoch.Load()
	}
	rs := ownerRS(c.pod)
	p := s.inv.complete(c.pod, rs, s.inv.pdbsIn(c.pod.Namespace))
	after := i
	if found {
		after++
	}
	next.pods = append(append(append(next.pods, r.pods[:i]...), p), r.pods[after:]...)
	next.rs = append(append(append(make([]string, 0, len(next.pods)), r.rs[:i]...), rs), r.rs[after:]...)
	s.runs[node] = next
	s.mu.Unlock()
	s.inv.notify()
	return nil
}

func (s *podStore) Delete(obj any) error {
	c, ok := obj.(*cachedPod)
	if !ok || c.pod.NodeName == "" {
		return nil
	}
	s.inv.recordChange(c)
	s.mu.Lock()
	node := c.pod.NodeName
	r := s.runs[node]
	if i, found := slices.BinarySearchFunc(r.pods, c.pod, model.ComparePods); found {
		if len(r.pods) == 1 {
			delete(s.runs, node)
		} else {
			s.runs[node] = podRun{epoch: r.epoch, pods: slices.Concat(r.pods[:i], r.pods[i+1:]), rs: slices.Concat(r.rs[:i], r.rs[i+1:])}
		}
	}
	s.mu.Unlock()
	s.inv.notify()
	return nil
}

// Replace takes a whole list: the first read, or a relist after the watch was lost.
func (s *podStore) Replace(list []any, _ string) error {
	s.inv.recordAll()
	epoch := s.inv.epoch.Load()
	byNode := map[string][]model.Pod{}
	for _, obj := range list {
		if c, ok := obj.(*cachedPod); ok && c.pod.NodeName != "" {
			byNode[c.pod.NodeName] = append(byNode[c.pod.NodeName], c.pod)
		}
	}
	pdbs := s.inv.pdbsByNamespace()
	runs := make(map[string]podRun, len(byNode))
	for node, pods := range byNode {
		slices.SortFunc(pods, model.ComparePods)
		rs := make([]string, len(pods))
		for i, p := range pods {
			rs[i] = ownerRS(p)
		}
		runs[node] = s.inv.completeRun(podRun{pods: pods, rs: rs}, epoch, pdbs)
	}
	s.mu.Lock()
	s.runs = runs
	s.mu.Unlock()
	s.synced.Store(true)
	s.inv.notify()
	return nil
}

// run is a node's pods, completed again first if a PDB's selector or a ReplicaSet changed
// since they were. pdbs is looked up only then.
func (s *podStore) run(node string, pdbs func() map[string][]*policyv1.PodDisruptionBudget) []model.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[node]
	if !ok {
		return nil
	}
	if epoch := s.inv.epoch.Load(); r.epoch != epoch {
		r = s.inv.completeRun(r, epoch, pdbs())
		s.runs[node] = r
	}
	return r.pods
}

// uid is the UID of the pod ns/name on node, if the store has it.
func (s *podStore) uid(node, ns, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[node]
	i, found := slices.BinarySearchFunc(r.pods, model.Pod{Namespace: ns, Name: name}, model.ComparePods)
	if !found {
		return "", false
	}
	return r.pods[i].UID, true
}

// ownerRS is the ReplicaSet a pod's controller is, "" if it is none.
func ownerRS(p model.Pod) string {
	if p.OwnerKind == "ReplicaSet" {
		return p.OwnerName
	}
	return ""
}
