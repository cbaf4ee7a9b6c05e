package app

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ui/auto"
)

// The command line, one row per flag (kubectl's NewCmdDrain shape): its names, its section
// and lines in --help, the verbs it belongs to, and where it goes in Options. The flag set,
// the help's flag sections, completion and the refusal of a flag given to a verb that would
// ignore it all come from these rows: a new flag is a row, in its verb's section.

// Section is a part of --help that lists flags.
type Section string

// The sections of --help that list flags, in its order.
const (
	SectionOperation Section = "operation"
	SectionRecover   Section = "recover"
	SectionRoll      Section = "roll"
	SectionSim       Section = "sim"
	SectionGeneral   Section = "general"
)

type flagRow struct {
	names   []string // the first is its name, the others its aliases (-l, -o)
	section Section
	usage   string   // its lines in its section of --help, as shown ("": not listed)
	verbs   []string // the --auto verbs it belongs to (none: every one)
	hint    string   // refused for another verb: what to do instead ("": run its verb)
	bind    func(fs *flag.FlagSet, name string, o *Options)
}

func boolFlag(f func(*Options) *bool, def bool) func(*flag.FlagSet, string, *Options) {
	return func(fs *flag.FlagSet, name string, o *Options) { fs.BoolVar(f(o), name, def, "") }
}

func stringFlag(f func(*Options) *string, def string) func(*flag.FlagSet, string, *Options) {
	return func(fs *flag.FlagSet, name string, o *Options) { fs.StringVar(f(o), name, def, "") }
}

func intFlag(f func(*Options) *int, def int) func(*flag.FlagSet, string, *Options) {
	return func(fs *flag.FlagSet, name string, o *Options) { fs.IntVar(f(o), name, def, "") }
}

func durationFlag(f func(*Options) *time.Duration) func(*flag.FlagSet, string, *Options) {
	return func(fs *flag.FlagSet, name string, o *Options) { fs.DurationVar(f(o), name, 0, "") }
}

// vmsFlag is a repeatable flag naming a VM.
func vmsFlag(f func(*Options) *[]string) func(*flag.FlagSet, string, *Options) {
	return func(fs *flag.FlagSet, name string, o *Options) {
		fs.Func(name, "", func(v string) error {
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("--%s needs a VM name or ID", name)
			}
			*f(o) = append(*f(o), v)
			return nil
		})
	}
}

var rollVerb = []string{"roll"}

