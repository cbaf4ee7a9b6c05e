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
