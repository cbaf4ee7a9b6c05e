// Command drainctl empties, fixes and removes nodes of a mixed Kubernetes + OpenStack Nova
// cluster: cordon and disable nova-compute, evict pods and live-migrate VMs, and undo it all.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/drainctl/drainctl/internal/app"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
	"github.com/drainctl/drainctl/ui/auto"
)

// Set by the linker: -X main.version=... -X main.commit=... -X main.date=...
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

var usage = `drainctl: empty, fix and remove nodes of a Kubernetes + OpenStack Nova cluster.

Usage:
  drainctl [flags]                      the interactive view (TUI)
  drainctl --auto VERB [ARGS] [flags]   headless, for scripts and CI
  drainctl --daemon [--node NODE]       follow cordon/uncordon: disable nova-compute and
                                        live-migrate VMs off cordoned nodes, re-enable after
  drainctl --proxy [--listen ADDR]      serve the cloudpool API in front of [cloudpool] url:
                                        scale-downs empty and delete a safe node first
  drainctl --controller                 reconcile NodeMaintenance resources (leader-elected):
                                        created, empty the node; deleted, put it back
  drainctl version                      the version (also --version)
  drainctl completion bash|zsh|fish     a shell completion script
  kubectl drainctl ...                  the same, as a kubectl plugin (kubectl-drainctl on PATH)

Verbs (--auto):
` + auto.VerbUsage() + `  (no verb)            evacuate the node drainctl runs on (NODE_NAME, else the hostname)

Operation flags:
  --dry-run            print the plan, change nothing
  --reason TEXT        why, added to nova-compute's disabled reason
  --to HOST            migrate: the destination host
  --force              evict bare pods and pods marked safe-to-evict=false/do-not-disrupt,
                       leave VMs that cannot move, re-enable a service someone else disabled
  --disable-eviction   delete pods instead of evicting them (bypasses PodDisruptionBudgets)
  --delete-emptydir-data   evict pods with emptyDir data, losing it
  --ignore-daemonsets  leave DaemonSet pods (default true; --ignore-daemonsets=false refuses them)
  --allow-control-plane    allow emptying a control-plane node
  --allow-last-node    allow emptying the last schedulable worker
  --cold-migrate-running   move a running VM that cannot live-migrate (PCI, vGPU) cold:
                       it is stopped, moved and started again (downtime; the plan lists it)
  --skip-vm NAME       leave this VM on the node (repeatable): the run goes on, and ends
                       with exit 6 saying the node is not empty and why
  --override-vm-policy NAME   move this VM as its state says although its own maintenance
                       policy (drainctl:maintenance) asks to stay or is unknown (repeatable)
  --timeout DURATION   bound the whole operation (default timeouts.operation, 2h)
  --max-parallel N     nodes worked at once (default concurrency.nodes, 1)

Recovery flags (recover):
  --fence-cmd 'CMD {node}'   power the machine off (ipmitool, a Redfish call): exit 0
                       proves it off; its output is reported line by line
  --confirm-fenced     your word that the machine is off (journaled with who and when)

Campaign flags (roll):
  -l, --selector L=V   the nodes: those the label selector matches (instead of NODE...)
  --parallel N|N%      nodes worked at once, or a share of the campaign's (default 1; at most
                       concurrency.nodes, see --max-parallel)
  --spread-by LABEL    never two nodes of one LABEL value (a zone, a rack) in flight; the
                       order walks the values round-robin
  --order name|given|cost   the order of the nodes (default: given, or by name for a
                       selector); cost: the ranking's cheapest first
  --gate-cmd 'CMD {node}'   before each node starts, CMD must exit 0 (else the campaign waits)
  --gate-prometheus URL     before each node starts, no alert may fire in this Prometheus
  --gate-alerts REGEX  with --gate-prometheus: only the alerts whose name matches hold it
  --exec 'CMD {node}'  run on each emptied node ({node}: its name; env DRAINCTL_NODE, DRAINCTL_HOST)
  --wait-ready         wait for the node to reboot and come back Ready with nova-compute up
  --return-vms         (roll, uncordon) once a node is back and proven, bring home the VMs
                       that left it (its journal), live or cold as they left; one moved,
                       resized or deleted since stays where it is, said so
  --on-failure MODE    stop (default): stop at the failed node; skip: roll it back, go on
  --window 'DAYS HH:MM-HH:MM ZONE'   no node starts outside it (e.g. 'Mon-Fri 22:00-06:00
                       Europe/Berlin'; [roll] window); the campaign waits, says until when
  --node-deadline D    a node not drained within D (default 30m) is undrainable:
  --undrainable MODE   quarantine (default: roll it back, label it drainctl.io/quarantined,
                       go on), rollback (roll it back, stop) or fail (stop, left as it is)
  --campaign NAME      the campaign's name (default: derived from the nodes or selector)

Simulated cluster (no cluster needed):
  drainctl --demo [--auto VERB]         run on a generated cluster (Kubernetes + Nova)
  drainctl sim serve                    serve the simulated Nova + Keystone and print OS_* variables
  --demo-nodes N       size of the demo cluster (default 12, up to 5000)
  --demo-seed N        the same seed makes the same cluster
  --demo-scale X       simulated seconds per real second (default 1)
  --demo-fault LIST    inject faults, comma-separated: latency=200ms, migrate-500, migrate-409,
                       services-503, no-valid-host, compute-down=HOST, never-converge=VM,
                       fail-migration=VM@PHASE, boot-error=HOST, boot-hang=HOST,
                       console-silent=HOST (a canary there fails)
  --listen ADDR        sim serve: address to listen on (default 127.0.0.1:0);
                       --proxy: address to serve the cloudpool API on (default :8080)

Flags:
  --config PATH        drainctl's config.toml (default ~/.config/drainctl/config.toml)
  -config-path PATH    nova-kubernetes-drain's config.yaml (OpenStack credentials)
  --kubeconfig PATH    kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)
  --context NAME       kubeconfig context
  -o, --output FORMAT  table or json
  --log-file PATH      write client logs here (default: nowhere)
  --readonly           TUI: hide every key that changes the cluster
  --node NODE          daemon: only this node (default NODE_NAME; unset: every node, leader-elected)
  --metrics-addr ADDR  daemon, proxy, controller: serve /metrics, /healthz and /readyz here (e.g. :9090)
  --version            print the version and exit

OpenStack credentials: -config-path, else OS_CLOUD + clouds.yaml, else OS_* variables,
else the [openstack] table of config.toml. With none, drainctl works on Kubernetes alone.

Exit codes: 0 done, 1 failed, 2 usage or configuration error or a cluster that cannot be
reached, 3 refused by policy, 4 interrupted (a rerun resumes), 5 doctor found disagreements,
6 done but the node is not empty (VMs left by --skip-vm or --force).
`

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		cancel() // first signal: stop at the next safe point
		<-signals
		fmt.Fprintln(os.Stderr, "drainctl: second signal, exiting at once")
		os.Exit(app.ExitInterrupted)
	}()
	serveProfiles(os.Getenv("DRAINCTL_PPROF"))
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	cancel()
	os.Exit(code)
}

