package model

import (
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// KubeSnapshot is the Kubernetes side of the cluster at one moment.
type KubeSnapshot struct {
	Nodes []KubeNode
	// Pods are runs, one per node, each sorted by key (ComparePods). A run may be shared with
	// other snapshots: nothing writes into it.
	Pods [][]Pod
	PDBs []PDB
}

// NovaSnapshot is the Nova side of the cluster at one moment.
type NovaSnapshot struct {
	Services    []ComputeService
	Hypervisors []Hypervisor
	VMs         []VM
	Migrations  []Migration // live migrations not yet in a final state
	// ServerGroups are the cloud's server groups (nil when they could not be read).
	ServerGroups []ServerGroup
}

// Fingerprint sums what the views show of the Nova side (the VMs' places and states, the
// services, the migrations' progress, the hosts' capacity): equal sums, nothing to show anew.
func (s NovaSnapshot) Fingerprint() uint64 {
	h := fnv.New64a()
	var b []byte // one buffer for every field: a refresh sums 50,000 VMs
	field := func(parts ...string) {
		b = b[:0]
		for _, p := range parts {
			b = append(append(b, p...), '|')
		}
		h.Write(b)
	}
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, vm := range s.VMs {
		field(vm.ID, vm.Name, vm.Host, string(vm.Status), vm.TaskState, strconv.FormatBool(vm.Locked), num(vm.RAMMB), vm.Fault)
	}
	for _, c := range s.Services {
		field(c.Host, strconv.FormatBool(c.Enabled), strconv.FormatBool(c.Up), strconv.FormatBool(c.ForcedDown), c.DisabledReason)
	}
	for _, m := range s.Migrations {
		field(num(m.ID), string(m.Status))
		if m.MemoryProcessed != nil {
			field(num(*m.MemoryProcessed))
		}
	}
	for _, hv := range s.Hypervisors {
		if c := hv.Capacity; c != nil {
			field(
				hv.Host,
				num(c.VCPU.Used),
				num(c.MemoryMB.Used),
				num(c.DiskGB.Used),
				strconv.FormatFloat(c.MemoryMB.Capacity, 'g', -1, 64),
			)
		}
	}
	return h.Sum64()
}

// WithHosts is s with the part of hosts replaced by part, a fresher read of those hosts
// alone: their services, hypervisors, servers and the live migrations from them. A server
// part shows on one of them is taken from wherever s had it (it moved there since). s is
// not changed.
func (s NovaSnapshot) WithHosts(part NovaSnapshot, hosts []string) NovaSnapshot {
	in := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		in[h] = true
	}
	fresh := make(map[string]bool, len(part.VMs))
	for _, vm := range part.VMs {
		fresh[vm.ID] = true
	}
	freshMig := make(map[int64]bool, len(part.Migrations))
	for _, m := range part.Migrations {
		freshMig[m.ID] = true
	}
	out := NovaSnapshot{ServerGroups: s.ServerGroups}
	out.Services = append(keep(s.Services, func(c ComputeService) bool { return !in[c.Host] }), part.Services...)
	out.Hypervisors = append(keep(s.Hypervisors, func(h Hypervisor) bool { return !in[h.Host] }), part.Hypervisors...)
	out.VMs = append(keep(s.VMs, func(vm VM) bool { return !in[vm.Host] && !fresh[vm.ID] }), part.VMs...)
	out.Migrations = append(
		keep(s.Migrations, func(m Migration) bool { return !in[m.SourceCompute] && !freshMig[m.ID] }),
		part.Migrations...)
	return out
}

