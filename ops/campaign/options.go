package campaign

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/opcmd"
)

// Options say which nodes a campaign works and how.
type Options struct {
	Name     string   // the record's name; "" derives one from the selector or the nodes
	Selector string   // label selector of the nodes (or Nodes)
	Nodes    []string // in this order
	Parallel int      // nodes worked at once (default 1)
	// ParallelPercent, when set, is Parallel as a share of the campaign's nodes (10: 10 %,
	// at least one).
	ParallelPercent int
	// SpreadBy is a node label (a zone, a rack): never two nodes of one value in flight, and
	// the order walks the values round-robin so one domain is not emptied before the next.
	SpreadBy string
	// Order: "name" (a selector's default), "given" (named nodes' default) or "cost" (the
	// ranking's cheapest first, so the fleet has the most room when the dear ones go).
	Order string
	// Gates must hold before each node starts (gates.go).
	Gates     GateOptions
	Exec      string // a shell command run on each emptied node; {node} is its name
	WaitReady bool   // wait for the node to reboot (NotReady or a new boot ID) and come back
	OnFailure string // "stop" (default): stop at the failed node; "skip": roll it back, go on
	// NodeDeadline bounds a node's drain (default 30 min, AKS's); past it, Undrainable:
	// "quarantine" (default: roll it back, label it drainctl.io/quarantined, go on),
	// "rollback" (roll it back and stop) or "fail" (stop, the node left as it is).
	NodeDeadline time.Duration
	Undrainable  string
	Run          ops.RunOptions
	// VerifyWithin bounds how long a returned node may take to take work again (default 5 min).
	VerifyWithin time.Duration
	// Resume: resume an unfinished record older than [roll] resume_within.
	Resume bool
	// ReturnVMs: once a node is back and verified, the VMs that left it are brought home in
	// the background (the next node does not wait), each recorded home again or why not.
	ReturnVMs bool
}

// Configured lays the configuration's [roll] under o: each key fills what the command line
// (roll's flags, bound into o) left unset. The TUI's campaigns and roll's alike take it.
func Configured(o Options, roll model.CampaignConfig) (Options, error) {
	if o.NodeDeadline == 0 {
		o.NodeDeadline = roll.NodeDeadline.D()
	}
	o.Undrainable = cmp.Or(o.Undrainable, roll.Undrainable)
	if o.Gates.PDBBlockedFor == 0 {
		o.Gates.PDBBlockedFor = roll.PDBBlockedFor.D()
	}
	if o.Gates.Budgets == nil {
		for _, raw := range roll.Budget {
			b, err := model.ParseRateBudget(raw)
			if err != nil {
				return o, &ops.UsageError{Problem: "config: roll.budget: " + err.Error()}
			}
			o.Gates.Budgets = append(o.Gates.Budgets, b)
		}
	}
	if o.Gates.Window == nil && roll.Window != "" {
		w, err := ParseWindow(roll.Window)
		if err != nil {
			var bad *ops.UsageError
			errors.As(err, &bad)
			return o, &ops.UsageError{Problem: "config: roll.window: " + bad.Problem, Hint: bad.Hint}
		}
		o.Gates.Window = w
	}
	return o, nil
}

// withDefaults fills the options left unset and refuses the ones no campaign can take.
func withDefaults(o Options) (Options, error) {
	if o.Parallel < 1 {
		o.Parallel = 1
	}
	if o.OnFailure == "" {
		o.OnFailure = "stop"
	}
	if o.OnFailure != "stop" && o.OnFailure != "skip" {
		return o, &ops.UsageError{Option: ops.OptOnFailure, Problem: fmt.Sprintf("%q", o.OnFailure), Hint: `use "stop" or "skip"`}
	}
	if o.VerifyWithin <= 0 {
		o.VerifyWithin = 5 * time.Minute
	}
	o.Run.ByHost = true // many plans a minute: each reads its own node's host, not the cloud
	if o.NodeDeadline <= 0 {
		o.NodeDeadline = 30 * time.Minute
	}
	switch o.Undrainable {
	case "":
		o.Undrainable = Quarantine
	case Quarantine, "rollback", "fail":
	default:
		return o, &ops.UsageError{
			Option:  ops.OptUndrainable,
			Problem: fmt.Sprintf("%q", o.Undrainable),
			Hint:    `use "quarantine", "rollback" or "fail"`,
		}
	}
	if err := opcmd.Validate(o.Exec); err != nil {
		return o, &ops.UsageError{
			Option:  ops.OptExec,
			Problem: "(the command run on each emptied node): " + err.Error(),
			Hint:    "e.g. ssh -- {node} sudo reboot",
		}
	}
	return o, nil
}
