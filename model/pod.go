package model

import "strings"

// Pod is a Kubernetes pod as drainctl needs it: where it runs, who owns it and what would keep
// it from being evicted.
type Pod struct {
	Namespace   string            `json:"namespace"`
	Name        string            `json:"name"`
	UID         string            `json:"uid"`
	NodeName    string            `json:"nodeName"`
	Phase       string            `json:"phase"`
	Ready       bool              `json:"ready"`
	Terminating bool              `json:"terminating"`
	Mirror      bool              `json:"mirror,omitempty"`    // a static pod's mirror
	OwnerKind   string            `json:"ownerKind,omitempty"` // "" for a bare pod
	OwnerName   string            `json:"ownerName,omitempty"`
	Requests    Resources         `json:"requests"`
	PDBs        []string          `json:"pdbs,omitempty"` // names of the PDBs selecting it
	LocalVolume string            `json:"localVolume,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Where the pod may run, nil when nothing restricts it. Pods alike share one (56 bytes
	// less in each of 150,000 pods). Read it through the methods of the same names, which
	// shadow the promoted fields and are nil-safe; JSON still shows the fields beside the
	// pod's own.
	*Placement
}

// Placement is what the scheduler would check of a pod when it is recreated elsewhere. It is
// shared: never change one in place, make another.
type Placement struct {
	Tolerations  []Toleration       `json:"tolerations,omitempty"`
	NodeSelector map[string]string  `json:"nodeSelector,omitempty"`
	NodeAffinity []NodeSelectorTerm `json:"requiredNodeAffinity,omitempty"` // ORed terms
}

// Tolerations are the taints the pod tolerates.
func (p Pod) Tolerations() []Toleration {
	if p.Placement == nil {
		return nil
	}
	return p.Placement.Tolerations
}

// NodeSelector are the labels the pod's node must carry.
func (p Pod) NodeSelector() map[string]string {
	if p.Placement == nil {
		return nil
	}
	return p.Placement.NodeSelector
}

// NodeAffinity are the pod's required node affinity terms, ORed.
func (p Pod) NodeAffinity() []NodeSelectorTerm {
	if p.Placement == nil {
		return nil
	}
	return p.Placement.NodeAffinity
}

// Toleration is a pod's toleration of a taint.
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"` // Equal (default) or Exists
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"` // empty: every effect
}

// NodeSelectorTerm is one term of required node affinity: all its requirements must hold.
type NodeSelectorTerm struct {
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// NodeSelectorRequirement is one label requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt).
type NodeSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Constrained reports whether the pod restricts where it runs beyond resources.
func (p Pod) Constrained() bool {
	return len(p.Tolerations()) > 0 || len(p.NodeSelector()) > 0 || len(p.NodeAffinity()) > 0
}

// Key is namespace/name.
func (p Pod) Key() string { return p.Namespace + "/" + p.Name }

// ComparePods orders pods as their keys sort ("ns/name"), without building the keys.
func ComparePods(a, b Pod) int {
	if a.Namespace == b.Namespace {
		return strings.Compare(a.Name, b.Name)
	}
	ka, kb := keyBytes{a.Namespace, a.Name}, keyBytes{b.Namespace, b.Name}
	n := ka.len()
	if kb.len() < n {
		n = kb.len()
	}
	for i := 0; i < n; i++ {
		if x, y := ka.at(i), kb.at(i); x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return ka.len() - kb.len()
}

// keyBytes is a pod's key, ns + "/" + name, read byte by byte.
type keyBytes struct{ ns, name string }

func (k keyBytes) len() int { return len(k.ns) + 1 + len(k.name) }

func (k keyBytes) at(i int) byte {
	switch {
	case i < len(k.ns):
		return k.ns[i]
	case i == len(k.ns):
		return '/'
	}
	return k.name[i-len(k.ns)-1]
}

// Finished reports whether the pod has run to completion and holds nothing.
func (p Pod) Finished() bool { return p.Phase == "Succeeded" || p.Phase == "Failed" }

// PDB is a PodDisruptionBudget's state as the disruption controller last wrote it.
type PDB struct {
	Namespace          string `json:"namespace"`
	Name               string `json:"name"`
	DisruptionsAllowed int32  `json:"disruptionsAllowed"`
	CurrentHealthy     int32  `json:"currentHealthy"`
	DesiredHealthy     int32  `json:"desiredHealthy"`
	ExpectedPods       int32  `json:"expectedPods"`
}
