package app

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ui/auto"
	"github.com/drainctl/drainctl/ui/flagrow"
)

// The command line, one row per flag (kubectl's NewCmdDrain shape): its names, its section
// and lines in --help, and where it goes in Options. These are the root's flags, those of no
// one verb; a verb's own flags sit on its row (ui/auto/verbs.go). The flag set, the help's
// flag sections, completion and the refusal of a flag given to a verb that would ignore it
// all come from the rows: a new flag is a row, on its verb if it has one.

// The sections of --help that list the root's flags, in its order (a verb's own flags are
// listed under its verb: ui/auto's verb rows).
const (
	SectionOperation = "operation"
	SectionSim       = "sim"
	SectionGeneral   = "general"
)

var flagRows = []flagrow.Row[Options]{
	{Names: []string{"help", "h"}, Section: SectionGeneral, Bind: flagrow.Bool(func(o *Options) *bool { return &o.Help }, false)},
	{Names: []string{"auto"}, Section: SectionGeneral, Bind: flagrow.Bool(func(o *Options) *bool { return &o.Auto }, false)},
	{Names: []string{"daemon"}, Section: SectionGeneral, Bind: flagrow.Bool(func(o *Options) *bool { return &o.Serve.Daemon }, false)},
	{Names: []string{"proxy"}, Section: SectionGeneral, Bind: flagrow.Bool(func(o *Options) *bool { return &o.Serve.Proxy }, false)},
	{Names: []string{"controller"}, Section: SectionGeneral, Bind: flagrow.Bool(func(o *Options) *bool { return &o.Serve.Controller },
		false)},

	// Operation flags.
	{Names: []string{"dry-run"}, Section: SectionOperation, Usage: "  --dry-run            print the plan, change nothing\n",
		Bind: flagrow.Bool(func(o *Options) *bool { return &o.Op.DryRun }, false)},
	{Names: []string{"reason"}, Section: SectionOperation, Usage: "  --reason TEXT        why, added to nova-compute's disabled reason\n",
		Bind: flagrow.String(func(o *Options) *string { return &o.Op.Reason }, "")},
	{Names: []string{"to"}, Section: SectionOperation, Usage: "  --to HOST            migrate: the destination host\n",
		Bind: flagrow.String(func(o *Options) *string { return &o.Op.To }, "")},
	{
		Names:   []string{"force"},
		Section: SectionOperation,
		Usage: "  --force              evict bare pods and pods marked safe-to-evict=false/do-not-disrupt,\n" +
			"                       leave VMs that cannot move, re-enable a service someone else disabled\n",
		Bind: flagrow.Bool(func(o *Options) *bool { return &o.Op.Force }, false),
	},
	{Names: []string{"disable-eviction"}, Section: SectionOperation,
		Usage: "  --disable-eviction   delete pods instead of evicting them (bypasses PodDisruptionBudgets)\n",
		Bind:  flagrow.Bool(func(o *Options) *bool { return &o.Op.DisableEviction }, false)},
	{
		Names:   []string{"delete-emptydir-data"},
		Section: SectionOperation,
		Usage:   "  --delete-emptydir-data   evict pods with emptyDir data, losing it\n",
		Bind:    flagrow.Bool(func(o *Options) *bool { return &o.Op.DeleteEmptyDir }, false),
	},
	{Names: []string{"ignore-daemonsets"}, Section: SectionOperation,
		Usage: "  --ignore-daemonsets  leave DaemonSet pods (default true; --ignore-daemonsets=false refuses them)\n",
		Bind:  flagrow.Bool(func(o *Options) *bool { return &o.Op.IgnoreDaemonSets }, true)},
	{
		Names:   []string{"allow-control-plane"},
		Section: SectionOperation,
		Usage:   "  --allow-control-plane    allow emptying a control-plane node\n",
		Bind:    flagrow.Bool(func(o *Options) *bool { return &o.Op.AllowControlPlane }, false),
	},
	{
		Names:   []string{"allow-last-node"},
		Section: SectionOperation,
		Usage:   "  --allow-last-node    allow emptying the last schedulable worker\n",
		Bind:    flagrow.Bool(func(o *Options) *bool { return &o.Op.AllowLastNode }, false),
	},
	{
		Names:   []string{"ignore-failover-room"},
		Section: SectionOperation,
		Usage:   "  --ignore-failover-room   allow a plan to leave less room for the next host failure than [capacity] asks\n",
		Bind:    flagrow.Bool(func(o *Options) *bool { return &o.Op.IgnoreFailoverRoom }, false),
	},
	{Names: []string{"cold-migrate-running"}, Section: SectionOperation,
		Usage: "  --cold-migrate-running   move a running VM that cannot live-migrate (PCI, vGPU) cold:\n" +
			"                       it is stopped, moved and started again (downtime; the plan lists it)\n",
		Bind: flagrow.Bool(func(o *Options) *bool { return &o.Op.ColdMigrateRunning }, false)},
	{Names: []string{"skip-vm"}, Section: SectionOperation,
		Usage: "  --skip-vm NAME       leave this VM on the node (repeatable): the run goes on, and ends\n" +
			"                       with exit 6 saying the node is not empty and why\n",
		Bind: flagrow.VMs(func(o *Options) *[]string { return &o.Op.SkipVMs })},
	{Names: []string{"override-vm-policy"}, Section: SectionOperation,
		Usage: "  --override-vm-policy NAME   move this VM as its state says although its own maintenance\n" +
			"                       policy (drainctl:maintenance) asks to stay or is unknown (repeatable)\n",
		Bind: flagrow.VMs(func(o *Options) *[]string { return &o.Op.OverrideVMPolicies })},
	{
		Names:   []string{"timeout"},
		Section: SectionOperation,
		Usage:   "  --timeout DURATION   bound the whole operation (default timeouts.operation, 2h)\n",
		Bind:    flagrow.Duration(func(o *Options) *time.Duration { return &o.Op.Timeout }),
	},
	{
		Names:   []string{"max-parallel"},
		Section: SectionOperation,
		Usage:   "  --max-parallel N     nodes worked at once (default concurrency.nodes, 1)\n",
		Bind:    flagrow.Int(func(o *Options) *int { return &o.Op.MaxParallel }, 0),
	},
	{Names: []string{"count"}, Section: SectionOperation,
		Usage: "  --count N            recommend, scale-down: how many candidates (default: all; scale-down: 1)\n",
		Bind:  flagrow.Int(func(o *Options) *int { return &o.Count }, 0)},

	// The simulated cluster.
	{Names: []string{"demo"}, Section: SectionSim, Bind: flagrow.Bool(func(o *Options) *bool { return &o.Demo }, false)},
	{
		Names:   []string{"demo-nodes"},
		Section: SectionSim,
		Usage:   "  --demo-nodes N       size of the demo cluster (default 12, up to 5000)\n",
		Bind:    flagrow.Int(func(o *Options) *int { return &o.Sim.Nodes }, 12),
	},
	{Names: []string{"demo-seed"}, Section: SectionSim, Usage: "  --demo-seed N        the same seed makes the same cluster\n",
		Bind: func(fs *flag.FlagSet, name string, o *Options) { fs.Int64Var(&o.Sim.Seed, name, 1, "") }},
	{Names: []string{"demo-scale"}, Section: SectionSim, Usage: "  --demo-scale X       simulated seconds per real second (default 1)\n",
		Bind: func(fs *flag.FlagSet, name string, o *Options) { fs.Float64Var(&o.Sim.Scale, name, 1, "") }},
	{Names: []string{"demo-fault"}, Section: SectionSim,
		Usage: "  --demo-fault LIST    inject faults, comma-separated: latency=200ms, slow-api=5s (p99),\n" +
			"                       loaded-api=50ms (mean delay a move under way adds),\n" +
			"                       fail-api=0.05 (a share answered 503), migrate-500, migrate-409,\n" +
			"                       services-503, no-valid-host, compute-down=HOST, never-converge=VM,\n" +
			"                       fail-migration=VM@PHASE, boot-error=HOST, boot-hang=HOST,\n" +
			"                       console-silent=HOST (a canary there fails)\n",
		Bind: flagrow.String(func(o *Options) *string { return &o.Sim.Fault }, "")},
	{Names: []string{"listen"}, Section: SectionSim,
		Usage: "  --listen ADDR        sim serve: address to listen on (default 127.0.0.1:0);\n" +
			"                       --proxy: address to serve the cloudpool API on (default :8080)\n",
		Bind: flagrow.String(func(o *Options) *string { return &o.Serve.Listen }, "")},

	// Flags of every mode.
	{Names: []string{"config"}, Section: SectionGeneral,
		Usage: "  --config PATH        drainctl's config.toml (default ~/.config/drainctl/config.toml)\n",
		Bind:  flagrow.String(func(o *Options) *string { return &o.Conn.Config }, "")},
	{Names: []string{"config-path"}, Section: SectionGeneral,
		Usage: "  -config-path PATH    nova-kubernetes-drain's config.yaml (OpenStack credentials)\n",
		Bind:  flagrow.String(func(o *Options) *string { return &o.Conn.LegacyConfig }, "")},
	{Names: []string{"kubeconfig"}, Section: SectionGeneral,
		Usage: "  --kubeconfig PATH    kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)\n",
		Bind:  flagrow.String(func(o *Options) *string { return &o.Conn.Kubeconfig }, "")},
	{Names: []string{"context"}, Section: SectionGeneral, Usage: "  --context NAME       kubeconfig context\n",
		Bind: flagrow.String(func(o *Options) *string { return &o.Conn.Context }, "")},
	{Names: []string{"output", "o"}, Section: SectionGeneral, Usage: "  -o, --output FORMAT  table or json\n",
		Bind: flagrow.String(func(o *Options) *string { return &o.Output }, auto.FormatTable)},
	{Names: []string{"log-file"}, Section: SectionGeneral, Usage: "  --log-file PATH      write client logs here (default: nowhere)\n",
		Bind: flagrow.String(func(o *Options) *string { return &o.Conn.LogFile }, "")},
	{Names: []string{"readonly"}, Section: SectionGeneral, Usage: "  --readonly           TUI: hide every key that changes the cluster\n",
		Bind: flagrow.Bool(func(o *Options) *bool { return &o.ReadOnly }, false)},
	{Names: []string{"node"}, Section: SectionGeneral,
		Usage: "  --node NODE          daemon: only this node (default NODE_NAME; unset: every node, leader-elected)\n",
		Bind:  flagrow.String(func(o *Options) *string { return &o.Serve.Node }, "")},
	{Names: []string{"metrics-addr"}, Section: SectionGeneral,
		Usage: "  --metrics-addr ADDR  daemon, proxy, controller, and --auto (a campaign run as a Job): serve /metrics,\n" +
			"                       /healthz and /readyz here over TLS (e.g. :9090); /metrics only to a caller the\n" +
			"                       API server lets get it (ClusterRole drainctl-metrics-reader)\n",
		Bind: flagrow.String(func(o *Options) *string { return &o.Serve.MetricsAddr }, "")},
	{Names: []string{"version"}, Section: SectionGeneral, Usage: "  --version            print the version and exit\n",
		Bind: flagrow.Bool(func(o *Options) *bool { return &o.Version }, false)},
}

