package kube

import (
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
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
	names  packer     // the first read's pod names and UIDs (pack.go)
	mu     sync.Mutex
	runs   map[string]podRun // by node name
	synced atomic.Bool       // the first list is in
}

// podRun is a node's pods, sorted by namespace and name and completed as of epoch, with what
// the store keeps beside each. Its slices are never written once made: a change makes new ones.
type podRun struct {
	epoch uint64
	pods  []model.Pod
	side  []podSide // side[i] is pods[i]'s
}

// podSide is what a pod's completion and sharing need that its model does not say.
type podSide struct {
	rs     string    // the ReplicaSet the pod's controller is ("" for none): completing names its Deployment
	labels *labelSet // keeps the pod's label map shared with the pods alike (pods.go)
}

func sideOf(c *cachedPod) podSide { return podSide{rs: ownerRS(c.pod), labels: c.labels} }

func newPodStore(inv *Inventory) *podStore { return &podStore{inv: inv, runs: map[string]podRun{}} }

// cachedPod converts a pod as it is decoded; until the first read is in, its name and UID are
// packed (pack.go). Not after: a chunk lives while one of its strings does, and under churn
// pods that stay would each keep a chunk of pods gone; the first read's chunks hold what
// that read held, at most.
func (s *podStore) cachedPod(p *corev1.Pod) *cachedPod {
	c := newCachedPod(p)
	if !s.synced.Load() {
		c.pod.Name, c.pod.UID = s.names.pack(c.pod.Name), s.names.pack(c.pod.UID)
	}
	return c
}

// Add, Update, Delete, Replace and Resync make it a cache.ReflectorStore. A change is
// recorded before the store shows it, and announced after.
func (s *podStore) Add(obj any) error    { return s.put(obj, true) }
func (s *podStore) Update(obj any) error { return s.put(obj, true) }
func (s *podStore) Delete(obj any) error { return s.put(obj, false) }
func (s *podStore) Resync() error        { return nil }

// put sets a pod's entry in a new run of its node: the pod completed, or (present false) none.
func (s *podStore) put(obj any, present bool) error {
	c, ok := obj.(*cachedPod)
	if !ok || c.pod.NodeName == "" {
		return nil
	}
	s.inv.recordChange(c)
	s.mu.Lock()
	node := c.pod.NodeName
	r, had := s.runs[node]
	if !had {
		r.epoch = s.inv.epoch.Load() // before the completion reads the PDBs and ReplicaSets
	}
	i, found := slices.BinarySearchFunc(r.pods, c.pod, model.ComparePods)
	after := i
	if found {
		after++
	}
	var pod []model.Pod
	var side []podSide
	if present {
		side = []podSide{sideOf(c)}
		pod = []model.Pod{s.inv.complete(c.pod, side[0].rs, s.inv.pdbsIn(c.pod.Namespace))}
	}
	if present || found {
		next := podRun{epoch: r.epoch, pods: slices.Concat(r.pods[:i], pod, r.pods[after:]),
			side: slices.Concat(r.side[:i], side, r.side[after:])}
		if len(next.pods) == 0 {
			delete(s.runs, node)
		} else {
			s.runs[node] = next
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
	byNode := map[string][]*cachedPod{}
	for _, obj := range list {
		if c, ok := obj.(*cachedPod); ok && c.pod.NodeName != "" {
			byNode[c.pod.NodeName] = append(byNode[c.pod.NodeName], c)
		}
	}
	pdbs := s.inv.pdbsByNamespace()
	runs := make(map[string]podRun, len(byNode))
	for node, cs := range byNode {
		slices.SortFunc(cs, func(a, b *cachedPod) int { return model.ComparePods(a.pod, b.pod) })
		// Completed as it is made: a copy made and then completed into a second (completeRun)
		// left every span of runs half garbage, ~30 MiB the first read never gave back.
		r := podRun{epoch: epoch, pods: make([]model.Pod, len(cs)), side: make([]podSide, len(cs))}
		for i, c := range cs {
			r.side[i] = sideOf(c)
			r.pods[i] = s.inv.complete(c.pod, r.side[i].rs, pdbs[c.pod.Namespace])
		}
		runs[node] = r
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
