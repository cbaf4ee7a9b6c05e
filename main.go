// Command drainctl empties, fixes and removes nodes of a mixed Kubernetes + OpenStack Nova
// cluster: cordon and disable nova-compute, evict pods and live-migrate VMs, and undo it all.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/cloudpool"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/metrics"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/proxy"
	"github.com/drainctl/drainctl/ops/wire"
	"github.com/drainctl/drainctl/ui"
	"github.com/drainctl/drainctl/ui/plain"
)

// Set by the linker: -X main.version=... -X main.commit=... -X main.date=...
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

const usage = `drainctl: empty, fix and remove nodes of a Kubernetes + OpenStack Nova cluster.

Usage:
  drainctl [flags]                      the interactive view (TUI)
  drainctl --auto VERB [ARGS] [flags]   headless, for scripts and CI
  drainctl --daemon [--node NODE]       follow cordon/uncordon: disable nova-compute and
                                        live-migrate VMs off cordoned nodes, re-enable after
  drainctl --proxy [--listen ADDR]      serve the cloudpool API in front of [cloudpool] url:
                                        scale-downs empty and delete a safe node first
  drainctl --controller                 reconcile NodeMaintenance resources (leader-elected):
                                        created, empty the node; deleted, put it back

Verbs (--auto):
  list                 nodes with their hypervisor, VMs and pods (-o json for JSON)
  plan VERB ARGS       what VERB would do: steps and blockers (same as --dry-run)
  cordon NODE...       unschedulable + maintenance taint, nova-compute disabled
  evacuate NODE...     cordon, live-migrate every VM away, evict every pod, verify
  migrate VM... [--to HOST]   live-migrate VMs (the scheduler picks unless --to)
  uncordon NODE...     re-enable nova-compute (if drainctl disabled it), schedulable again
  abort NODE           stop the operation on NODE, abort its migrations in progress
  rollback NODE        abort, then put NODE back as it was before
  doctor               where Kubernetes and Nova disagree (exit 0 when they agree)
  recommend [--count N]   scale-down victims across both layers, cheapest first, and why
                       every other node cannot go
  scale-down [NODE... | --count N]   evacuate, delete the Node and (with [cloudpool] url)
                       terminate its machine; without NODE the top-ranked candidates
  (no verb)            evacuate the node drainctl runs on (NODE_NAME, else the hostname)

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
  --timeout DURATION   bound the whole operation (default timeouts.operation, 2h)
  --max-parallel N     nodes worked at once (default concurrency.nodes, 1)

Simulated cluster (no cluster needed):
  drainctl --demo [--auto VERB]         run on a generated cluster (Kubernetes + Nova)
  drainctl sim serve                    serve the simulated Nova + Keystone and print OS_* variables
  --demo-nodes N       size of the demo cluster (default 12, up to 5000)
  --demo-seed N        the same seed makes the same cluster
  --demo-scale X       simulated seconds per real second (default 1)
  --demo-fault LIST    inject faults, comma-separated: latency=200ms, migrate-500, migrate-409,
                       services-503, no-valid-host, compute-down=HOST, never-converge=VM,
                       fail-migration=VM@PHASE
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

Exit codes: 0 done, 1 failed, 2 usage or configuration error, 3 refused by policy,
4 interrupted (a rerun resumes).
`

// options are the parsed command line.
type options struct {
	help, version, auto  bool
	config, legacyConfig string
	kubeconfig, context  string
	output, logFile      string
	args                 []string // the verb and its arguments

	demo              bool
	demoNodes         int
	demoSeed          int64
	demoScale         float64
	demoFault, listen string

	dryRun, force, disableEviction, deleteEmptyDir, ignoreDaemonSets bool
	allowControlPlane, allowLastNode                                 bool
	timeout                                                          time.Duration
	maxParallel                                                      int
	to, reason                                                       string
	readonly                                                         bool
	daemon, proxy, controller                                        bool
	count                                                            int
	node, metricsAddr                                                string
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		cancel() // first signal: stop at the next safe point
		<-signals
		fmt.Fprintln(os.Stderr, "drainctl: second signal, exiting at once")
		os.Exit(ops.ExitInterrupted)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	cancel()
	os.Exit(code)
}

// run is the whole program; it returns the exit code so that deferred calls run first.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	opts, err := parseArgs(args)
	if err == nil && opts.help {
		fmt.Fprint(stdout, usage)
		return ops.ExitOK
	}
	if err == nil && opts.version {
		fmt.Fprintf(stdout, "drainctl %s (commit %s, built %s)\n", version, commit, date)
		return ops.ExitOK
	}
	if err == nil {
		err = dispatch(ctx, opts, stdout, stderr, getenv)
	}
	if err != nil {
		fmt.Fprintf(stderr, "drainctl: error: %v\n", err)
		if hint := ops.HintOf(err); hint != "" {
			fmt.Fprintf(stderr, "drainctl: hint: %s\n", hint)
		}
	}
	return ops.ExitCodeOf(err)
}

