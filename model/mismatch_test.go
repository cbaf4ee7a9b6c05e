package model

import "testing"

// A node whose roles are all something else (storage) is no hypervisor: its missing
// nova-compute is no mismatch; a compute node's, or a worker's with no role, is.
func TestANodeOfAnotherRoleNeedsNoCompute(t *testing.T) {
	for _, tc := range []struct {
		roles []string
		want  bool
	}{{[]string{"storage"}, false}, {[]string{"control-plane"}, false}, {[]string{"compute"}, true}, {nil, true}} {
		n := Node{Name: "n", Host: "n", Kube: &KubeNode{Name: "n", Roles: tc.roles}}
		if got := len(n.Mismatches(true)) > 0; got != tc.want {
			t.Errorf("roles %v: a mismatch %v, want %v", tc.roles, got, tc.want)
		}
	}
}

// A failover reserve is disabled by design, schedulable unless reserve_cordon: no
// disagreement; one that runs VMs is told. Disabled by anyone else, a schedulable node is.
func TestAFailoverReserveIsNoDisagreementUnlessItRunsVMs(t *testing.T) {
	reserve := ComputeService{Host: "n", Up: true, DisabledReason: ReservePrefix + " (label x=true)"}
	n := Node{Name: "n", Host: "n", Kube: &KubeNode{Name: "n", Schedulable: true, Ready: true}, Compute: &reserve,
		Hypervisor: &Hypervisor{Host: "n"}}
	if got := n.Mismatches(true); len(got) != 0 {
		t.Errorf("an empty reserve: %+v, want none", got)
	}
	n.VMs = []VM{{Name: "a"}}
	if got := n.Mismatches(true); len(got) != 1 || got[0].Code != ReserveNotEmpty {
		t.Errorf("a reserve running a VM: %+v, want ReserveNotEmpty", got)
	}
	other := ComputeService{Host: "n", Up: true, DisabledReason: "DIMM errors"}
	n.Compute, n.VMs = &other, nil
	if got := n.Mismatches(true); len(got) != 1 || got[0].Code != DisabledButSchedulable {
		t.Errorf("disabled by another: %+v, want DisabledButSchedulable", got)
	}
}