// run is the whole program; it returns the exit code so that deferred calls run first.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	opts, cmd, err := parseArgs(args)
	switch {
	case err == nil && cmd == cmdHelp:
		fmt.Fprint(stdout, usage)
		return app.ExitOK
	case err == nil && cmd == cmdVersion:
		fmt.Fprintf(stdout, "drainctl %s (commit %s, built %s)\n", version, commit, date)
		return app.ExitOK
	case err == nil && cmd == cmdCompletion:
		if len(opts.Args) != 2 {
			err = &ops.UsageError{Problem: "completion needs a shell", Hint: "drainctl completion bash|zsh|fish"}
		} else if cerr := completion(stdout, opts.Args[1], flagSet(new(app.Options), new(bool), new(bool))); cerr != nil {
			err = &ops.UsageError{Problem: cerr.Error()}
		}
	case err == nil:
		err = app.Run(ctx, opts, stdout, stderr, getenv)
	}
	if err != nil {
		label := "error"
		if app.ExitCodeOf(err) == app.ExitNotEmpty { // done as asked: no error, a node left not empty on purpose
			label = "done, not empty"
		}
		text.Fprintf(stderr, "drainctl: %s: %s\n", label, app.ErrorText(err))
		if hint := app.HintOf(err); hint != "" {
			text.Fprintf(stderr, "drainctl: hint: %s\n", hint)
		}
		if opts.Demo && app.ExitCodeOf(err) == app.ExitInterrupted {
			// "Run it again to resume" is true of a cluster; the demo's lives in this process.
			text.Fprintf(stderr, "drainctl: hint: the demo's cluster lived in this process only: a rerun starts a new one (run the demo's operations one after the other in its TUI: drainctl --demo)\n")
		}
	}
	return app.ExitCodeOf(err)
}

