package auto

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
)

// Auto is a headless run of one verb.
type Auto struct {
	Engine   *ops.Engine
	Run      ops.RunOptions
	DryRun   bool
	JSON     bool
	Count    int              // recommend, scale-down: how many candidates (0: all; scale-down: 1)
	Pool     ops.MachinePool  // scale-down: the cloudpool, nil when none is configured
	Campaign campaign.Options // roll: the campaign's options (its nodes come from the arguments)
	Stdout   io.Writer
	Stderr   io.Writer
	// Observe sees every event of a campaign beside the printer ([notify]'s webhook); may be nil.
	Observe func(ops.Event)
	// Demo: the cluster is the demo's, which lives in this process only.
	Demo bool
}

// operate plans every target, refuses the whole batch if any plan is blocked (exit 3,
// nothing changed), then runs it: the engine's batch rules (concurrency.nodes) apply.
func (a *Auto) operate(ctx context.Context, op model.OpKind, targets []string) error {
	b, err := a.Engine.PlanBatch(ctx, op, targets, a.Run)
	if err != nil {
		return err
	}
	if err := skipsNameOneVM(a.Run.Policy.SkipVMs, b.Plans); err != nil {
		return err
	}
	if err := overridesNameAVM(a.Run.Policy, b.Plans); err != nil {
		return err
	}
	refusals := b.Blockers()
	if a.DryRun || len(refusals) > 0 {
		for _, p := range b.Plans {
			if a.JSON {
				a.printer(nil).Emit(ops.NewPlanReady(a.Engine.Now(), p))
			} else {
				WritePlan(a.Stdout, p)
			}
		}
		if len(refusals) > 0 {
			return &ops.RefusedError{Reasons: refusals}
		}
		return nil
	}
	pr := a.printer(a.Stderr)
	reports, err := a.Engine.RunBatch(ctx, b, func(model.Plan) func(ops.Event) { return pr.Emit })
	if err != nil {
		return err
	}
	for _, r := range reports { // done, but not empty: its own exit code
		if len(r.Left) > 0 {
			return &ops.NotEmptyError{Node: r.Node, Left: r.Left}
		}
	}
	return nil
}

func (a *Auto) printer(progress io.Writer) *Printer {
	if progress == nil {
		progress = io.Discard
	}
	var j io.Writer
	if a.JSON {
		j = a.Stdout
	}
	return NewPrinter(progress, j)
}

// doctor prints where Kubernetes and Nova disagree, one finding per line (-o json: one
// {"type":"finding"} object per line, then {"type":"summary"}); exit 0 when they agree, 5
// (Findings) when they do not.
func (a *Auto) doctor(ctx context.Context) error {
	inv, err := a.Engine.Inventory().Read(ctx)
	if err != nil {
		return err
	}
	found := policy.Findings(inv, a.Run.Policy)
	if a.JSON {
		for _, f := range found {
			if err := writeLine(a.Stdout, "finding", f); err != nil {
				return err
			}
		}
		if err := writeLine(a.Stdout, "summary", struct {
			Findings       int  `json:"findings"`
			NovaConfigured bool `json:"novaConfigured"`
		}{len(found), inv.NovaConfigured}); err != nil {
			return err
		}
	} else {
		if !inv.NovaConfigured {
			fmt.Fprintln(a.Stdout, "Nova is not configured: only Kubernetes was checked")
		}
		for _, f := range found {
			text.Fprintf(a.Stdout, "%s: %s\n", f.Code, f.Message)
		}
		if len(found) == 0 {
			fmt.Fprintln(a.Stdout, "Kubernetes and Nova agree")
		}
	}
	if len(found) > 0 {
		return &FindingsError{N: len(found)}
	}
	return nil
}

// FindingsError: doctor found disagreements (its own exit code, 5).
type FindingsError struct{ N int }

func (d *FindingsError) Error() string {
	return fmt.Sprintf("%d disagreement(s) between Kubernetes and Nova", d.N)
}

