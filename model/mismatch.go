package model

import (
	"fmt"
	"slices"
)

// MismatchCode names a way in which Kubernetes and Nova disagree about a node.
type MismatchCode string

const (
	NoComputeService       MismatchCode = "NoComputeService"       // a Kubernetes node with no nova-compute
	NoKubeNode             MismatchCode = "NoKubeNode"             // a compute host that is no Kubernetes node
	CordonedButEnabled     MismatchCode = "CordonedButEnabled"     // unschedulable in Kubernetes, enabled in Nova
	DisabledButSchedulable MismatchCode = "DisabledButSchedulable" // disabled in Nova, schedulable in Kubernetes
	ReadyButComputeDown    MismatchCode = "ReadyButComputeDown"    // Ready node whose compute service is down
	NoHypervisor           MismatchCode = "NoHypervisor"           // a compute service with no hypervisor record
	ReserveNotEmpty        MismatchCode = "ReserveNotEmpty"        // a failover reserve that runs VMs
)

// Mismatch is one disagreement, with a message naming the objects involved.
type Mismatch struct {
	Code    MismatchCode `json:"code"`
	Message string       `json:"message"`
}

// Mismatches lists where the node's two halves disagree. A node with no compute service is
// reported only when Nova is configured; control-plane nodes without one are expected and
// not reported.
func (n Node) Mismatches(novaConfigured bool) []Mismatch {
	if !novaConfigured {
		return nil
	}
	var out []Mismatch
	add := func(c MismatchCode, f string, a ...any) { out = append(out, Mismatch{c, fmt.Sprintf(f, a...)}) }
	switch {
	case n.Kube == nil && n.Compute != nil:
		add(NoKubeNode, "compute host %s has no Kubernetes node", n.Host)
	case n.Kube != nil && n.Compute == nil:
		if n.ExpectsCompute() {
			add(NoComputeService, "node %s has no nova-compute service (looked for host %q)", n.Name, n.Host)
		}
	case n.Kube != nil && n.Compute != nil:
		if !n.Kube.Schedulable && n.Compute.Enabled {
			add(CordonedButEnabled, "node %s is cordoned but nova-compute on %s is enabled", n.Name, n.Host)
		}
		// A failover reserve is disabled by design, its Kubernetes side usable unless
		// reserve_cordon; one that runs VMs keeps less room than it promises.
		if n.Kube.Schedulable && !n.Compute.Enabled && !n.Compute.Reserved() {
			add(DisabledButSchedulable, "nova-compute on %s is disabled (%s) but node %s is schedulable",
				n.Host, orNone(n.Compute.DisabledReason), n.Name)
		}
		if n.Compute.Reserved() && len(n.VMs) > 0 {
			add(ReserveNotEmpty, "nova-compute on %s is held as the failover reserve but runs %d VM(s): a dead host's may not fit "+
				"(evacuate empties it)", n.Host, len(n.VMs))
		}
		if n.Kube.Ready && !n.Compute.Up {
			add(ReadyButComputeDown, "node %s is Ready but nova-compute on %s is down", n.Name, n.Host)
		}
	}
	if n.Compute != nil && n.Hypervisor == nil {
		add(NoHypervisor, "nova-compute on %s has no hypervisor record", n.Host)
	}
	return out
}

// ExpectsCompute says whether the node should be a hypervisor: its host is named for it
// ([mapping]), it carries the compute role or nova-kubernetes-drain's label, or it has no
// role at all (a worker whose host was not found). A node whose roles are all something
// else (control-plane, storage, ingress) is not one, and its missing service says nothing.
func (n Node) ExpectsCompute() bool {
	k := n.Kube
	switch {
	case k == nil:
		return false
	case n.HostExplicit, k.Labels["openstack-compute-node"] == "enabled", len(k.Roles) == 0:
		return true
	}
	return slices.Contains(k.Roles, "compute")
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