func parseArgs(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("drainctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.help, "help", false, "")
	fs.BoolVar(&o.help, "h", false, "")
	fs.BoolVar(&o.version, "version", false, "")
	fs.BoolVar(&o.auto, "auto", false, "")
	fs.StringVar(&o.config, "config", "", "")
	fs.StringVar(&o.legacyConfig, "config-path", "", "")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "")
	fs.StringVar(&o.context, "context", "", "")
	fs.StringVar(&o.output, "output", plain.FormatTable, "")
	fs.StringVar(&o.output, "o", plain.FormatTable, "")
	fs.StringVar(&o.logFile, "log-file", "", "")
	fs.BoolVar(&o.demo, "demo", false, "")
	fs.IntVar(&o.demoNodes, "demo-nodes", 12, "")
	fs.Int64Var(&o.demoSeed, "demo-seed", 1, "")
	fs.Float64Var(&o.demoScale, "demo-scale", 1, "")
	fs.StringVar(&o.demoFault, "demo-fault", "", "")
	fs.StringVar(&o.listen, "listen", "", "")
	fs.BoolVar(&o.dryRun, "dry-run", false, "")
	fs.BoolVar(&o.force, "force", false, "")
	fs.BoolVar(&o.disableEviction, "disable-eviction", false, "")
	fs.BoolVar(&o.deleteEmptyDir, "delete-emptydir-data", false, "")
	fs.BoolVar(&o.ignoreDaemonSets, "ignore-daemonsets", true, "")
	fs.BoolVar(&o.allowControlPlane, "allow-control-plane", false, "")
	fs.BoolVar(&o.allowLastNode, "allow-last-node", false, "")
	fs.DurationVar(&o.timeout, "timeout", 0, "")
	fs.IntVar(&o.maxParallel, "max-parallel", 0, "")
	fs.StringVar(&o.to, "to", "", "")
	fs.StringVar(&o.reason, "reason", "", "")
	fs.BoolVar(&o.readonly, "readonly", false, "")
	fs.BoolVar(&o.daemon, "daemon", false, "")
	fs.BoolVar(&o.proxy, "proxy", false, "")
	fs.BoolVar(&o.controller, "controller", false, "")
	fs.IntVar(&o.count, "count", 0, "")
	fs.StringVar(&o.node, "node", "", "")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "")
	// Flags may come before or after the verb: parse, take one positional, parse the rest.
	for {
		if err := fs.Parse(args); err != nil {
			return o, &ops.UsageError{Problem: err.Error(), Hint: "run drainctl --help for the flags"}
		}
		if fs.NArg() == 0 {
			break
		}
		o.args = append(o.args, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if o.output != plain.FormatTable && o.output != plain.FormatJSON {
		return o, &ops.UsageError{Problem: fmt.Sprintf("unknown output format %q", o.output), Hint: "use -o table or -o json"}
	}
	return o, nil
}

func dispatch(ctx context.Context, o options, stdout, stderr io.Writer, getenv func(string) string) error {
	path, explicit := o.config, o.config != ""
	if !explicit {
		path = ops.DefaultConfigPath()
	}
	cfg, err := ops.LoadConfig(path, explicit)
	if err != nil {
		return err
	}
	var legacy *model.OpenStackConfig
	if o.legacyConfig != "" {
		l, err := ops.LoadLegacyConfig(o.legacyConfig)
		if err != nil {
			return err
		}
		legacy = &l
	}
	if err := redirectLogs(o.logFile); err != nil {
		return err
	}
	if len(o.args) == 2 && o.args[0] == "sim" && o.args[1] == "serve" {
		return wire.SimServe(ctx, o.wire(), firstOf(o.listen, "127.0.0.1:0"), stdout)
	}
	if o.demo && (o.demoNodes < 5 || o.demoNodes > 5000) {
		return &ops.UsageError{Problem: fmt.Sprintf("--demo-nodes %d is out of range", o.demoNodes), Hint: "use 5 to 5000 nodes"}
	}
	if o.timeout > 0 {
		cfg.Timeouts.Operation = model.Duration(o.timeout)
	}
	if o.maxParallel > 0 {
		cfg.Concurrency.Nodes = o.maxParallel
	}
	pol, err := policyOptions(cfg, o)
	if err != nil {
		return err
	}
	if o.daemon {
		return daemon(ctx, o, cfg, legacy, pol, stderr, getenv)
	}
	if o.proxy {
		return serveProxy(ctx, o, cfg, legacy, pol, stderr, getenv)
	}
	if o.controller {
		return controller(ctx, o, cfg, legacy, pol, stderr, getenv)
	}
	if !o.auto {
		wo := o.wire()
		wo.Maintenances = true
		cl, err := wire.Connect(ctx, wo, cfg, legacy, io.Discard, getenv)
		if err != nil {
			return err
		}
		eng := cl.Engine
		title := ""
		if o.demo {
			title = fmt.Sprintf("demo (%d nodes, simulated)", o.demoNodes)
		}
		return ui.Run(ctx, eng, ui.Options{Policy: pol, Refresh: cfg.RefreshInterval.D(), ReadOnly: o.readonly, Title: title,
			Maintenances: cl.Maintenances})
	}
	verb, args := "evacuate", []string(nil)
	if len(o.args) > 0 {
		verb, args = o.args[0], o.args[1:]
	} else {
		args = []string{firstOf(getenv("NODE_NAME"), hostname())}
	}
	if verb != "list" && verb != "doctor" && verb != "plan" && verb != "recommend" && verb != "scale-down" && !knownVerb(verb) {
		return &ops.UsageError{Problem: fmt.Sprintf("unknown verb %q", verb), Hint: "the verbs are: " + plain.Verbs}
	}
	cl, err := wire.Connect(ctx, o.wire(), cfg, legacy, stderr, getenv)
	if err != nil {
		return err
	}
	eng := cl.Engine
	if verb == "list" {
		snapshot, err := eng.Inventory().Read(ctx)
		if err != nil {
			return err
		}
		return plain.WriteInventory(stdout, snapshot, o.output)
	}
	auto := &plain.Auto{Engine: eng, DryRun: o.dryRun, JSON: o.output == plain.FormatJSON,
		MaxParallel: cfg.Concurrency.Nodes, Stdout: stdout, Stderr: stderr, Count: o.count,
		Run: ops.RunOptions{Policy: pol, Why: o.reason, To: o.to, ForceCompute: o.force}}
	if cl.PoolURL != "" {
		auto.Pool = cloudpool.New(cl.PoolURL, cfg.CloudPool.BackendTimeout.D())
	}
	return auto.Do(ctx, verb, args)
}

// daemon follows cordon and uncordon (nova-kubernetes-drain's daemon mode) until stopped.
func daemon(ctx context.Context, o options, cfg model.Config, legacy *model.OpenStackConfig, pol policy.Options,
	stderr io.Writer, getenv func(string) string) error {
	node := firstOf(o.node, getenv("NODE_NAME"))
	m, stop, err := serveMetrics(o.metricsAddr)
	if err != nil {
		return err
	}
	defer stop()
	cl, err := wire.Connect(ctx, o.wire(), cfg, legacy, stderr, getenv)
	if err != nil {
		return err
	}
	eng, kc := cl.Engine, cl.Kube
	if !eng.NovaConfigured() {
		return &ops.UsageError{Problem: "the daemon moves VMs: it needs OpenStack credentials", Hint: "set OS_CLOUD or OS_* (see --help)"}
	}
	pr := plain.NewPrinter(stderr, nil)
	d := &ops.Daemon{Engine: eng, Node: node, Run: ops.RunOptions{Policy: pol, Why: o.reason}, Events: kc,
		Emit: func(ev ops.Event) { m.Observe(ev); pr.Emit(ev) }}
	m.SetReady(true)
	if node != "" {
		fmt.Fprintf(stderr, "drainctl: daemon following node %s\n", node)
		return d.Serve(ctx) // returns nil once ctx ends, after the operations stopped safely
	}
	fmt.Fprintln(stderr, "drainctl: daemon following every node (leader-elected)")
	err = kube.RunAsLeader(ctx, kc.Clientset(), "drainctl-daemon", ops.DefaultHolder(), func(ctx context.Context) { _ = d.Serve(ctx) })
	if ctx.Err() != nil {
		return nil // stopped by a signal: the operations recorded where they stopped
	}
	return err
}

// controller reconciles NodeMaintenance resources (node-maintenance-operator's mode) until
// stopped; one instance acts at a time (leader election).
func controller(ctx context.Context, o options, cfg model.Config, legacy *model.OpenStackConfig, pol policy.Options,
	stderr io.Writer, getenv func(string) string) error {
	m, stop, err := serveMetrics(o.metricsAddr)
	if err != nil {
		return err
	}
	defer stop()
	wo := o.wire()
	wo.Holder, wo.Maintenances = "drainctl-controller", true // stable: a new pod resumes the old one's work
	cl, err := wire.Connect(ctx, wo, cfg, legacy, stderr, getenv)
	if err != nil {
		return err
	}
	if cl.MaintenancesErr != nil {
		return &ops.UsageError{Problem: cl.MaintenancesErr.Error()}
	}
	pr := plain.NewPrinter(stderr, nil)
	mc := &ops.MaintenanceController{Engine: cl.Engine, Store: cl.Maintenances, Run: ops.RunOptions{Policy: pol, Why: o.reason},
		Events: cl.Kube, Emit: func(ev ops.Event) { m.Observe(ev); pr.Emit(ev) }}
	m.SetReady(true)
	if o.demo {
		return mc.Serve(ctx)
	}
	fmt.Fprintln(stderr, "drainctl: NodeMaintenance controller (leader-elected)")
	err = kube.RunAsLeader(ctx, cl.Kube.Clientset(), "drainctl-controller", ops.DefaultHolder(), func(ctx context.Context) { _ = mc.Serve(ctx) })
	if ctx.Err() != nil {
		return nil // stopped by a signal: the operations recorded where they stopped
	}
	return err
}

// serveProxy serves the cloudpool API in front of the backend pool until stopped
// (kubeaware-cloudpool-proxy's mode), then lets a scale-down in progress stop at a safe point.
func serveProxy(ctx context.Context, o options, cfg model.Config, legacy *model.OpenStackConfig, pol policy.Options,
	stderr io.Writer, getenv func(string) string) error {
	if cfg.CloudPool.URL == "" && !o.demo {
		return &ops.UsageError{Problem: "--proxy needs the backend cloudpool it sits in front of",
			Hint: "set [cloudpool] url in config.toml (e.g. http://cloudpool:9010)"}
	}
	m, stop, err := serveMetrics(o.metricsAddr)
	if err != nil {
		return err
	}
	defer stop()
	wo := o.wire()
	wo.Holder = "drainctl-proxy" // stable across restarts of the proxy's pod: it resumes its own work
	cl, err := wire.Connect(ctx, wo, cfg, legacy, stderr, getenv)
	if err != nil {
		return err
	}
	pr := plain.NewPrinter(stderr, nil)
	p, err := proxy.New(ctx, cl.Engine, proxy.Options{Backend: cl.PoolURL, BackendTimeout: cfg.CloudPool.BackendTimeout.D(),
		Run:  ops.RunOptions{Policy: pol, Why: firstOf(o.reason, "scale-down")},
		Emit: func(ev ops.Event) { m.Observe(ev); pr.Emit(ev) },
		Logf: func(format string, a ...any) { fmt.Fprintf(stderr, "drainctl: proxy: "+format+"\n", a...) }})
	if err != nil {
		return err
	}
	addr := firstOf(o.listen, ":8080")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &ops.UsageError{Problem: fmt.Sprintf("cannot listen on --listen %s: %v", addr, err)}
	}
	srv := &http.Server{Handler: p.Handler(), ReadTimeout: cfg.CloudPool.ClientTimeout.D(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	m.SetReady(true)
	fmt.Fprintf(stderr, "drainctl: cloudpool proxy on %s in front of %s\n", ln.Addr(), cloudpool.Redacted(cl.PoolURL))
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(shutdown) //nolint:errcheck // stopping anyway
	p.Wait()
	return nil
}

// serveMetrics serves /metrics, /healthz and /readyz on addr ("" serves nothing, the
// metrics are still counted).
func serveMetrics(addr string) (*metrics.Metrics, func(), error) {
	m := metrics.New()
	if addr == "" {
		return m, func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, &ops.UsageError{Problem: fmt.Sprintf("cannot listen on --metrics-addr %s: %v", addr, err)}
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
	stop := func() { _ = srv.Shutdown(context.Background()) }
	return m, stop, nil
}

// policyOptions combines config.toml's policy with the command line's overrides.
func policyOptions(cfg model.Config, o options) (policy.Options, error) {
	p, err := policy.FromConfig(cfg.Policy)
	if err != nil {
		return p, &ops.UsageError{Problem: "config: " + err.Error()}
	}
	p.Force, p.DisableEviction = o.force, o.disableEviction
	p.IgnoreDaemonSets = p.IgnoreDaemonSets && o.ignoreDaemonSets
	p.DeleteEmptyDirData = p.DeleteEmptyDirData || o.deleteEmptyDir
	p.AllowControlPlane, p.AllowLastNode = o.allowControlPlane, o.allowLastNode
	return p, nil
}

func (o options) wire() wire.Options {
	return wire.Options{Kubeconfig: o.kubeconfig, Context: o.context, Demo: o.demo, DemoNodes: o.demoNodes,
		DemoSeed: o.demoSeed, DemoScale: o.demoScale, DemoFault: o.demoFault}
}

func knownVerb(v string) bool {
	switch v {
	case "cordon", "evacuate", "migrate", "uncordon", "abort", "rollback":
		return true
	}
	return false
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func redirectLogs(path string) error {
	if path == "" {
		kube.RedirectLogs(io.Discard)
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return &ops.UsageError{Problem: fmt.Sprintf("cannot open --log-file: %v", err)}
	}
	kube.RedirectLogs(f)
	return nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
