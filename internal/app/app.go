// Package app is drainctl's composition root: it turns the parsed command line into a mode
// (the TUI, --auto, a daemon, the controller, the proxy, the simulator), connects the engine
// to a cluster (a real one, or the simulated one of --demo: only this package knows the
// simulator), and decides exit codes. main.go parses flags; everything else starts here.
package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/drainctl/drainctl/internal/app/metrics"
	"github.com/drainctl/drainctl/internal/controllers/cloudpool"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/config"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/opcmd"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
	"github.com/drainctl/drainctl/ui"
	"github.com/drainctl/drainctl/ui/auto"
)

// Options are the parsed command line (flags.go binds each flag's row to its field): the
// mode, then one group per section of --help.
type Options struct {
	Auto, Demo, ReadOnly bool
	Help, Version        bool
	Output               string
	Args                 []string    // the verb and its arguments
	Count                int         // recommend, scale-down: how many candidates
	Verb                 auto.Params // the verbs' own flags (ui/auto's verb rows)
	Conn                 ConnFlags
	Sim                  SimFlags
	Serve                ServeFlags
	Op                   OpFlags
	// Set names the flags given on the command line (a flag's default is not a request).
	Set map[string]bool
}

// ConnFlags say where the cluster is and where the client's logs go.
type ConnFlags struct {
	Config, LegacyConfig string
	Kubeconfig, Context  string
	LogFile              string
}

// SimFlags make the simulated cluster (--demo, sim serve).
type SimFlags struct {
	Nodes int
	Seed  int64
	Scale float64
	Fault string
}

// ServeFlags are the long-running modes' (daemon, proxy, controller, sim serve).
type ServeFlags struct {
	Daemon, Proxy, Controller bool
	Node, MetricsAddr, Listen string
}

// OpFlags are every operation's: the run, and the overrides of a safety rule.
type OpFlags struct {
	DryRun, Force, DisableEviction, DeleteEmptyDir, IgnoreDaemonSets bool
	AllowControlPlane, AllowLastNode, IgnoreFailoverRoom             bool
	ColdMigrateRunning                                               bool
	SkipVMs                                                          []string
	OverrideVMPolicies                                               []string
	Timeout                                                          time.Duration
	MaxParallel                                                      int
	To, Reason                                                       string
}

// Run runs the mode the options ask for until it ends or ctx is cancelled. The error
// carries the exit code (ExitCodeOf).
func Run(ctx context.Context, o Options, stdout, stderr io.Writer, getenv func(string) string) error {
	if err := oneMode(o); err != nil {
		return err
	}
	path, explicit := o.Conn.Config, o.Conn.Config != ""
	if !explicit {
		path = config.DefaultPath()
	}
	cfg, err := config.Load(path, explicit)
	if err != nil {
		return err
	}
	for _, w := range config.Warnings(path, cfg) {
		text.Fprintf(stderr, "drainctl: warning: %s\n", w)
	}
	for flag, tmpl := range map[string]string{"fence-cmd": o.Verb.Recover.FenceCmd, "exec": o.Verb.Roll.Exec,
		"gate-cmd": o.Verb.Roll.Gates.Cmd} {
		if opts := opcmd.LiteralSecrets(tmpl); len(opts) > 0 {
			text.Fprintf(stderr, "drainctl: warning: --%s %s\n", flag, config.LiteralSecretWarning(opts))
		}
	}
	var legacy *model.OpenStackConfig
	if o.Conn.LegacyConfig != "" {
		l, err := config.LoadLegacy(o.Conn.LegacyConfig)
		if err != nil {
			return err
		}
		legacy = &l
	}
	if err := redirectLogs(o.Conn.LogFile); err != nil {
		return err
	}
	if len(o.Args) == 2 && o.Args[0] == "sim" && o.Args[1] == "serve" {
		return SimServe(ctx, o, firstNonBlank(o.Serve.Listen, "127.0.0.1:0"), stdout)
	}
	if o.Demo && (o.Sim.Nodes < 5 || o.Sim.Nodes > 5000) {
		return &ops.UsageError{Problem: fmt.Sprintf("--demo-nodes %d is out of range", o.Sim.Nodes), Hint: "use 5 to 5000 nodes"}
	}
	if o.Op.Timeout > 0 {
		cfg.Timeouts.Operation = model.Duration(o.Op.Timeout)
	}
	if o.Op.MaxParallel > 0 {
		cfg.Concurrency.Nodes = o.Op.MaxParallel
	}
	pol, err := policyOptions(cfg, o)
	if err != nil {
		return err
	}
	env := env{o: o, cfg: cfg, legacy: legacy, pol: pol, stdout: stdout, stderr: stderr, getenv: getenv}
	switch {
	case o.Serve.Daemon:
		return serve(ctx, env, daemonMode)
	case o.Serve.Proxy:
		return serve(ctx, env, proxyMode)
	case o.Serve.Controller:
		return serve(ctx, env, controllerMode)
	case !o.Auto:
		return runTUI(ctx, env)
	}
	return runAuto(ctx, env)
}

