package policy

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/drainctl/drainctl/model"
)

// clusterOf builds an inventory of n workers, each with podsPer pods and vmsPer VMs.
func clusterOf(n, podsPer, vmsPer int, rng *rand.Rand) model.Inventory {
	inv := model.Inventory{NovaConfigured: true}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%04d", i)
		node := model.Node{Name: name, Host: name,
			Kube: &model.KubeNode{Name: name, Ready: true, Schedulable: true, Annotations: map[string]string{},
				Allocatable: model.Resources{MilliCPU: 16000, MemoryBytes: 64 << 30, Pods: 110}},
			Compute:    &model.ComputeService{Host: name, Enabled: true, Up: true},
			Hypervisor: &model.Hypervisor{CapacityKnown: true, VCPUs: 32, MemoryMB: 131072, MemoryMBUsed: 512},
		}
		for j := 0; j < podsPer; j++ {
			cpu := int64(100 + rng.Intn(8)*100)
			if rng != nil && rng.Intn(4) == 0 {
				cpu *= 4
			}
			p := model.Pod{Namespace: "ns", Name: fmt.Sprintf("%s-p%d", name, j), NodeName: name, Phase: "Running", OwnerKind: "ReplicaSet",
				Requests: model.Resources{MilliCPU: cpu, MemoryBytes: cpu << 20, Pods: 1}}
			node.Pods = append(node.Pods, p)
			node.Requested = node.Requested.Add(p.Requests)
		}
		for j := 0; j < vmsPer; j++ {
			ram := int64(2048 << rng.Intn(3))
			node.VMs = append(node.VMs, model.VM{ID: fmt.Sprintf("%s-v%d", name, j), Name: fmt.Sprintf("%s-v%d", name, j), Host: name, Phase: model.PhaseRunning, Status: "ACTIVE", RAMMB: ram, VCPUs: int(ram / 2048)})
			node.Hypervisor.MemoryMBUsed += ram
			node.Hypervisor.VCPUsUsed += int(ram / 2048)
		}
		inv.Nodes = append(inv.Nodes, node)
	}
	return inv
}

func victim(vs []Victim, node string) Victim {
	for _, v := range vs {
		if v.Node == node {
			return v
		}
	}
	return Victim{}
}

func codes(v Victim) map[model.ReasonCode]bool {
	out := map[model.ReasonCode]bool{}
	for _, r := range v.Reasons {
		out[r.Code] = true
	}
	return out
}

