package auto

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/text"
	"github.com/drainctl/drainctl/ui/flagrow"
)

// verbTable is --auto's table: each verb's usage lines, its flags and what it does. Its
// dispatch (Do), its usage text (drainctl --help), the verbs a usage error names and the
// shell completion are all read from it. (A function, not a variable: plan runs Do, which
// reads the table.)

func verbTable() []verb {
	return []verb{
		{name: "list", do: (*Auto).list,
			usage: `  list                 nodes with their hypervisor, VMs and pods (-o json for JSON)`},
		{name: "plan", do: (*Auto).plan,
			usage: `  plan VERB ARGS       what VERB would do: steps and blockers (same as --dry-run)`},
		{name: "cordon", do: operation(model.OpCordon),
			usage: `  cordon NODE...       unschedulable + maintenance taint, nova-compute disabled`},
		{name: "evacuate", do: operation(model.OpEvacuate),
			usage: `  evacuate NODE...     cordon, live-migrate every VM away, evict every pod, verify`},
		{name: "migrate", do: operation(model.OpMigrate),
			usage: `  migrate VM... [--to HOST]   live-migrate VMs (the scheduler picks unless --to)`},
		{name: "uncordon", do: operation(model.OpUncordon),
			usage: `  uncordon NODE...     re-enable nova-compute (if drainctl disabled it), schedulable again`},
		{name: "abort", do: operation(model.OpAbort),
			usage: `  abort NODE           stop the operation on NODE, abort its migrations in progress`},
		{name: "rollback", do: operation(model.OpRollback),
			usage: `  rollback NODE        abort, then put NODE back as it was before`},
		{name: "recover", do: operation(model.OpRecover), flags: recoverFlags, flagsTitle: "Recovery flags (recover)",
			usage: `  recover NODE         a dead host: fence it, cordon, force nova-compute down, taint it
                       out-of-service, rebuild its VMs elsewhere (Nova's evacuate), wait
                       until its pods are gone; uncordon brings it back once it runs again`},
		{name: "doctor", do: func(a *Auto, ctx context.Context, _ []string) error { return a.doctor(ctx) },
			usage: `  doctor               where Kubernetes and Nova disagree (exit 0 when they agree)`},
		{name: "recommend", do: func(a *Auto, ctx context.Context, _ []string) error { return a.recommend(ctx) },
			usage: `  recommend [--count N]   scale-down victims across both layers, cheapest first, and why
                       every other node cannot go`},
		{name: "scale-down", do: (*Auto).scaleDown,
			usage: `  scale-down [NODE... | --count N]   evacuate, delete the Node and (with [cloudpool] url)
                       terminate its machine; without NODE the top-ranked candidates`},
		{name: "roll", do: (*Auto).roll, flags: rollFlags, flagsTitle: "Campaign flags (roll)",
			usage: `  roll NODE... | --selector L=V   rolling maintenance, one campaign: for each node, check
                       the rest can absorb it, evacuate, run the step, uncordon, verify it
                       takes work again; recorded on the cluster, a rerun resumes`},
		{name: "recoveries", do: (*Auto).recoveries,
			usage: `  recoveries           the recoveries recorded on the cluster, each with its ledger of VM moves`},
		{name: "pause-recovery", do: func(a *Auto, ctx context.Context, _ []string) error { return a.pauseRecovery(ctx) },
			usage: `  pause-recovery [--reason TEXT]   hold every automatic recovery, cluster-wide, until resume-recovery`},
		{name: "resume-recovery", do: func(a *Auto, ctx context.Context, _ []string) error { return a.resumeRecovery(ctx) },
			usage: `  resume-recovery      lift the pause: automatic recovery takes dead nodes up again`},
		{name: "campaigns", do: func(a *Auto, ctx context.Context, _ []string) error { return a.campaigns(ctx) },
			usage: `  campaigns            the campaigns recorded on the cluster: each one's state and nodes`},
	}
}

type verb struct {
	name  string
	usage string // its lines of drainctl --help's "Verbs (--auto)"
	do    func(a *Auto, ctx context.Context, args []string) error
	// flags are its own: they belong to it (and to the verbs a row adds), go into Params, and
	// are listed under flagsTitle in --help.
	flags      []flagrow.Row[Params]
	flagsTitle string
}

// Params are what the verbs' own flags set, by verb: a verb's new flag is a row on its verb
// and a field here.
type Params struct {
	ReturnVMs bool // roll, uncordon: bring the VMs home
	// OwnerLead caps [notify] owner_lead for the run (roll, evacuate), when given.
	OwnerLead time.Duration
	Recover   RecoverParams
	Roll      RollParams
}

