package ops

import (
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
)

// QuarantineRoom says what taking node out of service with its VMs on it would do to the room
// for the next host failure (policy.FailoverQuarantineReason): nil when it holds.
func (e *Engine) QuarantineRoom(inv model.Inventory, node string, o policy.Options) *model.Reason {
	return policy.FailoverQuarantineReason(node, inv, e.cpuRatio(), e.cfg.Capacity.Need(), o)
}

// FailoverRoom is the room for the next host failure in each zone as inv shows it
// ([capacity]: model.FailoverRooms, counted from Placement): nil when nothing is asked. A
// plan that would take it below what is asked is refused (policy.FailoverReason); the views
// show it as it stands.
func (e *Engine) FailoverRoom(inv model.Inventory) []model.ZoneRoom {
	need := e.cfg.Capacity.Need()
	if !need.On() {
		return nil
	}
	return model.FailoverRooms(policy.FailoverHosts(inv, nil, e.cpuRatio()), need)
}