// recommend prints the scale-down victims, cheapest first, and every other node's reasons.
func (a *Auto) recommend(ctx context.Context) error {
	victims, _, err := a.Engine.Recommend(ctx, a.Run.Policy, true)
	if err != nil {
		return err
	}
	shown := victims[:0:0]
	n := 0
	for _, v := range victims {
		if v.Candidate {
			n++
			if a.Count > 0 && n > a.Count {
				continue
			}
		}
		shown = append(shown, v)
	}
	if a.JSON { // one victim per line, candidates first, cheapest first
		for _, v := range shown {
			if err := writeLine(a.Stdout, "victim", v); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tNODE\tCOST\tPODS\tVMS\tVM MEMORY\tCPU\tWHY NOT")
	for _, v := range shown {
		rank := "-"
		if v.Candidate {
			rank = fmt.Sprint(v.Rank)
		}
		why := ""
		if len(v.Reasons) > 0 {
			why = text.Reason(v.Reasons[0])
			if len(v.Reasons) > 1 {
				why += text.Sprintf(" (+%d more)", len(v.Reasons)-1)
			}
		}
		text.Fprintf(tw, "%s\t%s\t%.1f\t%d\t%d\t%s\t%.0f%%\t%s\n", rank, v.Node, v.Cost, v.Pods, v.VMs,
			text.Bytes(v.VMMemory<<20), v.CPUUtil*100, why)
	}
	return tw.Flush()
}

// scaleDown empties, deletes and (with a cloudpool) terminates the named nodes, or the
// top-ranked candidates (--count, default 1). Nodes go one after the other: each removal
// changes what the next one's pods and VMs can fit into.
func (a *Auto) scaleDown(ctx context.Context, nodes []string) error {
	if len(nodes) == 0 {
		victims, _, err := a.Engine.Recommend(ctx, a.Run.Policy, true)
		if err != nil {
			return err
		}
		want := max(1, a.Count)
		for _, v := range victims {
			if v.Candidate && len(nodes) < want {
				nodes = append(nodes, v.Node)
			}
		}
		if len(nodes) == 0 {
			var reasons []model.Reason
			for _, v := range victims {
				reasons = append(reasons, v.Reasons...)
			}
			if len(reasons) == 0 {
				return &ops.UsageError{Problem: "no node to scale down"}
			}
			return &ops.RefusedError{Reasons: reasons}
		}
	}
	pr := a.printer(a.Stderr)
	for _, n := range nodes {
		if _, err := a.Engine.ScaleDown(ctx, n, a.Run, a.Pool, pr.Emit); err != nil {
			return err
		}
	}
	return nil
}

// roll runs a rolling maintenance campaign over the nodes named or selected. --dry-run
// prints the campaign and each node's evacuation plan as it would be checked first.
func (a *Auto) roll(ctx context.Context, nodes []string) error {
	o := a.Campaign
	o.Nodes = nodes
	pr := a.printer(a.Stderr)
	emit := pr.Emit
	if a.Observe != nil {
		emit = func(ev ops.Event) { pr.Emit(ev); a.Observe(ev) }
	}
	r, err := campaign.New(ctx, a.Engine, o, emit)
	if err != nil {
		return err
	}
	c := r.Record()
	if err := a.vmFlagsNameVMsOf(ctx, c.Nodes); err != nil {
		return err
	}
	done, _, _ := c.Count()
	verb := "starting"
	if done > 0 || c.State != "" {
		verb = "resuming"
	}
	record := text.Sprintf("recorded in configmap drainctl/drainctl-campaign-%s", c.Name)
	if a.DryRun {
		verb, record = "dry run", "nothing recorded, nothing changed"
	}
	text.Fprintf(a.Stderr, "campaign %s: %s, %d node(s), %d done, parallel %d; %s\n",
		c.Name, verb, len(c.Nodes), done, c.Parallel, record)
	f := r.Forecast()
	text.Fprintf(a.Stderr, "campaign %s: %s\n", c.Name, text.Forecast(f))
	if a.DryRun && a.JSON { // -o json: one object a line, the forecast then each node
		if err := a.dryRunJSON(c, f, r.Skipped()); err != nil {
			return err
		}
		return r.Refusal(ctx)
	}
	if a.DryRun {
		per := map[string]model.NodeForecast{}
		for _, nf := range f.Nodes {
			per[nf.Node] = nf
		}
		for _, n := range c.Nodes {
			nf, ok := per[n.Name]
			if !ok {
				text.Fprintf(a.Stdout, "%s: %s\n", n.Name, n.Phase)
				continue
			}
			line := text.Sprintf("%s: %s, %s", n.Name, n.Phase, text.NodeForecast(nf))
			if len(nf.Blockers) > 0 {
				line += text.Sprintf("; refused by %d blocker(s):", len(nf.Blockers))
			}
			text.Fprintf(a.Stdout, "%s\n", line)
			for _, b := range nf.Blockers { // its check would refuse it: every blocker, each on its own line
				text.Fprintf(a.Stdout, "  blocks %s\n", text.Reason(b))
			}
			for _, l := range nf.Losses { // what its evacuation would lose for good, as a plan says it
				text.Fprintf(a.Stdout, "  LOST FOR GOOD %s\n", text.Reason(l))
			}
			for _, x := range nf.VMNotes { // each VM's lock and own policy, as a plan says them
				text.Fprintf(a.Stdout, "  notes  %s\n", text.Reason(x))
			}
			if nf.OwnersWindow != "" { // taken after the others, when both windows open
				text.Fprintf(a.Stdout, "  held by its owners' window until %s, taken after the other nodes: %s\n",
					nf.OwnersWindowUntil.UTC().Format(time.RFC3339), nf.OwnersWindow)
			}
		}
		if skipped := r.Skipped(); len(skipped) > 0 {
			names := make([]string, len(skipped))
			for i, s := range skipped {
				names[i] = s.Node
				if len(s.HeldByOwners) > 0 {
					text.Fprintf(a.Stdout, "would skip %s, %s: %s\n", s.Node, model.HeldByOwners, strings.Join(s.HeldByOwners, ", "))
				} else {
					text.Fprintf(a.Stdout, "would skip %s (--on-failure skip): refused at its check, left untouched\n", s.Node)
				}
			}
			if err := r.Refusal(ctx); err != nil {
				return err
			}
			// As the run would end: exit 1, the nodes it would not work named.
			return fmt.Errorf(
				"campaign %s would leave %d node(s) untouched (refused at their check): %s",
				c.Name,
				len(names),
				strings.Join(names, ", "),
			)
		}
		return r.Refusal(ctx) // a node refused, or below the headroom: exit 3, the nodes named

	}
	err = r.Run(ctx)
	if said := text.ForecastError(r.Record()); said != "" {
		text.Fprintf(a.Stderr, "campaign %s: against its forecast: %s\n", c.Name, said)
	}
	if o.ReturnVMs {
		a.sayReturns(r.Record())
	}
	return err
}

// dryRunJSON is a campaign's dry run as -o json: {"type":"forecast"} (the whole forecast),
// then {"type":"node"} a node (its phase, its forecast, what would refuse it, whether
// --on-failure skip would skip it).
func (a *Auto) dryRunJSON(c model.Campaign, f model.Forecast, skipped []model.NodeForecast) error {
	if err := writeLine(a.Stdout, "forecast", struct {
		Campaign string `json:"campaign"`
		model.Forecast
	}{c.Name, f}); err != nil {
		return err
	}
	per := map[string]model.NodeForecast{}
	for _, nf := range f.Nodes {
		per[nf.Node] = nf
	}
	for _, n := range c.Nodes {
		nf := per[n.Name]
		nf.Node = n.Name
		line := struct {
			Phase string `json:"phase"`
			model.NodeForecast
			WouldSkip bool `json:"wouldSkip,omitempty"`
		}{Phase: string(n.Phase), NodeForecast: nf, WouldSkip: slices.ContainsFunc(skipped,
			func(s model.NodeForecast) bool { return s.Node == n.Name })}
		if err := writeLine(a.Stdout, "node", line); err != nil {
			return err
		}
	}
	return nil
}

// sayReturns sums up --return-vms: how many VMs are home again, and each that is not, why.
func (a *Auto) sayReturns(c model.Campaign) {
	var all []model.VMReturn
	for _, n := range c.Nodes {
		all = append(all, n.Returns...)
	}
	home, not, pending := model.ReturnsDone(all)
	text.Fprintf(a.Stderr, "campaign %s: %d of %d VM(s) that left their node home again", c.Name, home, len(all))
	if pending > 0 {
		text.Fprintf(a.Stderr, ", %d not tried yet (the campaign stopped first; its rerun tries them)", pending)
	}
	text.Fprintf(a.Stderr, "\n")
	if not == 0 {
		return
	}
	for _, n := range c.Nodes {
		for _, r := range n.Returns {
			if !r.Home && !r.Pending {
				text.Fprintf(a.Stderr, "  %s (%s) not brought home to %s: %s\n", r.Name, r.ID, n.Name, r.Why)
			}
		}
	}
}

// vmFlagsNameVMsOf refuses a campaign's --skip-vm or --override-vm-policy that names no VM on
// its nodes, as an evacuation's does (one read of the cloud, only when one is given).
func (a *Auto) vmFlagsNameVMsOf(ctx context.Context, nodes []model.CampaignNode) error {
	pol := a.Run.Policy
	if len(pol.SkipVMs) == 0 && len(pol.OverrideVMPolicies) == 0 {
		return nil
	}
	inv, err := a.Engine.Inventory().Read(ctx)
	if err != nil {
		return err
	}
	var plans []model.Plan
	for _, cn := range nodes {
		if n, ok := inv.Node(cn.Name); ok {
			plans = append(plans, model.Plan{Node: cn.Name, VMs: n.VMs})
		}
	}
	if err := skipsNameOneVM(pol.SkipVMs, plans); err != nil {
		return err
	}
	return overridesNameAVM(pol, plans)
}

// overridesNameAVM refuses an --override-vm-policy that names no VM of the targets: a typo
// would leave the override unused and the run refused for what it was meant to lift (or a
// campaign's later node moved by an override meant for another).
func overridesNameAVM(o policy.Options, plans []model.Plan) error {
	for _, s := range o.OverrideVMPolicies {
		if !slices.ContainsFunc(plans, func(p model.Plan) bool {
			return slices.ContainsFunc(p.VMs, func(vm model.VM) bool { return o.OverrideNames(s, vm) })
		}) {
			return &ops.UsageError{Problem: text.Sprintf("--override-vm-policy %s names no VM of the targets", text.ShellWord(s)),
				Hint: "name a VM (its name or ID), project=ID or policy=stays"}
		}
	}
	return nil
}

// skipsNameOneVM refuses a --skip-vm that names no VM of the targets (a typo would leave the
// VM meant to stay to be moved, or in a recovery rebuilt from its image) or several (a
// name is its owner's choice and need not be unique: the ID says which).
func skipsNameOneVM(skips []string, plans []model.Plan) error {
	for _, s := range skips {
		var hits []model.VM
		for _, p := range plans {
			for _, vm := range p.VMs {
				if vm.Name == s || vm.ID == s {
					hits = append(hits, vm)
				}
			}
		}
		switch {
		case len(hits) == 0:
			var names []string
			for _, p := range plans {
				for _, vm := range p.VMs {
					names = append(names, vm.Name)
				}
			}
			hint := "the targets carry no VM"
			if len(names) > 0 {
				hint = "their VMs: " + strings.Join(names, ", ")
			}
			return &ops.UsageError{
				Problem: text.Sprintf("--skip-vm %s names no VM of the targets", text.ShellWord(s)),
				Hint:    text.Sprintf("%s", hint),
			}
		case len(hits) > 1:
			ids := make([]string, len(hits))
			for i, vm := range hits {
				ids[i] = "--skip-vm " + vm.ID
			}
			return &ops.UsageError{Problem: text.Sprintf("--skip-vm %s names %d VMs", text.ShellWord(s), len(hits)),
				Hint: text.Sprintf("name the one meant by its ID: %s", strings.Join(ids, " or "))}
		}
	}
	return nil
}
