package policy

import (
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"github.com/drainctl/drainctl/model"
)

// clone copies the inventory as a new join would: new slices, new structs, new maps, so a
// change to the copy leaves what a Ranker kept of the original as it was.
func clone(inv model.Inventory) model.Inventory {
	out := inv
	out.Nodes = slices.Clone(inv.Nodes)
	out.PDBs = slices.Clone(inv.PDBs)
	for i := range out.Nodes {
		n := &out.Nodes[i]
		k := *n.Kube
		k.Labels, k.Annotations, k.Taints = maps.Clone(k.Labels), maps.Clone(k.Annotations), slices.Clone(k.Taints)
		n.Kube = &k
		n.Pods, n.VMs = slices.Clone(n.Pods), slices.Clone(n.VMs)
		if n.Compute != nil {
			c := *n.Compute
			n.Compute = &c
		}
		if n.Hypervisor != nil {
			h := *n.Hypervisor
			n.Hypervisor = &h
		}
	}
	return out
}

// mutation changes one thing, as the cluster would, and says which nodes a Kubernetes watch
// would report (Nova and budget changes are the Ranker's to notice).
type mutation struct {
	name  string
	apply func(inv *model.Inventory, rng *rand.Rand) (kubeChanged []string)
}

var mutations = []mutation{
	{"a pod goes", func(inv *model.Inventory, rng *rand.Rand) []string {
		n := &inv.Nodes[rng.Intn(len(inv.Nodes))]
		if len(n.Pods) > 0 {
			p := n.Pods[len(n.Pods)-1]
			n.Pods = n.Pods[:len(n.Pods)-1]
			n.Requested = sub(n.Requested, p.Requests)
		}
		return []string{n.Name}
	}},
	{"a big pod lands", func(inv *model.Inventory, rng *rand.Rand) []string {
		n := &inv.Nodes[rng.Intn(len(inv.Nodes))]
		p := model.Pod{Namespace: "ns", Name: fmt.Sprintf("%s-big%d", n.Name, rng.Int()), NodeName: n.Name, Phase: "Running", OwnerKind: "ReplicaSet",
			PDBs: []string{"pdb-" + fmt.Sprint(rng.Intn(3))}, Requests: model.Resources{MilliCPU: 6000, MemoryBytes: 20 << 30, Pods: 1}}
		n.Pods = append(n.Pods, p)
		n.Requested = n.Requested.Add(p.Requests)
		return []string{n.Name}
	}},
	{"a bare pod", func(inv *model.Inventory, rng *rand.Rand) []string {
		n := &inv.Nodes[rng.Intn(len(inv.Nodes))]
		n.Pods = append(n.Pods, model.Pod{Namespace: "ns", Name: fmt.Sprintf("%s-bare%d", n.Name, rng.Int()), NodeName: n.Name, Phase: "Running"})
		return []string{n.Name}
	}},
	{"cordon or uncordon", func(inv *model.Inventory, rng *rand.Rand) []string {
		n := &inv.Nodes[rng.Intn(len(inv.Nodes))]
		n.Kube.Schedulable = !n.Kube.Schedulable
		return []string{n.Name}
	}},
	{"a label", func(inv *model.Inventory, rng *rand.Rand) []string {
		n := &inv.Nodes[rng.Intn(len(inv.Nodes))]
		n.Kube.Labels = map[string]string{"zone": fmt.Sprint(rng.Intn(2))}
		return []string{n.Name}
	}},
	{"a VM stops", func(inv *model.Inventory, rng *rand.Rand) []string {
		n := &inv.Nodes[rng.Intn(len(inv.Nodes))]
		if len(n.VMs) > 0 {
			n.VMs[0].Status = "SHUTOFF"
		}
		return nil
	}},
	{"compute disabled by someone", func(inv *model.Inventory, rng *rand.Rand) []string {
		n := &inv.Nodes[rng.Intn(len(inv.Nodes))]
		n.Compute.Enabled, n.Compute.DisabledReason = false, "ticket"
		return nil
	}},
	{"a budget moves", func(inv *model.Inventory, rng *rand.Rand) []string {
		b := &inv.PDBs[rng.Intn(len(inv.PDBs))]
		b.DisruptionsAllowed = int32(rng.Intn(2))
		return nil
	}},
	{"a VM lands (hypervisor fuller)", func(inv *model.Inventory, rng *rand.Rand) []string {
		n := &inv.Nodes[rng.Intn(len(inv.Nodes))]
		n.VMs = append(n.VMs, model.VM{ID: fmt.Sprint(rng.Int()), Name: "new", Host: n.Name, Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: 16384, VCPUs: 8})
		n.Hypervisor.MemoryMBUsed += 16384
		n.Hypervisor.VCPUsUsed += 8
		return nil
	}},
}