// keep is a new slice of the items of list that ok keeps.
func keep[T any](list []T, ok func(T) bool) []T {
	out := make([]T, 0, len(list))
	for _, x := range list {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}

// Node is one machine seen from both layers. Either half may be missing: a Kubernetes node
// with no compute service (a control-plane or storage node), or a compute host that is no
// Kubernetes node. Those are data for the views, not errors.
type Node struct {
	Name       string          `json:"name"` // the Kubernetes node name, else the compute host
	Host       string          `json:"host,omitempty"`
	Kube       *KubeNode       `json:"kube,omitempty"`
	Compute    *ComputeService `json:"compute,omitempty"`
	Hypervisor *Hypervisor     `json:"hypervisor,omitempty"`
	Requested  Resources       `json:"requested"`
	VMs        []VM            `json:"vms"`
	Pods       []Pod           `json:"pods"`
	Migrations []Migration     `json:"migrations,omitempty"` // in progress, from or to this host
	// HostExplicit: the node names its compute host itself ([mapping] hosts, or the
	// mapping's label or annotation on it): it is meant to be a hypervisor.
	HostExplicit bool `json:"hostExplicit,omitempty"`
	// HostSharedWith names the other Kubernetes nodes mapped to the same compute host;
	// neither is joined with it (which one runs it cannot be told).
	HostSharedWith []string `json:"hostSharedWith,omitempty"`
}

// Where says which cluster drainctl works on, for every screen's header: the operator must
// always see what they are changing.
type Where struct {
	KubeContext string `json:"kubeContext,omitempty"`
	KubeServer  string `json:"kubeServer,omitempty"`
	Cloud       string `json:"cloud,omitempty"`    // clouds.yaml entry, when one was used
	AuthHost    string `json:"authHost,omitempty"` // Keystone's host
	Region      string `json:"region,omitempty"`
	Demo        bool   `json:"demo,omitempty"`
}

// Inventory is the joined view of the cluster.
type Inventory struct {
	At    time.Time `json:"at"`
	Nodes []Node    `json:"nodes"`
	// UnplacedVMs are VMs whose host is no known compute service.
	UnplacedVMs []VM `json:"unplacedVMs,omitempty"`
	// ServerGroups are the cloud's server groups, as the read gave them (a VM group's budget).
	ServerGroups []ServerGroup `json:"serverGroups,omitempty"`
	// NovaConfigured is false when drainctl runs on Kubernetes alone.
	NovaConfigured bool  `json:"novaConfigured"`
	PDBs           []PDB `json:"pdbs,omitempty"`
}

// Node returns the node with that name.
func (inv Inventory) Node(name string) (Node, bool) {
	i := sort.Search(len(inv.Nodes), func(i int) bool { return inv.Nodes[i].Name >= name })
	if i < len(inv.Nodes) && inv.Nodes[i].Name == name {
		return inv.Nodes[i], true
	}
	for _, n := range inv.Nodes { // a compute host may be asked for by its host name
		if n.Host == name {
			return n, true
		}
	}
	return Node{}, false
}

// Join puts the two halves together. Hosts are matched through the mapper; VMs and
// hypervisors are matched on the service host, never on hypervisor_hostname.
func Join(k KubeSnapshot, n *NovaSnapshot, m HostMapper, at time.Time) Inventory {
	inv := Inventory{At: at, NovaConfigured: n != nil, PDBs: k.PDBs}
	byName := make(map[string]*Node, len(k.Nodes))
	byHost := map[string]*Node{}
	nodes := make([]*Node, 0, len(k.Nodes))
	mappedTo := map[string][]*Node{} // compute host -> the Kubernetes nodes mapped to it
	for i := range k.Nodes {
		kn := k.Nodes[i]
		node := &Node{Name: kn.Name, Kube: &kn, VMs: []VM{}, Pods: []Pod{}}
		byName[kn.Name] = node
		nodes = append(nodes, node)
		if n != nil {
			if h := m.Host(kn); h != "" {
				node.Host, node.HostExplicit = h, m.Explicit(kn)
				mappedTo[h] = append(mappedTo[h], node)
			}
		}
	}
	for h, ns := range mappedTo {
		if len(ns) == 1 {
			byHost[h] = ns[0]
			continue
		}
		for _, a := range ns { // two nodes, one host: the join would depend on their order
			for _, b := range ns {
				if a != b {
					a.HostSharedWith = append(a.HostSharedWith, b.Name)
				}
			}
			sort.Strings(a.HostSharedWith)
		}
	}
	// Each node's run of pods is shared with the snapshot (and the snapshot's with the
	// cache's), not copied: at 150,000 pods a copy is 40 MB. The capacity is cut so that an
	// append copies instead of writing into the shared run.
	for _, run := range k.Pods {
		if len(run) == 0 {
			continue
		}
		run = run[:len(run):len(run)]
		node := byName[run[0].NodeName]
		if node == nil {
			continue // unscheduled, or on a node not (yet) in the cache
		}
		if len(node.Pods) == 0 {
			node.Pods = run
		} else {
			node.Pods = append(node.Pods, run...)
		}
		for _, p := range run {
			if !p.Finished() {
				node.Requested = node.Requested.Add(p.Requests)
			}
		}
	}
	if n != nil {
		hostNode := func(host string) *Node {
			if node := byHost[host]; node != nil {
				return node
			}
			node := &Node{Name: host, Host: host, VMs: []VM{}, Pods: []Pod{}}
			byHost[host] = node
			nodes = append(nodes, node)
			return node
		}
		for i := range n.Services {
			s := n.Services[i]
			node := hostNode(s.Host)
			if node.Compute == nil {
				node.Compute = &s
			}
		}
		for i := range n.Hypervisors {
			h := n.Hypervisors[i]
			if h.Host == "" {
				continue
			}
			hostNode(h.Host).Hypervisor = &h
		}
		inv.ServerGroups = n.ServerGroups
		antiAffinity := map[string][]string{} // VM ID -> its hard anti-affinity groups
		for _, g := range n.ServerGroups {
			if g.Policy == "anti-affinity" {
				for _, id := range g.Members {
					antiAffinity[id] = append(antiAffinity[id], g.Name)
				}
			}
		}
		for _, vm := range n.VMs {
			if aa := antiAffinity[vm.ID]; aa != nil {
				vm.AntiAffinity = strings.Join(aa, ", ")
			}
			if node := byHost[vm.Host]; node != nil && vm.Host != "" {
				node.VMs = append(node.VMs, vm)
				continue
			}
			inv.UnplacedVMs = append(inv.UnplacedVMs, vm)
		}
		for _, mig := range n.Migrations {
			if node := byHost[mig.SourceCompute]; node != nil {
				node.Migrations = append(node.Migrations, mig)
			}
			if node := byHost[mig.DestCompute]; node != nil && mig.DestCompute != mig.SourceCompute {
				node.Migrations = append(node.Migrations, mig)
			}
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	inv.Nodes = make([]Node, len(nodes))
	for i, node := range nodes {
		sort.Slice(node.VMs, func(a, b int) bool { return node.VMs[a].Name < node.VMs[b].Name })
		if node.Hypervisor != nil {
			// Nova stopped reporting running_vms at 2.88 (it reads 0 there): the servers on
			// the host are counted instead, so that no view says 0 VMs beside ten.
			node.Hypervisor.RunningVMs = len(node.VMs)
		}
		if !slices.IsSortedFunc(node.Pods, ComparePods) { // a shared run is sorted already: never written
			slices.SortFunc(node.Pods, ComparePods)
		}
		inv.Nodes[i] = *node
	}
	sort.Slice(inv.UnplacedVMs, func(a, b int) bool { return inv.UnplacedVMs[a].ID < inv.UnplacedVMs[b].ID })
	return inv
}