func TestRankRules(t *testing.T) {
	for _, tc := range []struct {
		desc string
		mod  func(inv *model.Inventory)
		node string
		want model.ReasonCode
	}{
		{"scale-down disabled", func(inv *model.Inventory) {
			inv.Nodes[0].Kube.Annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"] = "true"
		}, "node-0000", model.ScaleDownDisabled},
		{"karpenter do-not-disrupt", func(inv *model.Inventory) { inv.Nodes[0].Kube.Annotations["karpenter.sh/do-not-disrupt"] = "true" }, "node-0000", model.DoNotDisrupt},
		{"held by a drainctl operation", func(inv *model.Inventory) { inv.Nodes[0].Kube.Annotations["drainctl.io/operation"] = "{}" }, "node-0000", model.HeldByOther},
		{"compute disabled by someone else", func(inv *model.Inventory) {
			inv.Nodes[0].Compute.Enabled, inv.Nodes[0].Compute.DisabledReason = false, "hardware ticket"
		}, "node-0000", model.HeldByOther},
		{"held by kured", func(inv *model.Inventory) { inv.Nodes[0].Kube.Annotations["weave.works/kured-node-lock"] = "x" }, "node-0000", model.HeldByOther},
		{"control-plane role", func(inv *model.Inventory) { inv.Nodes[0].Kube.Roles = []string{"control-plane"} }, "node-0000", model.ControlPlane},
		{"kube-apiserver pod", func(inv *model.Inventory) {
			inv.Nodes[0].Pods = append(inv.Nodes[0].Pods, model.Pod{Namespace: "kube-system", Name: "kube-apiserver-x", Mirror: true, Phase: "Running"})
		}, "node-0000", model.ControlPlane},
		{"last schedulable worker", func(inv *model.Inventory) {
			for i := 1; i < len(inv.Nodes); i++ {
				inv.Nodes[i].Kube.Schedulable = false
			}
		}, "node-0000", model.LastSchedulable},
		{"bare pod", func(inv *model.Inventory) { inv.Nodes[0].Pods[0].OwnerKind = "" }, "node-0000", model.BarePod},
		{"local storage", func(inv *model.Inventory) { inv.Nodes[0].Pods[0].LocalVolume = "data" }, "node-0000", model.LocalStorage},
		{"safe-to-evict false", func(inv *model.Inventory) {
			inv.Nodes[0].Pods[0].Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
		}, "node-0000", model.SafeToEvictFalse},
		{"PDB allows nothing", func(inv *model.Inventory) {
			inv.Nodes[0].Pods[0].PDBs = []string{"db"}
			inv.PDBs = []model.PDB{{Namespace: "ns", Name: "db"}}
		}, "node-0000", model.PDBExhausted},
		{"pods do not fit", func(inv *model.Inventory) {
			inv.Nodes[0].Pods[0].Requests.MilliCPU = 20000 // more than any node has
		}, "node-0000", model.NoHostWithRoom},
		{"VMs do not fit", func(inv *model.Inventory) {
			for i := 1; i < len(inv.Nodes); i++ {
				inv.Nodes[i].Compute.Enabled = false
			}
		}, "node-0000", model.NoHostWithRoom},
		{"VM busy with a task", func(inv *model.Inventory) { inv.Nodes[0].VMs[0].Task = model.TaskOther }, "node-0000", model.VMTaskInProgress},
		{"every other node tainted, not tolerated", func(inv *model.Inventory) {
			for i := 1; i < len(inv.Nodes); i++ {
				inv.Nodes[i].Kube.Taints = []model.Taint{{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}}
			}
		}, "node-0000", model.NoHostWithRoom},
		{"nodeSelector matches no other node", func(inv *model.Inventory) {
			inv.Nodes[0].Pods[0].Placement = &model.Placement{NodeSelector: map[string]string{"disk": "ssd"}}
		}, "node-0000", model.NoHostWithRoom},
		{"required affinity matches no other node", func(inv *model.Inventory) {
			inv.Nodes[0].Pods[0].Placement = &model.Placement{NodeAffinity: []model.NodeSelectorTerm{{MatchExpressions: []model.NodeSelectorRequirement{
				{Key: "zone", Operator: "In", Values: []string{"b"}}}}}}
		}, "node-0000", model.NoHostWithRoom},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			inv := clusterOf(3, 3, 2, rand.New(rand.NewSource(1)))
			if v := victim(Rank(inv, Options{IgnoreDaemonSets: true}, DefaultWeights()), tc.node); !v.Candidate {
				t.Fatalf("before the change %s is no candidate: %+v", tc.node, v.Reasons)
			}
			tc.mod(&inv)
			v := victim(Rank(inv, Options{IgnoreDaemonSets: true}, DefaultWeights()), tc.node)
			if v.Candidate || !codes(v)[tc.want] {
				t.Errorf("want %s, got candidate=%v %+v", tc.want, v.Candidate, v.Reasons)
			}
		})
	}
}

// The same constraints, satisfied, keep the node a candidate.
func TestRankHonoursTolerationsAndAffinity(t *testing.T) {
	inv := clusterOf(3, 3, 0, rand.New(rand.NewSource(1)))
	for i := 1; i < len(inv.Nodes); i++ {
		inv.Nodes[i].Kube.Taints = []model.Taint{{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}}
		inv.Nodes[i].Kube.Labels = map[string]string{"zone": "b", "disk": "ssd"}
	}
	for i := range inv.Nodes[0].Pods {
		inv.Nodes[0].Pods[i].Placement = &model.Placement{
			Tolerations:  []model.Toleration{{Key: "dedicated", Operator: "Equal", Value: "gpu", Effect: "NoSchedule"}},
			NodeSelector: map[string]string{"disk": "ssd"},
			NodeAffinity: []model.NodeSelectorTerm{{MatchExpressions: []model.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"a", "b"}}}}},
		}
	}
	if v := victim(Rank(inv, Options{}, DefaultWeights()), "node-0000"); !v.Candidate {
		t.Errorf("tolerating, selecting and affine pods should fit: %+v", v.Reasons)
	}
}

func TestRankOrdersByCost(t *testing.T) {
	inv := clusterOf(4, 2, 1, rand.New(rand.NewSource(2)))
	inv.Nodes[2].Pods, inv.Nodes[2].VMs = nil, nil // empty: cheapest
	inv.Nodes[2].Requested = model.Resources{}
	vs := Rank(inv, Options{}, DefaultWeights())
	if vs[0].Node != "node-0002" || vs[0].Rank != 1 || vs[0].Cost != 0 {
		t.Errorf("first %+v", vs[0])
	}
	for i := 1; i < len(vs); i++ {
		if vs[i].Candidate && vs[i].Cost < vs[i-1].Cost {
			t.Errorf("not sorted by cost: %v", vs)
		}
	}
}