// What the command line asks for besides a mode.
const (
	cmdRun = iota
	cmdHelp
	cmdVersion
	cmdCompletion
)

// parseArgs reads the flags; they may come before or after the verb.
func parseArgs(args []string) (app.Options, int, error) {
	var o app.Options
	var help, showVersion bool
	fs := flagSet(&o, &help, &showVersion)
	// Flags may come before or after the verb: parse, take one positional, parse the rest.
	for {
		if err := fs.Parse(args); err != nil {
			return o, cmdRun, &ops.UsageError{Problem: err.Error(), Hint: "run drainctl --help for the flags"}
		}
		if fs.NArg() == 0 {
			break
		}
		o.Args = append(o.Args, fs.Arg(0))
		args = fs.Args()[1:]
	}
	o.Set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.Set[f.Name] = true })
	if o.Output != auto.FormatTable && o.Output != auto.FormatJSON {
		return o, cmdRun, &ops.UsageError{Problem: fmt.Sprintf("unknown output format %q", o.Output), Hint: "use -o table or -o json"}
	}
	switch {
	case help:
		return o, cmdHelp, nil
	case showVersion, len(o.Args) == 1 && o.Args[0] == "version":
		return o, cmdVersion, nil
	case len(o.Args) > 0 && o.Args[0] == "completion":
		return o, cmdCompletion, nil
	}
	return o, cmdRun, nil
}