// env is what every mode starts from.
type env struct {
	o      Options
	cfg    model.Config
	legacy *model.OpenStackConfig
	pol    policy.Options
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	met    *metrics.Metrics // the in-cluster modes' metrics (serve)
}

func (e env) connect(ctx context.Context, progress io.Writer, mod func(*ConnectOptions)) (*Cluster, error) {
	co := ConnectOptions{Conn: e.o.Conn, Demo: e.o.Demo, Sim: e.o.Sim}
	if mod != nil {
		mod(&co)
	}
	synced := tuneMemory(e.getenv)
	cl, err := Connect(ctx, co, e.cfg, e.legacy, progress, e.getenv)
	if err != nil {
		synced()
		return nil, err
	}
	afterSync(ctx, cl, synced)
	return cl, nil
}

func runTUI(ctx context.Context, e env) error {
	// Each connection has its own context: switching kube contexts (:ctx) stops the old
	// one's informers.
	connCtx, stopConn := context.WithCancel(ctx)
	var mu sync.Mutex // stopConn changes when a switch connects
	var cl *Cluster
	defer func() {
		mu.Lock()
		stopConn()
		mu.Unlock()
		if cl != nil {
			cl.Stopped() // the demo's controller, stopped with the connection, records where it was
		}
	}()
	cl, err := e.connect(connCtx, io.Discard, func(co *ConnectOptions) { co.Maintenances, co.NodesFirst = true, true })
	if err != nil {
		return err
	}
	roll, err := campaign.Configured(campaign.Options{}, e.cfg.Campaign)
	if err != nil {
		return err
	}
	o := ui.Options{Policy: e.pol, Groups: e.cfg.Policy.GroupRules(), Refresh: e.cfg.RefreshInterval.D(), ReadOnly: e.o.ReadOnly,
		Campaign:     roll,
		Maintenances: cl.Maintenances, Where: cl.Where, Summary: e.stderr, Command: e.command()} // the header says DEMO
	notices := cl.Notices // the demo's automatic recovery's, and the webhook's failures
	if notices == nil {
		notices = make(chan model.Notice, 16)
	}
	o.Notices = notices
	if cl.Demo != nil {
		o.Machines, o.AutoRecovery = cl.Demo, cl.Notices != nil
	}
	hook, stopHook, err := e.webhook(ctx, func(n model.Notice, err error) {
		select { // said on the status line
		case notices <- model.Notice{Kind: model.NoticeWebhookFailed, Message: webhookFailed(n, err)}:
		default:
		}
	})
	if err != nil {
		return &ops.UsageError{Problem: err.Error()}
	}
	defer stopHook()
	o.Observe = campaignNotices(hook, nil)
	if !e.o.Demo {
		o.Contexts = kube.Contexts(kube.Options{Kubeconfig: firstNonBlank(e.o.Conn.Kubeconfig, e.cfg.Kubernetes.Kubeconfig)})
		o.Switch = func(ctx context.Context, name string) (ui.Switched, error) {
			next := e
			next.o.Conn.Context = name
			nextCtx, stop := context.WithCancel(ctx)
			cl, err := next.connect(nextCtx, io.Discard, func(co *ConnectOptions) { co.Maintenances, co.NodesFirst = true, true })
			if err != nil {
				stop()
				return ui.Switched{}, err
			}
			mu.Lock()
			stopConn()
			stopConn = stop
			mu.Unlock()
			return ui.Switched{Engine: cl.Engine, Where: cl.Where, Maintenances: cl.Maintenances}, nil
		}
	}
	return ui.Run(ctx, cl.Engine, o)
}

