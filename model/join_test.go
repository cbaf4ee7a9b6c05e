package model

import (
	"testing"
	"time"
)

// Nova reports running_vms no more at the microversion drainctl reads (it decodes as 0):
// the join counts the host's servers, so that describe and -o json never say 0 VMs beside
// the host's ten.
func TestJoinCountsTheHostsServers(t *testing.T) {
	kube := KubeSnapshot{Nodes: []KubeNode{{Name: "compute-0", Ready: true}}, Pods: [][]Pod{nil}}
	nova := &NovaSnapshot{
		Services:    []ComputeService{{Host: "compute-0", Enabled: true, Up: true}},
		Hypervisors: []Hypervisor{{Host: "compute-0", Hostname: "compute-0", RunningVMs: 0}},
		VMs:         []VM{{ID: "a", Name: "a", Host: "compute-0"}, {ID: "b", Name: "b", Host: "compute-0"}, {ID: "c", Name: "c", Host: "compute-0"}},
	}
	inv := Join(kube, nova, NewHostMapper(MappingConfig{}), time.Now())
	n, ok := inv.Node("compute-0")
	if !ok || n.Hypervisor == nil || n.Hypervisor.RunningVMs != 3 {
		t.Fatalf("node %+v", n)
	}
	if nova.Hypervisors[0].RunningVMs != 0 {
		t.Error("the join wrote into the Nova snapshot, which other joins share")
	}
}