// FlagSet is drainctl's flags, every name of every row (the root's, then every verb's own),
// parsed into o.
func FlagSet(o *Options) *flag.FlagSet {
	fs := flag.NewFlagSet("drainctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flagrow.BindAll(fs, flagRows, o)
	flagrow.BindAll(fs, auto.VerbFlags(), &o.Verb)
	return fs
}

// FlagUsage is the lines --help shows for the root's flags of a section, in the rows' order.
func FlagUsage(section string) string { return flagrow.Usage(flagRows, section) }

// owners are every flag's names and verbs: the root's and the verbs' own.
func owners() []flagrow.Owner {
	var out []flagrow.Owner
	for _, r := range flagRows {
		out = append(out, r.Owner())
	}
	for _, r := range auto.VerbFlags() {
		out = append(out, r.Owner())
	}
	return out
}

// misplacedFlags refuses the flags given that belong to other verbs than target, grouped by
// the verbs they belong to (roll's first, then recover's, then the flags of several verbs).
func misplacedFlags(o Options, target string) error {
	type group struct {
		owners []string
		given  []string
		hint   string
	}
	var groups []*group
	for _, r := range owners() {
		if len(r.Verbs) == 0 || slices.Contains(r.Verbs, target) {
			continue
		}
		for _, name := range r.Names {
			if !o.Set[name] {
				continue
			}
			i := slices.IndexFunc(groups, func(g *group) bool { return slices.Equal(g.owners, r.Verbs) })
			if i < 0 {
				hint := r.Hint
				if hint == "" {
					hint = "leave it out, or run drainctl --auto " + r.Verbs[0]
				}
				groups, i = append(groups, &group{owners: r.Verbs, hint: hint}), len(groups)
			}
			groups[i].given = append(groups[i].given, "--"+name)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		if len(a.owners) != len(b.owners) {
			return len(a.owners) - len(b.owners)
		}
		return strings.Compare(b.owners[0], a.owners[0]) // roll before recover
	})
	g := groups[0]
	slices.Sort(g.given)
	belong := "belong(s)"
	if len(g.owners) > 1 { // a flag of several verbs is named alone
		belong = "belongs"
	}
	return &ops.UsageError{Problem: fmt.Sprintf("%s %s to %s, not %s: %s would ignore it", strings.Join(g.given, ", "), belong,
		strings.Join(g.owners, " and "), target, target), Hint: g.hint}
}
