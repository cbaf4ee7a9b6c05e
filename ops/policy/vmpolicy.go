package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
)

// FromConfig reads the configured policy (config.toml [policy] and [[drain.order]]): its
// switches, selectors and drain rules. The command line's overrides go on top.
func FromConfig(cfg model.Config) (Options, error) {
	c := cfg.Policy
	o := Options{
		IgnoreDaemonSets:   c.IgnoreDaemonSets,
		DeleteEmptyDirData: c.DeleteEmptyDirData,
		MoveStopped:        c.MoveStopped,
		RespectLocks:       c.RespectLocks,
		Maintenance:        c.Maintenance,
	}
	var err error
	if o.ProtectedPods, err = ParseSelectors("policy.protected_pods", c.ProtectedPods); err != nil {
		return o, err
	}
	if o.ProtectedNodes, err = ParseSelectors("policy.protected_nodes", c.ProtectedNodes); err != nil {
		return o, err
	}
	if c.HypervisorPods != "" {
		sel, err := ParseSelectors("policy.hypervisor_pods", []string{c.HypervisorPods})
		if err != nil {
			return o, err
		}
		o.HypervisorPods = sel[0]
	}
	o.DrainRules, err = ParseDrainRules(cfg.Drain)
	return o, err
}

// VMPolicyOf is the VM's own maintenance policy and where it comes from: its owner's metadata
// (drainctl:maintenance), else the operator's [policy.maintenance], else migrate (from "").
//
// The owner's word counts within the operator's bounds: metadata of a project [policy.
// maintenance] honour leaves out, or a value that is no policy, gives way to the operator's
// policy (where from says why); never a blocker a tenant can plant on the fleet.
func VMPolicyOf(vm model.VM, o Options) (model.VMPolicy, string) {
	asked := model.VMPolicy(vm.PolicyAsked)
	switch {
	case asked == "":
		return o.Maintenance.Of(vm)
	case !o.Maintenance.Honour.Of(vm):
		p, from := o.Maintenance.Of(vm)
		return p, fmt.Sprintf(
			"%s; its metadata %s = %s is not honoured for its project ([policy.maintenance] honour)",
			orDefault(from),
			model.VMPolicyKey,
			quoted(vm.PolicyAsked),
		)
	case !asked.Known():
		p, from := o.Maintenance.Of(vm)
		return p, fmt.Sprintf(
			"%s; its metadata %s = %s is none of %s",
			orDefault(from),
			model.VMPolicyKey,
			quoted(vm.PolicyAsked),
			model.VMPolicyNames(),
		)
	case asked == model.PolicyStays && staysExpired(vm, o):
		p, from := o.Maintenance.Of(vm)
		return p, fmt.Sprintf(
			"%s; its metadata %s = stays is older than [policy.maintenance] stays_for (%d days): the server was last changed %s",
			orDefault(from),
			model.VMPolicyKey,
			o.Maintenance.StaysFor,
			vm.Updated.UTC().Format(time.DateOnly),
		)
	}
	return asked, "its metadata " + model.VMPolicyKey
}