// flagSet is drainctl's flags, parsed into o (and help, showVersion).
func flagSet(o *app.Options, help, showVersion *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("drainctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(help, "help", false, "")
	fs.BoolVar(help, "h", false, "")
	fs.BoolVar(showVersion, "version", false, "")
	fs.BoolVar(&o.Auto, "auto", false, "")
	fs.StringVar(&o.Config, "config", "", "")
	fs.StringVar(&o.LegacyConfig, "config-path", "", "")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&o.Context, "context", "", "")
	fs.StringVar(&o.Output, "output", auto.FormatTable, "")
	fs.StringVar(&o.Output, "o", auto.FormatTable, "")
	fs.StringVar(&o.LogFile, "log-file", "", "")
	fs.BoolVar(&o.Demo, "demo", false, "")
	fs.IntVar(&o.DemoNodes, "demo-nodes", 12, "")
	fs.Int64Var(&o.DemoSeed, "demo-seed", 1, "")
	fs.Float64Var(&o.DemoScale, "demo-scale", 1, "")
	fs.StringVar(&o.DemoFault, "demo-fault", "", "")
	fs.StringVar(&o.Listen, "listen", "", "")
	fs.BoolVar(&o.DryRun, "dry-run", false, "")
	fs.BoolVar(&o.Force, "force", false, "")
	fs.BoolVar(&o.DisableEviction, "disable-eviction", false, "")
	fs.BoolVar(&o.DeleteEmptyDir, "delete-emptydir-data", false, "")
	fs.BoolVar(&o.IgnoreDaemonSets, "ignore-daemonsets", true, "")
	fs.BoolVar(&o.AllowControlPlane, "allow-control-plane", false, "")
	fs.BoolVar(&o.AllowLastNode, "allow-last-node", false, "")
	fs.BoolVar(&o.ColdMigrateRunning, "cold-migrate-running", false, "")
	fs.Func("skip-vm", "", func(v string) error {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("--skip-vm needs a VM name or ID")
		}
		o.SkipVMs = append(o.SkipVMs, v)
		return nil
	})
	fs.Func("override-vm-policy", "", func(v string) error {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("--override-vm-policy needs a VM name or ID")
		}
		o.OverrideVMPolicies = append(o.OverrideVMPolicies, v)
		return nil
	})
	fs.DurationVar(&o.Timeout, "timeout", 0, "")
	fs.IntVar(&o.MaxParallel, "max-parallel", 0, "")
	fs.StringVar(&o.To, "to", "", "")
	fs.StringVar(&o.Reason, "reason", "", "")
	fs.BoolVar(&o.ReadOnly, "readonly", false, "")
	fs.BoolVar(&o.Daemon, "daemon", false, "")
	fs.BoolVar(&o.Proxy, "proxy", false, "")
	fs.BoolVar(&o.Controller, "controller", false, "")
	fs.IntVar(&o.Count, "count", 0, "")
	fs.StringVar(&o.Node, "node", "", "")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", "", "")
	fs.StringVar(&o.Selector, "selector", "", "")
	fs.StringVar(&o.Selector, "l", "", "")
	o.Parallel = 1
	fs.Func("parallel", "", func(v string) error {
		n, pct := strings.CutSuffix(strings.TrimSpace(v), "%")
		i, err := strconv.Atoi(n)
		switch {
		case err != nil || i < 1 || (pct && i > 100):
			return fmt.Errorf("--parallel %q: a number of nodes (4) or a share of them (10%%)", v)
		case pct:
			o.ParallelPercent = i
		default:
			o.Parallel = i
		}
		return nil
	})
	fs.StringVar(&o.SpreadBy, "spread-by", "", "")
	fs.StringVar(&o.GateCmd, "gate-cmd", "", "")
	fs.StringVar(&o.GatePrometheus, "gate-prometheus", "", "")
	fs.StringVar(&o.GateAlerts, "gate-alerts", "", "")
	fs.StringVar(&o.Order, "order", "", "")
	fs.StringVar(&o.Exec, "exec", "", "")
	fs.BoolVar(&o.WaitReady, "wait-ready", false, "")
	fs.BoolVar(&o.ReturnVMs, "return-vms", false, "")
	fs.StringVar(&o.OnFailure, "on-failure", "stop", "")
	fs.StringVar(&o.Campaign, "campaign", "", "")
	fs.StringVar(&o.Window, "window", "", "")
	fs.StringVar(&o.Undrainable, "undrainable", "", "")
	fs.DurationVar(&o.NodeDeadline, "node-deadline", 0, "")
	fs.StringVar(&o.FenceCmd, "fence-cmd", "", "")
	fs.BoolVar(&o.ConfirmFenced, "confirm-fenced", false, "")
	fs.BoolVar(&o.AcceptDiskLoss, "accept-disk-loss", false, "")
	fs.BoolVar(&o.Resume, "resume", false, "")
	fs.StringVar(&o.GatePromTokenFile, "gate-prometheus-token-file", "", "")
	fs.StringVar(&o.GatePromCAFile, "gate-prometheus-ca-file", "", "")
	return fs
}
