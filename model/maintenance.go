package model

import "time"

// NodeMaintenance asks for a node to be emptied and held out of service while it exists
// (node-maintenance-operator's resource, with the VM half added). Deleting it puts the
// node back.
type NodeMaintenance struct {
	Name     string            `json:"name"`
	NodeName string            `json:"nodeName"`
	Reason   string            `json:"reason,omitempty"`
	Created  time.Time         `json:"created"`
	Deleting bool              `json:"deleting,omitempty"`  // deletion requested, waiting on the finalizer
	Guarded  bool              `json:"finalizer,omitempty"` // carries drainctl's finalizer
	Status   MaintenanceStatus `json:"status"`
}

// Maintenance phases.
const (
	MaintenanceRunning   = "Running"
	MaintenanceSucceeded = "Succeeded"
	MaintenanceFailed    = "Failed"
)

// MaintenanceStatus is what the controller reports on the resource. The pod fields are
// node-maintenance-operator's; the VM fields are drainctl's.
type MaintenanceStatus struct {
	Phase         string    `json:"phase,omitempty"`
	DrainProgress int       `json:"drainProgress"` // percent of the pods and VMs to move that have moved
	LastUpdate    time.Time `json:"lastUpdate,omitzero"`
	LastError     string    `json:"lastError,omitempty"`
	PendingPods   []string  `json:"pendingPods"`  // still to evict
	TotalPods     int       `json:"totalPods"`    // on the node when the maintenance began
	EvictionPods  int       `json:"evictionPods"` // to evict, counted when the maintenance began
	TotalVMs      int       `json:"totalVMs"`     // on the node's compute host when it began
	PendingVMs    []string  `json:"pendingVMs"`   // still to migrate
	MigratedVMs   int       `json:"migratedVMs"`
	// Conditions: Queued is True while the node waits for a node slot (concurrency.nodes),
	// cordoned with its nova-compute disabled.
	Conditions []MaintenanceCondition `json:"conditions,omitempty"`
}

// MaintenanceCondition is a condition of a NodeMaintenance, in Kubernetes' shape.
type MaintenanceCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"` // True, False
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// ConditionQueued is the condition of a NodeMaintenance waiting for a node slot.
const ConditionQueued = "Queued"

// SetCondition sets a condition, keeping its transition time when its status is unchanged.
func (s *MaintenanceStatus) SetCondition(c MaintenanceCondition) {
	for i, old := range s.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// Progress recomputes DrainProgress from the counts.
func (s *MaintenanceStatus) Progress() {
	total := s.EvictionPods + s.TotalVMs
	if total == 0 {
		s.DrainProgress = 100
		return
	}
	done := s.EvictionPods - len(s.PendingPods) + s.MigratedVMs
	s.DrainProgress = min(100, max(0, done*100/total))
}