// validPlacement checks, independently of the ranker, that its placement of the victim's
// pods and VMs is real: every pod and VM that must move has a destination that is another
// schedulable worker (or enabled compute host), and no destination is over capacity.
func validPlacement(inv model.Inventory, v Victim) error {
	type load struct{ cpu, mem, slots, ram, vcpu int64 }
	placement := v.Placement()
	used := map[string]*load{}
	nodes := map[string]model.Node{}
	var victim model.Node
	for _, n := range inv.Nodes {
		nodes[n.Name] = n
		if n.Name == v.Node {
			victim = n
		}
	}
	at := func(dest string) (*load, model.Node, error) {
		n, ok := nodes[dest]
		if !ok || dest == v.Node {
			return nil, n, fmt.Errorf("destination %q is the victim or unknown", dest)
		}
		if used[dest] == nil {
			used[dest] = &load{}
		}
		return used[dest], n, nil
	}
	for _, p := range victim.Pods {
		if p.Finished() || p.OwnerKind == "DaemonSet" || p.Mirror {
			continue
		}
		l, n, err := at(placement[p.Key()])
		if err != nil {
			return fmt.Errorf("pod %s: %v", p.Key(), err)
		}
		if !n.Kube.Ready || !n.Kube.Schedulable {
			return fmt.Errorf("pod %s placed on unschedulable %s", p.Key(), n.Name)
		}
		l.cpu, l.mem, l.slots = l.cpu+p.Requests.MilliCPU, l.mem+p.Requests.MemoryBytes, l.slots+1
		if n.Requested.MilliCPU+l.cpu > n.Kube.Allocatable.MilliCPU || n.Requested.MemoryBytes+l.mem > n.Kube.Allocatable.MemoryBytes ||
			n.Requested.Pods+l.slots > n.Kube.Allocatable.Pods {
			return fmt.Errorf("%s is over capacity", n.Name)
		}
	}
	for _, vm := range victim.VMs {
		l, n, err := at(placement[vm.Name])
		if err != nil {
			return fmt.Errorf("VM %s: %v", vm.Name, err)
		}
		if !n.Compute.Enabled || !n.Compute.Up {
			return fmt.Errorf("VM %s placed on disabled %s", vm.Name, n.Name)
		}
		l.ram, l.vcpu = l.ram+vm.RAMMB, l.vcpu+int64(vm.VCPUs)
		h := n.Hypervisor
		if h.MemoryMBUsed+l.ram > h.MemoryMB || float64(int64(h.VCPUsUsed)+l.vcpu) > float64(h.VCPUs)*DefaultWeights().CPURatio {
			return fmt.Errorf("host %s is over capacity", n.Name)
		}
	}
	return nil
}

// Property: no recommended victim's pods or VMs fail to fit elsewhere, over many random,
// tight clusters.
func TestRecommendedVictimsFit(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	candidates := 0
	for round := 0; round < 200; round++ {
		inv := clusterOf(2+rng.Intn(6), rng.Intn(40), rng.Intn(12), rng)
		for _, v := range Rank(inv, Options{}, DefaultWeights()) {
			if !v.Candidate {
				continue
			}
			candidates++
			if err := validPlacement(inv, v); err != nil {
				t.Fatalf("round %d: %s is recommended but: %v", round, v.Node, err)
			}
		}
	}
	if candidates < 50 {
		t.Errorf("only %d candidates in 200 clusters: the property was hardly tested", candidates)
	}
}

// BenchmarkRank: 5,000 nodes, 150,000 pods, 50,000 VMs.
func BenchmarkRank(b *testing.B) {
	inv := clusterOf(5000, 30, 10, rand.New(rand.NewSource(7)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Rank(inv, Options{IgnoreDaemonSets: true}, DefaultWeights())
	}
}

// A NotReady node is never a scale-down candidate: the ranking names recover as its way.
func TestRankSendsADeadNodeToRecover(t *testing.T) {
	inv := clusterOf(4, 2, 1, rand.New(rand.NewSource(1)))
	dead := inv.Nodes[0]
	dead.Kube.Ready = false
	v := victim(Rank(inv, Options{}, DefaultWeights()), dead.Name)
	if v.Candidate || !codes(v)[model.NodeIsDead] {
		t.Fatalf("a dead node: candidate %v, reasons %+v", v.Candidate, v.Reasons)
	}
}

// The ranking gives every reason a pod blocks, as the plan does: a bare pod with a local
// volume names both overrides at once.
func TestRankGivesEveryBlockerOfAPod(t *testing.T) {
	inv := clusterOf(3, 1, 0, rand.New(rand.NewSource(2)))
	inv.Nodes[0].Pods = append(inv.Nodes[0].Pods, model.Pod{Namespace: "shop", Name: "cache-0", NodeName: inv.Nodes[0].Name, Phase: "Running", LocalVolume: "scratch"})
	v := victim(Rank(inv, Options{}, DefaultWeights()), inv.Nodes[0].Name)
	var on []string
	for _, r := range v.Reasons {
		if r.Object == "shop/cache-0" {
			on = append(on, string(r.Override))
		}
	}
	if len(on) != len(PodBlocks(inv.Nodes[0].Pods[1], Options{})) || len(on) < 2 {
		t.Errorf("reasons on the pod: %v (the plan gives %d)", on, len(PodBlocks(inv.Nodes[0].Pods[1], Options{})))
	}
}
