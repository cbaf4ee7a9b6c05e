package policy

import (
	"maps"
	"reflect"
	"slices"

	"github.com/drainctl/drainctl/model"
)

// Ranker ranks as Rank does, judging again only the nodes whose verdict can have changed
// since its previous ranking; the result is the same as a full Rank of the same inventory.
//
// A node's verdict depends on its own inputs (its Node object and pods, its compute
// service and VMs), the budgets of its pods, whether another worker remains, and the
// placement pool: the PlacementPool+1 emptiest rooms on each side, where its pods and VMs
// are placed. So a node is judged again when its own inputs changed (Kubernetes changes
// are told by the caller, who watches them; Nova's are compared here) or one of its pods'
// budgets did; everything is judged again when the pool, the options or the weights
// changed, or when the count of workers crosses the "last schedulable worker" line.
type Ranker struct {
	o       Options
	w       Weights
	valid   bool
	prev    map[string]*judged
	pdbs    map[string]model.PDB
	byPDB   map[string]map[string]bool // budget -> nodes with pods under it
	pool    poolSig
	workers int

	// Judged and Full say how the last ranking went: nodes judged, and whether all were.
	Judged int
	Full   bool
}

// judged is a node's last verdict and the Nova inputs it was reached on.
type judged struct {
	v       Victim
	vms     []model.VM
	compute computeSig
	pdbs    []string
}

type computeSig struct {
	present, enabled, up, forcedDown bool
	reason                           string
}

func computeOf(n model.Node) computeSig {
	c := n.Compute
	if c == nil {
		return computeSig{}
	}
	return computeSig{present: true, enabled: c.Enabled, up: c.Up, forcedDown: c.ForcedDown, reason: c.DisabledReason}
}

// poolSig is what placement can see of the pool: the rooms' names, free capacity and, for
// pods with constraints, the nodes' labels and taints.
type poolSig struct {
	pods []podRoomSig
	vms  []vmRoomSig
}

type podRoomSig struct {
	name           string
	cpu, mem, pods int64
	tainted        bool
	labels         map[string]string
	taints         []model.Taint
}

type vmRoomSig struct {
	name string
	ram  int64
	vcpu float64
}

func poolOf(podRooms, vmRooms []room, size int) poolSig {
	var s poolSig
	for _, r := range podRooms[:min(size, len(podRooms))] {
		s.pods = append(s.pods, podRoomSig{name: r.name, cpu: r.cpu, mem: r.mem, pods: r.pods, tainted: r.tainted,
			labels: r.node.kube.Labels, taints: r.node.kube.Taints})
	}
	for _, r := range vmRooms[:min(size, len(vmRooms))] {
		s.vms = append(s.vms, vmRoomSig{name: r.name, ram: r.ram, vcpu: r.vcpu})
	}
	return s
}

func (a poolSig) equal(b poolSig) bool {
	return slices.Equal(a.vms, b.vms) && slices.EqualFunc(a.pods, b.pods, func(x, y podRoomSig) bool {
		return x.name == y.name && x.cpu == y.cpu && x.mem == y.mem && x.pods == y.pods && x.tainted == y.tainted &&
			maps.Equal(x.labels, y.labels) && slices.Equal(x.taints, y.taints)
	})
}

// Rank ranks inv. changed names the nodes whose Kubernetes side (Node object or pods)
// changed since the previous call; all says that any may have (nothing is known).
func (r *Ranker) Rank(inv model.Inventory, changed map[string]bool, all bool, o Options, w Weights) []Victim {
	pdbs := make(map[string]model.PDB, len(inv.PDBs))
	for _, b := range inv.PDBs {
		pdbs[b.Namespace+"/"+b.Name] = b
	}
	podRooms, vmRooms := freeRooms(inv, w)
	lg := legalityOf(vmRooms)
	workers := countWorkers(inv)
	pool := poolOf(podRooms, vmRooms, w.PlacementPool+1)
	full := all || !r.valid || w != r.w || !reflect.DeepEqual(o, r.o) || !pool.equal(r.pool) ||
		(workers != r.workers && min(workers, r.workers) <= 1)

	again := map[string]bool{} // nodes to judge again, when not all of them
	if !full {
		for key, b := range pdbs {
			if old, ok := r.pdbs[key]; !ok || old != b {
				maps.Copy(again, r.byPDB[key])
			}
		}
		for key := range r.pdbs {
			if _, ok := pdbs[key]; !ok {
				maps.Copy(again, r.byPDB[key])
			}
		}
	}
	next := make(map[string]*judged, len(inv.Nodes))
	out := make([]Victim, 0, len(inv.Nodes))
	scratch := make([]room, 0, w.PlacementPool)
	byPDB := r.byPDB
	if full {
		byPDB = map[string]map[string]bool{}
	}
	r.Judged = 0
	for _, n := range inv.Nodes {
		if n.Kube == nil {
			continue
		}
		old := r.prev[n.Name]
		if !full && old != nil && !changed[n.Name] && !again[n.Name] && old.compute == computeOf(n) && slices.Equal(old.vms, n.VMs) {
			next[n.Name] = old
			out = append(out, old.v)
			continue
		}
		j := &judged{v: judge(n, workers, pdbs, podRooms, vmRooms, scratch, lg, o, w), vms: n.VMs, compute: computeOf(n)}
		r.Judged++
		if old != nil {
			for _, key := range old.pdbs {
				delete(byPDB[key], n.Name)
			}
		}
		for _, p := range n.Pods {
			for _, b := range p.PDBs {
				key := p.Namespace + "/" + b
				if byPDB[key] == nil {
					byPDB[key] = map[string]bool{}
				}
				byPDB[key][n.Name] = true
				j.pdbs = append(j.pdbs, key)
			}
		}
		next[n.Name] = j
		out = append(out, j.v)
	}
	r.o, r.w, r.valid, r.prev, r.pdbs, r.byPDB, r.pool, r.workers, r.Full = o, w, true, next, pdbs, byPDB, pool, workers, full
	order(out)
	return out
}