func runAuto(ctx context.Context, e env) error {
	verb, args := "evacuate", []string(nil)
	if len(e.o.Args) > 0 {
		verb, args = e.o.Args[0], e.o.Args[1:]
	} else {
		args = []string{firstNonBlank(e.getenv("NODE_NAME"), hostname())}
	}
	if !auto.KnownVerb(verb) {
		return &ops.UsageError{Problem: fmt.Sprintf("unknown verb %q", verb), Hint: "the verbs are: " + auto.Verbs()}
	}
	if err := checkAutoFlags(verb, args, e.o); err != nil {
		return err
	}
	alerts, err := e.alertGate()
	if err != nil {
		return err
	}
	cl, err := e.connect(ctx, e.stderr, nil)
	if err != nil {
		return err
	}
	a := &auto.Auto{Engine: cl.Engine, DryRun: e.o.Op.DryRun, JSON: e.o.Output == auto.FormatJSON,
		Stdout: e.stdout, Stderr: e.stderr, Count: e.o.Count, Demo: e.o.Demo,
		Run: ops.RunOptions{
			Policy:         e.pol,
			Why:            e.o.Op.Reason,
			MigrateParams:  ops.MigrateParams{To: e.o.Op.To},
			UncordonParams: ops.UncordonParams{ForceCompute: e.o.Op.Force, ReturnVMs: e.o.Verb.ReturnVMs},
			RecoverParams:  ops.RecoverParams{FenceCmd: e.o.Verb.Recover.FenceCmd, ConfirmFenced: e.o.Verb.Recover.ConfirmFenced},
		}}
	if e.o.Set["owner-lead"] {
		a.Run.OwnerLead = &e.o.Verb.OwnerLead
	}
	if a.Campaign, err = campaign.Configured(e.o.Verb.Roll.Options, e.cfg.Campaign); err != nil {
		return err
	}
	a.Campaign.Run, a.Campaign.ReturnVMs, a.Campaign.Gates.Alerts = a.Run, e.o.Verb.ReturnVMs, alerts
	if cl.PoolURL != "" {
		a.Pool = cloudpool.New(cl.PoolURL, e.cfg.CloudPool.BackendTimeout.D())
	}
	hook, stopHook, err := e.webhook(
		ctx,
		func(n model.Notice, err error) { text.Fprintf(e.stderr, "drainctl: %s\n", webhookFailed(n, err)) },
	)
	if err != nil {
		return &ops.UsageError{Problem: err.Error()}
	}
	defer stopHook()
	var met *metrics.Metrics
	if e.o.Serve.MetricsAddr != "" { // a campaign run as a Job, scraped: its notices and moves counted
		var stopMetrics func()
		if met, stopMetrics, err = e.serveMetrics(); err != nil {
			return err
		}
		defer stopMetrics()
		met.SetReady(true)
	}
	a.Observe = campaignNotices(hook, met)
	return a.Do(ctx, verb, args)
}

// oneMode refuses two modes at once (--daemon --proxy): which one would run must not be a
// silent precedence.
func oneMode(o Options) error {
	var modes []string
	for _, m := range []struct {
		on   bool
		flag string
	}{{o.Auto, "--auto"}, {o.Serve.Daemon, "--daemon"}, {o.Serve.Proxy, "--proxy"}, {o.Serve.Controller, "--controller"}} {
		if m.on {
			modes = append(modes, m.flag)
		}
	}
	if len(modes) > 1 {
		return &ops.UsageError{Problem: "one mode at a time: " + strings.Join(modes, " and ") + " were both given",
			Hint: "run one drainctl per mode (the deploy/ manifests run each on its own)"}
	}
	return nil
}

// policyOptions combines config.toml's policy with the command line's overrides.
func policyOptions(cfg model.Config, o Options) (policy.Options, error) {
	p, err := policy.FromConfig(cfg)
	if err != nil {
		return p, &ops.UsageError{Problem: "config: " + err.Error()}
	}
	p.Force, p.DisableEviction = o.Op.Force, o.Op.DisableEviction
	p.IgnoreDaemonSets = p.IgnoreDaemonSets && o.Op.IgnoreDaemonSets
	p.DeleteEmptyDirData = p.DeleteEmptyDirData || o.Op.DeleteEmptyDir
	p.AllowControlPlane, p.AllowLastNode = o.Op.AllowControlPlane, o.Op.AllowLastNode
	p.IgnoreFailoverRoom = o.Op.IgnoreFailoverRoom
	p.ColdMigrateRunning, p.SkipVMs = o.Op.ColdMigrateRunning, o.Op.SkipVMs
	p.OverrideVMPolicies = o.Op.OverrideVMPolicies
	p.AcceptDiskLoss = o.Verb.Recover.AcceptDiskLoss
	return p, nil
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

// firstNonBlank is the first string that is not empty or spaces (a NODE_NAME of " " is unset).
func firstNonBlank(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// command is drainctl as this process reaches its cluster (its configuration and
// kubeconfig), for the commands a view prints; the view adds the context it shows.
func (e env) command() string {
	c := "drainctl"
	if e.o.Conn.Config != "" {
		c += " --config " + text.ShellWord(e.o.Conn.Config)
	}
	if e.o.Conn.LegacyConfig != "" {
		c += " --config-path " + text.ShellWord(e.o.Conn.LegacyConfig)
	}
	if e.o.Conn.Kubeconfig != "" {
		c += " --kubeconfig " + text.ShellWord(e.o.Conn.Kubeconfig)
	}
	return c
}