// The incremental ranking is the full ranking, whatever changes: every verdict, reason,
// cost, rank and placement.
func TestRankerEqualsFullRank(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	inv := clusterOf(120, 8, 3, rng)
	inv.PDBs = []model.PDB{{Namespace: "ns", Name: "pdb-0", DisruptionsAllowed: 1}, {Namespace: "ns", Name: "pdb-1", DisruptionsAllowed: 1}, {Namespace: "ns", Name: "pdb-2", DisruptionsAllowed: 0}}
	for i := range inv.Nodes {
		inv.Nodes[i].Kube.Labels = map[string]string{"zone": "a"}
		inv.Nodes[i].Pods[0].PDBs = []string{"pdb-" + fmt.Sprint(i%3)}
	}
	o, w := Options{IgnoreDaemonSets: true}, DefaultWeights()
	w.PlacementPool = 8 // a small pool, so that changes fall both inside and outside it
	var r Ranker
	r.Rank(inv, nil, true, o, w)
	partial := 0
	for step := range 400 {
		m := mutations[rng.Intn(len(mutations))]
		inv = clone(inv)
		changed := map[string]bool{}
		for _, n := range m.apply(&inv, rng) {
			changed[n] = true
		}
		got := r.Rank(inv, changed, false, o, w)
		want := Rank(inv, o, w)
		if !r.Full {
			partial++
		}
		if !sameRanking(got, want) {
			t.Fatalf("step %d (%s, full=%v): the incremental ranking differs from the full one", step, m.name, r.Full)
		}
	}
	// Honest about being incremental: most changes touch few nodes.
	if partial < 100 {
		t.Errorf("only %d of 400 rankings were partial", partial)
	}
}

func sub(a, b model.Resources) model.Resources {
	return model.Resources{MilliCPU: a.MilliCPU - b.MilliCPU, MemoryBytes: a.MemoryBytes - b.MemoryBytes, Pods: a.Pods - b.Pods}
}

func sameRanking(a, b []Victim) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !reflect.DeepEqual(x.Placement(), y.Placement()) {
			return false
		}
		x.placed, y.placed = nil, nil
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// A change outside the placement pool judges one node again; the rest is reused.
func TestRankerJudgesOnlyWhatChanged(t *testing.T) {
	inv := clusterOf(500, 10, 3, rand.New(rand.NewSource(3)))
	o, w := Options{IgnoreDaemonSets: true}, DefaultWeights()
	var r Ranker
	r.Rank(inv, nil, true, o, w)
	if !r.Full || r.Judged != 500 {
		t.Fatalf("first ranking: full %v, judged %d", r.Full, r.Judged)
	}
	// The fullest node (last in the pool order) gets a bare pod.
	full := Rank(inv, o, w)
	name := full[len(full)-1].Node
	inv = clone(inv)
	n, _ := inv.Node(name)
	for i := range inv.Nodes {
		if inv.Nodes[i].Name == n.Name {
			inv.Nodes[i].Pods = append(inv.Nodes[i].Pods, model.Pod{Namespace: "ns", Name: "bare", NodeName: name, Phase: "Running"})
		}
	}
	got := r.Rank(inv, map[string]bool{name: true}, false, o, w)
	if r.Full || r.Judged != 1 {
		t.Errorf("after one node's change: full %v, judged %d", r.Full, r.Judged)
	}
	if v := victim(got, name); v.Candidate || !codes(v)[model.BarePod] {
		t.Errorf("%s: %+v", name, v)
	}
	// Nothing changed: nothing judged.
	r.Rank(inv, nil, false, o, w)
	if r.Full || r.Judged != 0 {
		t.Errorf("no change: full %v, judged %d", r.Full, r.Judged)
	}
}

// BenchmarkRankIncremental: 5,000 nodes, 150,000 pods, 50,000 VMs; between rankings ten
// nodes anywhere in the cluster see a pod replaced (a rolling update: a new pod, the same
// requests). Changes of free capacity among the pool's emptiest nodes rank everything
// again, at BenchmarkRank's cost; the judged/op figure shows which case ran.
func BenchmarkRankIncremental(b *testing.B) {
	rng := rand.New(rand.NewSource(7))
	base := clusterOf(5000, 30, 10, rng)
	o, w := Options{IgnoreDaemonSets: true}, DefaultWeights()
	var r Ranker
	r.Rank(base, nil, true, o, w)
	invs := make([]model.Inventory, 8)
	changes := make([]map[string]bool, len(invs))
	for i := range invs {
		inv := clone(base)
		changes[i] = map[string]bool{}
		for range 10 {
			j := rng.Intn(len(inv.Nodes))
			n := &inv.Nodes[j]
			last := &n.Pods[len(n.Pods)-1]
			last.Name += "-next"
			changes[i][n.Name] = true
		}
		invs[i] = inv
	}
	b.ReportAllocs()
	b.ResetTimer()
	judged := 0
	for i := 0; i < b.N; i++ {
		// base, then a changed copy, then base again: each step changes ten nodes.
		k := (i / 2) % len(invs)
		inv := base
		if i%2 == 0 {
			inv = invs[k]
		}
		r.Rank(inv, changes[k], false, o, w)
		judged += r.Judged
	}
	b.ReportMetric(float64(judged)/float64(b.N), "judged/op")
}
