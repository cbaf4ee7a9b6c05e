package model

import (
	"strings"
	"time"
)

// Resources is an amount of schedulable capacity in Kubernetes units.
type Resources struct {
	MilliCPU    int64 `json:"milliCPU"`
	MemoryBytes int64 `json:"memoryBytes"`
	Pods        int64 `json:"pods"`
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{r.MilliCPU + o.MilliCPU, r.MemoryBytes + o.MemoryBytes, r.Pods + o.Pods}
}

// Taint is a Kubernetes node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// KubeNode is the Kubernetes half of a node.
type KubeNode struct {
	Name       string    `json:"name"`
	UID        string    `json:"uid"`
	ProviderID string    `json:"providerID,omitempty"`
	Roles      []string  `json:"roles,omitempty"`
	Ready      bool      `json:"ready"`
	ReadySince time.Time `json:"readySince,omitempty"` // when Ready last changed (its condition's lastTransitionTime)
	// Heartbeat is its kubelet Lease's renewTime (kube-node-lease) where it was read: a read
	// from the API server for a destructive step, automatic recovery's watch; zero from the
	// cache, or with no Lease.
	Heartbeat   time.Time         `json:"heartbeat,omitempty"`
	BootID      string            `json:"bootID,omitempty"`     // changes when the machine reboots
	SystemUUID  string            `json:"systemUUID,omitempty"` // the machine's, as its firmware reports it
	Schedulable bool              `json:"schedulable"`
	Taints      []Taint           `json:"taints,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Allocatable Resources         `json:"allocatable"`
	Created     time.Time         `json:"created"`
	// Conditions are the types of its conditions whose status is True, Ready aside
	// (node-problem-detector's KernelDeadlock; MemoryPressure): [proactive]'s triggers.
	Conditions []string `json:"conditions,omitempty"`
}

// Outage names the node's current outage, the same for every reader that read its Lease: its
// kubelet's last renewal where it has one (a dead machine's stays put; one Ready still by its
// condition is in the same outage once it is NotReady), else when its Ready condition last
// changed. Records of an outage ("the recovery of this outage") compare it.
func (n KubeNode) Outage() time.Time {
	if !n.Heartbeat.IsZero() {
		return n.Heartbeat
	}
	return n.ReadySince
}

// SameOutage reports whether two names of an outage (KubeNode.Outage) name the same one: to
// the second, as the API keeps a condition's transition time (a copy that went through it
// has lost what one that did not still holds).
func SameOutage(a, b time.Time) bool { return a.Truncate(time.Second).Equal(b.Truncate(time.Second)) }

// IsControlPlane reports whether the node carries a control-plane role.
func (n KubeNode) IsControlPlane() bool {
	for _, r := range n.Roles {
		if r == "control-plane" || r == "master" {
			return true
		}
	}
	return false
}

// ComputeService is a nova-compute service as Nova reports it.
type ComputeService struct {
	ID             string    `json:"id"`
	Host           string    `json:"host"`
	Zone           string    `json:"zone,omitempty"`
	Enabled        bool      `json:"enabled"`
	DisabledReason string    `json:"disabledReason,omitempty"`
	Up             bool      `json:"up"`
	ForcedDown     bool      `json:"forcedDown"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// Silent is how long it had not reported when Nova was read: Nova's own clock (its API's
	// Date less updated_at), no other machine's.
	Silent time.Duration `json:"silent,omitempty"`
}

// Running says the service reports and is not forced down: its host may run VMs.
func (s ComputeService) Running() bool { return s.Up && !s.ForcedDown }

// TakesVMs says Nova may schedule VMs to the host: its service enabled and running.
func (s ComputeService) TakesVMs() bool { return s.Enabled && s.Running() }

// ReservePrefix begins the disabled_reason of a failover reserve's nova-compute ([recover]
// reserve_label): disabled so that nothing but a recovery lands there.
const ReservePrefix = "drainctl: failover reserve"

// Reserved says the host is held as a failover reserve: its service disabled with the
// reserve's reason and running. A recovery enables it and rebuilds there; the failover room
// counts its room, no move or boot may take it.
func (s ComputeService) Reserved() bool {
	return !s.Enabled && s.Running() && strings.HasPrefix(s.DisabledReason, ReservePrefix)
}

// Hypervisor is a Nova compute node (the capacity side of a compute host).
type Hypervisor struct {
	ID       string `json:"id"`
	Hostname string `json:"hypervisorHostname"` // the compute node name, often an FQDN
	Host     string `json:"host"`               // the service host; the join key
	Type     string `json:"type,omitempty"`
	State    string `json:"state,omitempty"`
	Status   string `json:"status,omitempty"`
	// CapacityKnown is false when the microversion no longer reports capacity (2.88+).
	CapacityKnown bool  `json:"capacityKnown"`
	VCPUs         int   `json:"vcpus"`
	VCPUsUsed     int   `json:"vcpusUsed"`
	MemoryMB      int64 `json:"memoryMB"`
	MemoryMBUsed  int64 `json:"memoryMBUsed"`
	LocalGB       int64 `json:"localGB"`
	LocalGBUsed   int64 `json:"localGBUsed"`
	RunningVMs    int   `json:"runningVMs"`
	// ServerIDs are the instances Nova places on this hypervisor (with_servers).
	ServerIDs []string `json:"serverIDs,omitempty"`
	// Capacity is the host's room as Nova's scheduler sees it: from Placement when it
	// answers, else from the figures above (os-hypervisors, up to microversion 2.87).
	Capacity *Capacity `json:"capacity,omitempty"`
}

// Where capacity figures come from.
const (
	CapacityPlacement   = "placement"
	CapacityHypervisors = "hypervisors"
)

// Capacity is a host's vCPU, RAM and disk: capacity and use, as the scheduler counts them.
type Capacity struct {
	Source   string   `json:"source"`
	VCPU     Resource `json:"vcpu"`
	MemoryMB Resource `json:"memoryMB"`
	DiskGB   Resource `json:"diskGB"`
}

// Resource is one resource class of a host: Placement's inventory and usage.
type Resource struct {
	Total           int64   `json:"total"`
	Reserved        int64   `json:"reserved"`
	AllocationRatio float64 `json:"allocationRatio"`
	Capacity        float64 `json:"capacity"` // (total - reserved) × allocation ratio
	Used            int64   `json:"used"`
}

// NewResource computes the capacity the scheduler allows: (total − reserved) × ratio.
func NewResource(total, reserved int64, ratio float64, used int64) Resource {
	return Resource{Total: total, Reserved: reserved, AllocationRatio: ratio, Capacity: float64(total-reserved) * ratio, Used: used}
}

// Free is what is left to allocate.
func (r Resource) Free() float64 { return r.Capacity - float64(r.Used) }

// Room is the host's capacity: Placement's when read, else derived from the os-hypervisors
// figures with the configured vCPU allocation ratio; false when neither is known.
func (h Hypervisor) Room(cpuRatio float64) (Capacity, bool) {
	if h.Capacity != nil {
		return *h.Capacity, true
	}
	if !h.CapacityKnown {
		return Capacity{}, false
	}
	return Capacity{Source: CapacityHypervisors,
		VCPU:     NewResource(int64(h.VCPUs), 0, cpuRatio, int64(h.VCPUsUsed)),
		MemoryMB: NewResource(h.MemoryMB, 0, 1, h.MemoryMBUsed),
		DiskGB:   NewResource(h.LocalGB, 0, 1, h.LocalGBUsed)}, true
}

// HasTaint reports whether the node carries a taint with this key.
func (n KubeNode) HasTaint(key string) bool {
	for _, t := range n.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
