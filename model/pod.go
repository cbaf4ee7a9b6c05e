package model

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
	OwnerKind   string            `json:"ownerKind,omitempty"` // "" for a bare pod
	OwnerName   string            `json:"ownerName,omitempty"`
	Mirror      bool              `json:"mirror,omitempty"` // a static pod's mirror
	Requests    Resources         `json:"requests"`
	PDBs        []string          `json:"pdbs,omitempty"` // names of the PDBs selecting it
	LocalVolume string            `json:"localVolume,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Key is namespace/name.
func (p Pod) Key() string { return p.Namespace + "/" + p.Name }

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