// RecoverParams are recover's: how the dead machine is proven off; AcceptDiskLoss lets it
// rebuild VMs whose local disk stays on the dead machine.
type RecoverParams struct {
	FenceCmd       string
	ConfirmFenced  bool
	AcceptDiskLoss bool
}

// RollParams are roll's: its flags write straight into the campaign's own options (as
// kubectl's drain flags write into its Helper), the configuration's [roll] laid under them
// by campaign.Configured; the Prometheus gate's flags make the alerts gate once connected.
type RollParams struct {
	campaign.Options
	GatePrometheus, GateAlerts        string
	GatePromTokenFile, GatePromCAFile string
}

// VerbFlags are every verb's own flags, each belonging to its verb (and the verbs it adds),
// listed in its verb's section.
func VerbFlags() []flagrow.Row[Params] {
	var out []flagrow.Row[Params]
	for _, v := range verbTable() {
		for _, f := range v.flags {
			f.Verbs = append([]string{v.name}, f.Verbs...)
			f.Section = v.name
			out = append(out, f)
		}
	}
	return out
}

// VerbFlagUsage is each verb's own flags as --help lists them: its title, then its lines.
func VerbFlagUsage() string {
	var b strings.Builder
	for _, v := range verbTable() {
		if len(v.flags) > 0 {
			b.WriteString(v.flagsTitle + ":\n" + flagrow.Usage(VerbFlags(), v.name) + "\n")
		}
	}
	return b.String()
}

// Verbs lists the verbs --auto knows ("list, plan, …"), for usage errors and the shell completion.
func Verbs() string {
	table := verbTable()
	names := make([]string, len(table))
	for i, v := range table {
		names[i] = v.name
	}
	return strings.Join(names, ", ")
}

// VerbUsage is every verb's usage lines, for drainctl --help.
func VerbUsage() string {
	table := verbTable()
	lines := make([]string, len(table))
	for i, v := range table {
		lines[i] = v.usage
	}
	return strings.Join(lines, "\n") + "\n"
}

// VerbHelp is one verb's usage lines and the flags that belong to it ("": no such verb).
func VerbHelp(name string) string {
	v, ok := verbNamed(name)
	if !ok {
		return ""
	}
	s := "drainctl --auto " + name + ":\n" + v.usage + "\n"
	var own strings.Builder
	for _, f := range VerbFlags() {
		if slices.Contains(f.Verbs, name) {
			own.WriteString(f.Usage)
		}
	}
	if own.Len() > 0 {
		s += "\nIts flags:\n" + own.String()
	}
	return s
}

// KnownVerb reports whether --auto knows the verb.
func KnownVerb(v string) bool {
	_, ok := verbNamed(v)
	return ok
}

func verbNamed(name string) (verb, bool) {
	for _, v := range verbTable() {
		if v.name == name {
			return v, true
		}
	}
	return verb{}, false
}

// Do runs verb on its arguments. The error carries the exit code (ops.ExitCodeOf).
func (a *Auto) Do(ctx context.Context, name string, args []string) error {
	v, ok := verbNamed(name)
	if !ok {
		return &ops.UsageError{Problem: text.Sprintf("unknown verb %q", name), Hint: "the verbs are: " + Verbs()}
	}
	return v.do(a, ctx, args)
}

func (a *Auto) list(ctx context.Context, _ []string) error {
	inv, err := a.Engine.Inventory().Read(ctx)
	if err != nil {
		return err
	}
	format := FormatTable
	if a.JSON {
		format = FormatJSON
	}
	return WriteInventory(a.Stdout, inv, format)
}

func (a *Auto) plan(ctx context.Context, args []string) error {
	if len(args) < 2 {
		return &ops.UsageError{Problem: "plan needs a verb and its targets", Hint: "e.g. drainctl --auto plan evacuate compute-3"}
	}
	a.DryRun = true
	return a.Do(ctx, args[0], args[1:])
}

// operation is a verb that plans and runs an operation on its targets.
func operation(op model.OpKind) func(a *Auto, ctx context.Context, args []string) error {
	return func(a *Auto, ctx context.Context, args []string) error {
		if len(args) == 0 {
			what := "NODE"
			if ops.RowOf(op).OnVM {
				what = "VM"
			}
			return &ops.UsageError{Problem: string(op) + " needs at least one " + what, Hint: "drainctl --auto list shows them"}
		}
		if ops.RowOf(op).OneNode && len(args) > 1 {
			return &ops.UsageError{Problem: string(op) + " takes one node"}
		}
		return a.operate(ctx, op, args)
	}
}