var flagRows = []flagRow{
	{names: []string{"help", "h"}, section: SectionGeneral, bind: boolFlag(func(o *Options) *bool { return &o.Help }, false)},
	{names: []string{"auto"}, section: SectionGeneral, bind: boolFlag(func(o *Options) *bool { return &o.Auto }, false)},
	{names: []string{"daemon"}, section: SectionGeneral, bind: boolFlag(func(o *Options) *bool { return &o.Serve.Daemon }, false)},
	{names: []string{"proxy"}, section: SectionGeneral, bind: boolFlag(func(o *Options) *bool { return &o.Serve.Proxy }, false)},
	{names: []string{"controller"}, section: SectionGeneral, bind: boolFlag(func(o *Options) *bool { return &o.Serve.Controller }, false)},

	// Operation flags.
	{names: []string{"dry-run"}, section: SectionOperation, usage: "  --dry-run            print the plan, change nothing\n",
		bind: boolFlag(func(o *Options) *bool { return &o.Op.DryRun }, false)},
	{names: []string{"reason"}, section: SectionOperation, usage: "  --reason TEXT        why, added to nova-compute's disabled reason\n",
		bind: stringFlag(func(o *Options) *string { return &o.Op.Reason }, "")},
	{names: []string{"to"}, section: SectionOperation, usage: "  --to HOST            migrate: the destination host\n",
		bind: stringFlag(func(o *Options) *string { return &o.Op.To }, "")},
	{
		names:   []string{"force"},
		section: SectionOperation,
		usage: "  --force              evict bare pods and pods marked safe-to-evict=false/do-not-disrupt,\n" +
			"                       leave VMs that cannot move, re-enable a service someone else disabled\n",
		bind: boolFlag(func(o *Options) *bool { return &o.Op.Force }, false),
	},
	{names: []string{"disable-eviction"}, section: SectionOperation,
		usage: "  --disable-eviction   delete pods instead of evicting them (bypasses PodDisruptionBudgets)\n",
		bind:  boolFlag(func(o *Options) *bool { return &o.Op.DisableEviction }, false)},
	{
		names:   []string{"delete-emptydir-data"},
		section: SectionOperation,
		usage:   "  --delete-emptydir-data   evict pods with emptyDir data, losing it\n",
		bind:    boolFlag(func(o *Options) *bool { return &o.Op.DeleteEmptyDir }, false),
	},
	{names: []string{"ignore-daemonsets"}, section: SectionOperation,
		usage: "  --ignore-daemonsets  leave DaemonSet pods (default true; --ignore-daemonsets=false refuses them)\n",
		bind:  boolFlag(func(o *Options) *bool { return &o.Op.IgnoreDaemonSets }, true)},
	{
		names:   []string{"allow-control-plane"},
		section: SectionOperation,
		usage:   "  --allow-control-plane    allow emptying a control-plane node\n",
		bind:    boolFlag(func(o *Options) *bool { return &o.Op.AllowControlPlane }, false),
	},
	{
		names:   []string{"allow-last-node"},
		section: SectionOperation,
		usage:   "  --allow-last-node    allow emptying the last schedulable worker\n",
		bind:    boolFlag(func(o *Options) *bool { return &o.Op.AllowLastNode }, false),
	},
	{names: []string{"cold-migrate-running"}, section: SectionOperation,
		usage: "  --cold-migrate-running   move a running VM that cannot live-migrate (PCI, vGPU) cold:\n" +
			"                       it is stopped, moved and started again (downtime; the plan lists it)\n",
		bind: boolFlag(func(o *Options) *bool { return &o.Op.ColdMigrateRunning }, false)},
	{names: []string{"skip-vm"}, section: SectionOperation,
		usage: "  --skip-vm NAME       leave this VM on the node (repeatable): the run goes on, and ends\n" +
			"                       with exit 6 saying the node is not empty and why\n",
		bind: vmsFlag(func(o *Options) *[]string { return &o.Op.SkipVMs })},
	{names: []string{"override-vm-policy"}, section: SectionOperation,
		usage: "  --override-vm-policy NAME   move this VM as its state says although its own maintenance\n" +
			"                       policy (drainctl:maintenance) asks to stay or is unknown (repeatable)\n",
		bind: vmsFlag(func(o *Options) *[]string { return &o.Op.OverrideVMPolicies })},
	{
		names:   []string{"timeout"},
		section: SectionOperation,
		usage:   "  --timeout DURATION   bound the whole operation (default timeouts.operation, 2h)\n",
		bind:    durationFlag(func(o *Options) *time.Duration { return &o.Op.Timeout }),
	},
	{
		names:   []string{"max-parallel"},
		section: SectionOperation,
		usage:   "  --max-parallel N     nodes worked at once (default concurrency.nodes, 1)\n",
		bind:    intFlag(func(o *Options) *int { return &o.Op.MaxParallel }, 0),
	},
	{names: []string{"count"}, section: SectionOperation,
		usage: "  --count N            recommend, scale-down: how many candidates (default: all; scale-down: 1)\n", bind: intFlag(func(o *Options) *int { return &o.Count }, 0)},

	// Recovery flags (recover).
	{names: []string{"fence-cmd"}, section: SectionRecover, verbs: []string{"recover"},
		usage: "  --fence-cmd 'CMD {node}'   power the machine off (ipmitool, a Redfish call): exit 0\n" +
			"                       proves it off; its output is reported line by line\n",
		bind: stringFlag(func(o *Options) *string { return &o.Recover.FenceCmd }, "")},
	{names: []string{"confirm-fenced"}, section: SectionRecover, verbs: []string{"recover"},
		usage: "  --confirm-fenced     your word that the machine is off (journaled with who and when)\n",
		bind:  boolFlag(func(o *Options) *bool { return &o.Recover.ConfirmFenced }, false)},
	{names: []string{"accept-disk-loss"}, section: SectionRecover, verbs: []string{"recover"},
		usage: "  --accept-disk-loss   rebuild the VMs whose local disk stays on the dead machine: they come\n" +
			"                       back from their image, their disk lost (the plan lists them)\n",
		bind: boolFlag(func(o *Options) *bool { return &o.Recover.AcceptDiskLoss }, false)},

	// Campaign flags (roll).
	{names: []string{"selector", "l"}, section: SectionRoll, verbs: rollVerb,
		usage: "  -l, --selector L=V   the nodes: those the label selector matches (instead of NODE...)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.Selector }, "")},
	{names: []string{"parallel"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --parallel N|N%      nodes worked at once, or a share of the campaign's (default 1; at most\n" +
			"                       concurrency.nodes, see --max-parallel)\n",
		bind: parallelFlag},
	{names: []string{"spread-by"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --spread-by LABEL    never two nodes of one LABEL value (a zone, a rack) in flight; the\n" +
			"                       order walks the values round-robin\n",
		bind: stringFlag(func(o *Options) *string { return &o.Roll.SpreadBy }, "")},
	{names: []string{"order"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --order name|given|cost   the order of the nodes (default: given, or by name for a\n" +
			"                       selector); cost: the ranking's cheapest first\n",
		bind: stringFlag(func(o *Options) *string { return &o.Roll.Order }, "")},
	{names: []string{"gate-cmd"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --gate-cmd 'CMD {node}'   before each node starts, CMD must exit 0 (else the campaign waits)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.GateCmd }, "")},
	{names: []string{"gate-prometheus"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --gate-prometheus URL     before each node starts, no alert may fire in this Prometheus\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.GatePrometheus }, "")},
	{names: []string{"gate-alerts"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --gate-alerts REGEX  with --gate-prometheus: only the alerts whose name matches hold it\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.GateAlerts }, "")},
	{names: []string{"gate-prometheus-token-file"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --gate-prometheus-token-file FILE   its bearer token (else " + PromTokenEnv + ")\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.GatePromTokenFile }, "")},
	{names: []string{"gate-prometheus-ca-file"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --gate-prometheus-ca-file FILE      the CA its certificate is checked against\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.GatePromCAFile }, "")},
	{names: []string{"exec"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --exec 'CMD {node}'  run on each emptied node ({node}: its name; env DRAINCTL_NODE, DRAINCTL_HOST)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.Exec }, "")},
	{names: []string{"wait-ready"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --wait-ready         wait for the node to reboot and come back Ready with nova-compute up\n",
		bind:  boolFlag(func(o *Options) *bool { return &o.Roll.WaitReady }, false)},
	{names: []string{"return-vms"}, section: SectionRoll, verbs: []string{"roll", "uncordon"},
		hint: "leave it out, or give it to uncordon after an evacuate, or to roll",
		usage: "  --return-vms         (roll, uncordon) once a node is back and proven, bring home the VMs\n" +
			"                       that left it (its journal), live or cold as they left; one moved,\n" +
			"                       resized or deleted since stays where it is, said so\n",
		bind: boolFlag(func(o *Options) *bool { return &o.ReturnVMs }, false)},
	{names: []string{"on-failure"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --on-failure MODE    stop (default): stop at the failed node; skip: roll it back, go on\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.OnFailure }, "stop")},
	{names: []string{"window"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --window 'DAYS HH:MM-HH:MM ZONE'   no node starts outside it (e.g. 'Mon-Fri 22:00-06:00\n" +
			"                       Europe/Berlin'; [roll] window); the campaign waits, says until when\n",
		bind: stringFlag(func(o *Options) *string { return &o.Roll.Window }, "")},
	{names: []string{"node-deadline"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --node-deadline D    a node not drained within D (default 30m) is undrainable:\n",
		bind:  durationFlag(func(o *Options) *time.Duration { return &o.Roll.NodeDeadline })},
	{names: []string{"undrainable"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --undrainable MODE   quarantine (default: roll it back, label it drainctl.io/quarantined,\n" +
			"                       go on), rollback (roll it back, stop) or fail (stop, left as it is)\n",
		bind: stringFlag(func(o *Options) *string { return &o.Roll.Undrainable }, "")},
	{names: []string{"campaign"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --campaign NAME      the campaign's name (default: derived from the nodes or selector)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Roll.Campaign }, "")},
	{names: []string{"resume"}, section: SectionRoll, verbs: rollVerb,
		usage: "  --resume             resume the campaign's unfinished record even when older than [roll]\n" +
			"                       resume_within\n",
		bind: boolFlag(func(o *Options) *bool { return &o.Roll.Resume }, false)},

	// The simulated cluster.
	{names: []string{"demo"}, section: SectionSim, bind: boolFlag(func(o *Options) *bool { return &o.Demo }, false)},
	{
		names:   []string{"demo-nodes"},
		section: SectionSim,
		usage:   "  --demo-nodes N       size of the demo cluster (default 12, up to 5000)\n",
		bind:    intFlag(func(o *Options) *int { return &o.Sim.Nodes }, 12),
	},
	{names: []string{"demo-seed"}, section: SectionSim, usage: "  --demo-seed N        the same seed makes the same cluster\n",
		bind: func(fs *flag.FlagSet, name string, o *Options) { fs.Int64Var(&o.Sim.Seed, name, 1, "") }},
	{names: []string{"demo-scale"}, section: SectionSim, usage: "  --demo-scale X       simulated seconds per real second (default 1)\n",
		bind: func(fs *flag.FlagSet, name string, o *Options) { fs.Float64Var(&o.Sim.Scale, name, 1, "") }},
	{names: []string{"demo-fault"}, section: SectionSim,
		usage: "  --demo-fault LIST    inject faults, comma-separated: latency=200ms, migrate-500, migrate-409,\n" +
			"                       services-503, no-valid-host, compute-down=HOST, never-converge=VM,\n" +
			"                       fail-migration=VM@PHASE, boot-error=HOST, boot-hang=HOST,\n" +
			"                       console-silent=HOST (a canary there fails)\n",
		bind: stringFlag(func(o *Options) *string { return &o.Sim.Fault }, "")},
	{names: []string{"listen"}, section: SectionSim,
		usage: "  --listen ADDR        sim serve: address to listen on (default 127.0.0.1:0);\n" +
			"                       --proxy: address to serve the cloudpool API on (default :8080)\n",
		bind: stringFlag(func(o *Options) *string { return &o.Serve.Listen }, "")},

	// Flags of every mode.
	{names: []string{"config"}, section: SectionGeneral,
		usage: "  --config PATH        drainctl's config.toml (default ~/.config/drainctl/config.toml)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Conn.Config }, "")},
	{names: []string{"config-path"}, section: SectionGeneral,
		usage: "  -config-path PATH    nova-kubernetes-drain's config.yaml (OpenStack credentials)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Conn.LegacyConfig }, "")},
	{names: []string{"kubeconfig"}, section: SectionGeneral,
		usage: "  --kubeconfig PATH    kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Conn.Kubeconfig }, "")},
	{names: []string{"context"}, section: SectionGeneral, usage: "  --context NAME       kubeconfig context\n",
		bind: stringFlag(func(o *Options) *string { return &o.Conn.Context }, "")},
	{names: []string{"output", "o"}, section: SectionGeneral, usage: "  -o, --output FORMAT  table or json\n",
		bind: stringFlag(func(o *Options) *string { return &o.Output }, auto.FormatTable)},
	{names: []string{"log-file"}, section: SectionGeneral, usage: "  --log-file PATH      write client logs here (default: nowhere)\n",
		bind: stringFlag(func(o *Options) *string { return &o.Conn.LogFile }, "")},
	{names: []string{"readonly"}, section: SectionGeneral, usage: "  --readonly           TUI: hide every key that changes the cluster\n",
		bind: boolFlag(func(o *Options) *bool { return &o.ReadOnly }, false)},
	{names: []string{"node"}, section: SectionGeneral,
		usage: "  --node NODE          daemon: only this node (default NODE_NAME; unset: every node, leader-elected)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Serve.Node }, "")},
	{names: []string{"metrics-addr"}, section: SectionGeneral,
		usage: "  --metrics-addr ADDR  daemon, proxy, controller: serve /metrics, /healthz and /readyz here (e.g. :9090)\n",
		bind:  stringFlag(func(o *Options) *string { return &o.Serve.MetricsAddr }, "")},
	{names: []string{"version"}, section: SectionGeneral, usage: "  --version            print the version and exit\n",
		bind: boolFlag(func(o *Options) *bool { return &o.Version }, false)},
}

// parallelFlag reads --parallel: a number of nodes, or a share of them.
func parallelFlag(fs *flag.FlagSet, name string, o *Options) {
	o.Roll.Parallel = 1
	fs.Func(name, "", func(v string) error {
		n, pct := strings.CutSuffix(strings.TrimSpace(v), "%")
		i, err := strconv.Atoi(n)
		switch {
		case err != nil || i < 1 || (pct && i > 100):
			return fmt.Errorf("--parallel %q: a number of nodes (4) or a share of them (10%%)", v)
		case pct:
			o.Roll.ParallelPercent = i
		default:
			o.Roll.Parallel = i
		}
		return nil
	})
}

// FlagSet is drainctl's flags, every name of every row, parsed into o.
func FlagSet(o *Options) *flag.FlagSet {
	fs := flag.NewFlagSet("drainctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, r := range flagRows {
		for _, name := range r.names {
			r.bind(fs, name, o)
		}
	}
	return fs
}

// FlagUsage is the lines --help shows for the flags of a section, in the rows' order.
func FlagUsage(s Section) string {
	var b strings.Builder
	for _, r := range flagRows {
		if r.section == s {
			b.WriteString(r.usage)
		}
	}
	return b.String()
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
	for _, r := range flagRows {
		if len(r.verbs) == 0 || slices.Contains(r.verbs, target) {
			continue
		}
		for _, name := range r.names {
			if !o.Set[name] {
				continue
			}
			i := slices.IndexFunc(groups, func(g *group) bool { return slices.Equal(g.owners, r.verbs) })
			if i < 0 {
				hint := r.hint
				if hint == "" {
					hint = "leave it out, or run drainctl --auto " + r.verbs[0]
				}
				groups, i = append(groups, &group{owners: r.verbs, hint: hint}), len(groups)
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
