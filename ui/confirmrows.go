package ui

import (
	"slices"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
)

// confirmRow is what the confirm pane offers for one kind of operation: the keys beside y
// (the overrides that apply to it) and what it says of a refused plan (nil: every
// override's key, the general hint). A new operation is a row here.
type confirmRow struct {
	keys    func(c confirmKit) []action
	refused func(pd *pending) string
}

// confirmKit is what a row builds its keys from: the plan, y, back, and every toggle.
type confirmKit struct {
	pd                                                        *pending
	keys                                                      *KeyMap
	confirm, back                                             action
	force, emptyDir, eviction, lastNode, cold, skip, override action
	runToggle                                                 func(Binding, func(*ops.RunOptions)) action
	toggle                                                    func(Binding, func(*policy.Options)) action
}

// hidden: shown in the help, not in the footer.
func hidden(as ...action) []action {
	for i := range as {
		as[i].hidden = true
	}
	return as
}

var confirmRows = map[model.OpKind]confirmRow{
	model.OpMigrate: {keys: func(c confirmKit) []action {
		target := action{key: c.keys.Target, do: func() intent { return pickTarget{c.pd} }}
		return append([]action{c.confirm, target, c.back}, hidden(c.force, c.emptyDir, c.eviction, c.lastNode, c.cold)...)
	}},
	model.OpRecover: {keys: func(c confirmKit) []action {
		fenced := c.runToggle(c.keys.ToggleFenced, func(ro *ops.RunOptions) { ro.ConfirmFenced = !ro.ConfirmFenced })
		diskLoss := c.toggle(c.keys.ToggleDiskLoss, func(o *policy.Options) { o.AcceptDiskLoss = !o.AcceptDiskLoss })
		out := append([]action{c.confirm, fenced, diskLoss, c.force, c.back}, hidden(c.emptyDir, c.eviction, c.lastNode, c.cold, c.skip)...)
		if skips(c.pd) {
			out = append(out, c.skip)
		}
		return out
	}, refused: func(pd *pending) string {
		keys := "K: your word that the machine is off; A: accept the disks lost"
		if skips(pd) {
			keys += "; S: leave the VMs that block"
		}
		return "Refused until every blocker is resolved (" + keys + "; y judges it again)."
	}},
	model.OpEvacuate: {keys: func(c confirmKit) []action {
		out := []action{c.confirm, c.force, c.emptyDir, c.eviction, c.lastNode}
		if skips(c.pd) {
			out = append(out, c.skip)
		}
		if len(c.pd.ro.Policy.OverrideVMPolicies) > 0 || len(policyBlockers(c.pd)) > 0 {
			out = append(out, c.override)
		}
		return append(append(out, c.back), hidden(c.cold)...)
	}},
	// --force changes nothing of a cordon: not offered.
	model.OpCordon: {keys: func(c confirmKit) []action { return []action{c.confirm, c.lastNode, c.back} },
		refused: func(*pending) string {
			return "Refused until every blocker is resolved (L allows the last schedulable node; y judges it again)."
		}},
	// --force re-enables a service someone else disabled.
	model.OpUncordon: {keys: func(c confirmKit) []action {
		home := c.runToggle(c.keys.ToggleReturnVMs, func(ro *ops.RunOptions) { ro.ReturnVMs = !ro.ReturnVMs })
		return []action{c.confirm, c.force, home, c.back}
	}},
	model.OpRollback: {keys: func(c confirmKit) []action { return []action{c.confirm, c.force, c.back} }},
}

// confirmPlain is an operation with nothing to override (abort).
var confirmPlain = confirmRow{keys: func(c confirmKit) []action { return []action{c.confirm, c.back} }}

// leaveBlocking is S: the VMs left already and each VM that blocks now (by ID, as --skip-vm),
// whatever override its blocker names; with none blocking, none (S again clears them).
func leaveBlocking(left []string, blockers []model.Reason) []string {
	var blocking []string
	for _, r := range blockers {
		id := r.ObjectID // a VM's blocker names its ID
		if id == "" && r.Override == model.OverrideSkipVM {
			id = r.Object
		}
		if id != "" && !slices.Contains(left, id) && !slices.Contains(blocking, id) {
			blocking = append(blocking, id)
		}
	}
	if len(blocking) == 0 {
		return nil
	}
	return append(slices.Clone(left), blocking...)
}
