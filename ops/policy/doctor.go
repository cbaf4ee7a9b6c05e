package policy

import (
	"fmt"

	"github.com/drainctl/drainctl/model"
)

// Finding is one thing doctor reports: where Kubernetes and Nova disagree, or a move left
// half done.
type Finding struct {
	Code    string `json:"code"`
	Object  string `json:"object"` // the node, VM or migration it is about
	Message string `json:"message"`
}

// Findings is everything doctor reports of the inventory: each node's disagreements (the
// rule every view applies), a forced-down nova-compute, a VM waiting in VERIFY_RESIZE, a
// stuck migration, and a VM on a host no node or service matches.
func Findings(inv model.Inventory, o Options) []Finding {
	var found []Finding
	for _, n := range inv.Nodes {
		for _, m := range Disagreements(n, inv, o) {
			found = append(found, Finding{string(m.Code), n.Name, m.Message})
		}
		if n.Compute != nil && n.Compute.ForcedDown {
			found = append(found, Finding{"ComputeForcedDown", n.Host,
				fmt.Sprintf(
					"nova-compute on %s is forced down: nothing is scheduled there until it is forced up (openstack "+
						"compute service set --up)",
					n.Host,
				)})
		}
		for _, vm := range n.VMs {
			if vm.Phase == model.PhaseAwaitingConfirm {
				found = append(found, Finding{"VMAwaitsConfirm", vm.Name,
					fmt.Sprintf(
						"VM %s (%s) on %s waits in VERIFY_RESIZE: its source still holds its resources until the move is "+
							"confirmed or reverted",
						vm.Name,
						vm.ShortID(),
						vm.Host,
					)})
			}
		}
		for _, m := range n.Migrations {
			if m.SourceCompute == n.Host && m.Stuck(inv.At) {
				found = append(found, Finding{"MigrationStuck", m.InstanceID,
					fmt.Sprintf("migration %d of %s has been %s since %s", m.ID, m.InstanceID, m.Status, m.UpdatedAt.Format("15:04:05"))})
			}
		}
	}
	for _, vm := range inv.UnplacedVMs {
		found = append(found, Finding{"VMOnUnknownHost", vm.Name,
			fmt.Sprintf(
				"VM %s (%s) is on host \"%s\", which no Kubernetes node or compute service matches",
				vm.Name,
				vm.ShortID(),
				vm.Host,
			)})
	}
	return found
}