// staysExpired: an owner's stays is bounded by stays_for days from the server's last change
// (Nova's updated_at; setting the metadata is one), so one tenant cannot hold a host for ever.
func staysExpired(vm model.VM, o Options) bool {
	if o.Maintenance.StaysFor <= 0 || vm.Updated.IsZero() {
		return false
	}
	// drainctl's own notice to the owner (#57.3) changes the server too: set only on a VM
	// drainctl moves, it must not renew the stays it found expired. A change after it (a
	// minute for the clocks) is someone's.
	if n, ok := model.ParseOwnerNotice(vm.Notice); ok && !vm.Updated.After(n.Told.Add(time.Minute)) {
		return true
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	return now.Sub(vm.Updated) > time.Duration(o.Maintenance.StaysFor)*24*time.Hour
}

// quoted is a value a tenant chose, quoted and cut to a readable length.
func quoted(s string) string {
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return strconv.Quote(s)
}

// orDefault names where the operator's policy comes from ("" is the built-in default).
func orDefault(from string) string {
	if from == "" {
		return "the default"
	}
	return from
}

// asItsPolicy is a movable VM's move as its policy asks: migrate keeps the move its state
// chose; stop-start moves it cold (Nova stops it, moves it and starts it again); stays keeps
// it on the node, a blocker its owner's request names (--skip-vm leaves it knowingly);
// restart-in-place stops it on the node and starts it there when the node returns (moved as
// its state says when the node is removed); a policy that is none of them is a blocker that
// says so. A VM pinned to its host's hardware comes here too: restart-in-place needs no move.
func asItsPolicy(vm model.VM, o Options, method model.MoveMethod, r *model.Reason) (model.MoveMethod, *model.Reason) {
	p, from := VMPolicyOf(vm, o)
	block := func(code model.ReasonCode, format string, a ...any) (model.MoveMethod, *model.Reason) {
		return staysFor(vm, o, "the node", code, model.OverrideSkipVM, format, a...)
	}
	if p != model.PolicyMigrate && p != model.PolicyStopStart && o.OverridesPolicy(vm) && method != model.MoveStays {
		return method, &model.Reason{
			Code:     model.VMAsksToStay,
			Severity: model.Notes,
			Object:   vm.Name,
			ObjectID: vm.ID,
			By:       model.OverrideVMPolicy,
			Message:  fmt.Sprintf("moved %s although its policy is %q (%s), as the operator asked", method, string(p), from),
		}
	}
	switch p {
	case model.PolicyMigrate:
		if r == nil && vm.PolicyAsked != "" && !strings.HasPrefix(from, "its metadata") { // its owner's word set aside: said
			return method, &model.Reason{Code: model.VMPolicyUnknown, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
				Message: fmt.Sprintf("moved %s as the operator's policy says (%s)", method, from)}
		}
		return method, r
	case model.PolicyStopStart:
		if method == model.MoveCold && vm.Phase != model.PhaseRunning {
			return method, r // stopped already: a cold move is what it asks
		}
		if vm.Phase == model.PhasePaused { // Nova cold-migrates ACTIVE and stopped servers only
			return method, r
		}
		return model.MoveCold, &model.Reason{Code: model.Downtime, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
			Message: fmt.Sprintf("stop-start (%s): stopped, moved cold and started again rather than live-migrated (%s)", from, memory(vm))}
	case model.PolicyStays:
		return block(
			model.VMAsksToStay,
			"asks not to be moved (stays, %s): leave it on the node knowingly, or its owner changes the policy",
			from,
		)
	case model.PolicyRestartInPlace:
		switch {
		case o.NodeRemoved:
			if method == model.MoveStays { // pinned: its blocker stands
				return method, r
			}
			return method, &model.Reason{Code: model.Downtime, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
				Message: fmt.Sprintf("restart-in-place (%s), but the node is removed and will not return: moved %s instead", from, method)}
		case vm.Phase != model.PhaseRunning:
			return model.MoveRestart, &model.Reason{Code: model.VMAsksToStay, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
				Message: fmt.Sprintf(
					"restart-in-place (%s): %s already, left so on the node (not started when it returns)",
					from,
					vm.Status,
				)}
		}
		return model.MoveRestart, &model.Reason{Code: model.Downtime, Severity: model.Notes, Object: vm.Name, ObjectID: vm.ID,
			Message: fmt.Sprintf("restart-in-place (%s): stopped on the node before its step, started there when it returns", from)}
	}
	return block(
		model.VMPolicyUnknown,
		"its maintenance policy %q (%s) is none of %s: its owner sets one of them (openstack server set --property %s=migrate)",
		string(p),
		from,
		model.VMPolicyNames(),
		model.VMPolicyKey,
	)
}
