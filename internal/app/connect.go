package app

// Connect: the engine on a real cluster (kubeconfig, OpenStack credentials, in that order of
// trust) or on the simulated one of --demo, through the same clients.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/internal/notify"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/answers"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
	"github.com/drainctl/drainctl/text"
)

// ConnectOptions select the cluster.
type ConnectOptions struct {
	Conn ConnFlags
	Demo bool // the simulated cluster, made as Sim says
	Sim  SimFlags
	// Role: a mode that runs once per cluster (drainctl-controller, drainctl-proxy). Its
	// engine's holder is role/instance and it takes over the leases of the role's previous
	// instance; without one, every process is a holder of its own (ops.DefaultHolder).
	Role string
	// Maintenances: also watch NodeMaintenance resources (the TUI, the controller). With
	// --demo the simulated cluster runs the controller too.
	Maintenances bool
	// NodesFirst returns once the nodes are read; pods and PDBs go on arriving (the TUI).
	NodesFirst bool
}

// Cluster is what Connect built.
type Cluster struct {
	Engine *ops.Engine
	Kube   *kube.Client
	// PoolURL is the cloudpool in front of the nodes' machines: [cloudpool] url, or with
	// --demo a simulated pool holding every worker's machine; "" when there is none.
	PoolURL string
	// Maintenances are the NodeMaintenance resources, when asked for and the CRD is
	// installed (else nil, and MaintenancesErr says why).
	Maintenances    ops.Maintenances
	MaintenancesErr error
	// Where is the cluster, for the TUI's header.
	Where model.Where
	// Demo is the simulated cluster of --demo (its machines can die), nil otherwise.
	Demo *sim.Demo
	// Notices are what the demo's automatic recovery tells the person on call (nil elsewhere).
	Notices chan model.Notice
	// background: what the connection runs besides the engine (the demo's NodeMaintenance
	// controller); Stopped waits for it once the connection's context has ended.
	background sync.WaitGroup
}

// Stopped waits, after the connection's context has ended, for what it ran in the background
// to stop at a safe point (an operation the demo's controller was running records where).
func (cl *Cluster) Stopped() { cl.background.Wait() }

// demoFence is the demo's fence command: its machines have no BMC, and one :kill powered off
// stays off until :revive (which a recovery notices: the node turns Ready).
const demoFence = "echo {node} is off: the demo machine was powered off by :kill"

// demoRecovery is the demo's [recover]: automatic recovery on, fenced by demoFence, unless
// the configuration turns it on with a fence of its own. The TUI's X keeps the configuration
// as it is (a fence command or K, the operator's word).
func demoRecovery(cfg model.Config) model.Config {
	if !cfg.Recover.Automatic {
		cfg.Recover.Automatic, cfg.Recover.FenceCmd = true, demoFence
	}
	return cfg
}

// demoProactive is the demo's [proactive]: node-problem-detector's KernelDeadlock and
// ReadonlyFilesystem evacuate the node, unless the configuration names conditions of its own.
func demoProactive(cfg model.Config) model.Config {
	if len(cfg.Proactive.Conditions) == 0 {
		cfg.Proactive = model.ProactiveConfig{Conditions: []string{"KernelDeadlock", "ReadonlyFilesystem"}, Action: model.ProactiveEvacuate}
	}
	return cfg
}

// demoReserve is the demo's [recover] reserve_label, unless the configuration names one:
// :reserve NODE labels a node the failover reserve.
func demoReserve(cfg model.Config) model.Config {
	if cfg.Recover.ReserveLabel == "" {
		cfg.Recover.ReserveLabel = sim.DemoReserveLabel
	}
	return cfg
}

// demoReturn is the demo's [return]: a canary proves each returning host, so a person sees
// it, unless the configuration sets a canary of its own.
func demoReturn(cfg model.Config) model.Config {
	if !cfg.Return.Canary {
		r := &cfg.Return
		r.Canary, r.Image, r.Flavor, r.Network = true, sim.DemoCanaryImage, sim.DemoCanaryFlavor, sim.DemoCanaryNetwork
	}
	return cfg
}

// kubeOptions is where the Kubernetes API server is, from the flags and the configuration.
func kubeOptions(c ConnFlags, cfg model.Config) kube.Options {
	return kube.Options{Kubeconfig: firstNonBlank(c.Kubeconfig, cfg.Kubernetes.Kubeconfig),
		Context: firstNonBlank(c.Context, cfg.Kubernetes.Context), QPS: cfg.Kubernetes.QPS, Burst: cfg.Kubernetes.Burst}
}

// Connect builds the engine: the Kubernetes informers (synced) and, when configured,
// an authenticated Nova client. OpenStack configured but unreachable is an error, never a
// silent fallback to Kubernetes alone. With --demo both sides are the simulated cluster,
// reached through the same clients.
func Connect(ctx context.Context, o ConnectOptions, cfg model.Config, legacy *model.OpenStackConfig,
	stderr io.Writer, getenv func(string) string) (*Cluster, error) {
	var cs kubernetes.Interface
	var dyn dynamic.Interface
	var demoStore *sim.Maintenances
	apiHost := "the simulated cluster"
	where := model.Where{Demo: o.Demo}
	poolURL := cfg.CloudPool.URL
	var simulated *sim.Demo
	heard := &answers.Listeners{} // the API server's answers, for the pace (none from the demo's, in process)
	// drainctl's own namespace: a pod's (the chart sets DRAINCTL_NAMESPACE), else the configuration's.
	namespace := firstNonBlank(getenv("DRAINCTL_NAMESPACE"), cfg.Kubernetes.Namespace)
	if err := model.CheckNamespace(namespace); err != nil {
		return nil, &ops.UsageError{Problem: "DRAINCTL_NAMESPACE " + err.Error(), Hint: "a Kubernetes namespace name, or unset"}
	}
	if o.Demo {
		demo, err := sim.StartDemo(sim.DemoOptions{Nodes: o.Sim.Nodes, Seed: o.Sim.Seed, Scale: o.Sim.Scale})
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, demo.Close)
		simulated = demo
		if err := demo.World.ApplyFaultSpec(o.Sim.Fault); err != nil {
			return nil, &ops.UsageError{Problem: err.Error(), Hint: "see drainctl --help for --demo-fault"}
		}
		cs = demo.Kube.Clientset
		demoStore = sim.NewMaintenances()
		cfg = demoReserve(demoReturn(cfg))
		env := envMap(demo.Nova.Env())
		getenv, legacy, cfg.OpenStack = func(k string) string { return env[k] }, nil, model.OpenStackConfig{}
	} else {
		kubeOpts := kubeOptions(o.Conn, cfg)
		kubeOpts.Answers = heard
		restCfg, err := kube.RESTConfig(kubeOpts)
		if err != nil {
			return nil, err
		}
		if cs, err = kube.NewClientset(restCfg); err != nil {
			return nil, err
		}
		if dyn, err = dynamic.NewForConfig(restCfg); err != nil {
			return nil, err
		}
		apiHost = "Kubernetes at " + restCfg.Host
		where.KubeContext, where.KubeServer = kube.ContextName(kubeOpts), restCfg.Host
	}
	creds, err := nova.ResolveCredentials(legacy, cfg.OpenStack, getenv)
	if err != nil {
		return nil, err
	}
	if creds != nil {
		where.Cloud, where.Region = creds.Cloud, creds.Region
		if u, err := url.Parse(creds.Auth.IdentityEndpoint); err == nil {
			where.AuthHost = u.Host
		}
	}
	if !o.Demo {
		if err := kube.Ping(ctx, cs, 10*time.Second); err != nil {
			return nil, unreachable(apiHost, err)
		}
	}
	kinv := kube.NewInventory(cs)
	// A large cluster's first LIST takes a while; a dead API server should not take forever.
	// The TUI starts once the nodes are read (the pods stream in on screen); the rest wait
	// for everything.
	start := kinv.Start
	if o.NodesFirst {
		start = kinv.StartNodes
	}
	if err := start(ctx, max(cfg.Timeouts.API.D(), 2*time.Minute)); err != nil {
		return nil, unreachable(apiHost, err)
	}
	var nc ops.Nova
	if creds == nil {
		fmt.Fprintln(stderr, "drainctl: OpenStack is not configured: working on Kubernetes alone (no VMs)")
	} else {
		c, err := nova.Connect(ctx, creds, nova.Options{Timeout: cfg.Timeouts.API.D(), CPUAllocationRatio: cfg.ScaleDown.CPUAllocationRatio,
			FullReadEvery: cfg.FullRefreshInterval.D()})
		if err != nil {
			return nil, unreachable("OpenStack", err)
		}
		if c.PlacementMissing() {
			fmt.Fprintf(stderr, "drainctl: Placement is not in the Keystone catalog: capacity comes from os-hypervisors "+
				"(microversion %s; it may lag the scheduler's)\n", c.Microversion())
		}
		nc = c
	}
	if o.Demo && poolURL == "" {
		var machines []string
		for _, n := range kinv.Snapshot().Nodes {
			if !n.IsControlPlane() {
				machines = append(machines, n.Name)
			}
		}
		pool, err := sim.ServeCloudPool(machines...)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, pool.Close)
		poolURL = pool.URL
	}
	eo := ops.EngineOptions{Poll: cfg.Timeouts.Poll.D(), StallAfter: cfg.Policy.StallAfter.D(),
		OnStall: cfg.Policy.OnStall, Attempts: cfg.Policy.MigrationAttempts}
	if o.Role != "" {
		eo.Holder, eo.Successor = ops.SingletonHolder(o.Role)
	}
	// The owners' own webhooks ([notify.projects]): each VM owner told ahead, posted to their
	// project's. A failure is a line on stderr (the TUI's is discarded: the notice is in the
	// VM's metadata all the same).
	owners, err := notify.NewProjects(cfg.Notify, func(n model.Notice, err error) {
		text.Fprintf(stderr, "drainctl: the [notify.projects] webhook of project %q did not take the notice of VM %q: %v\n",
			n.Project, n.VM, err)
	})
	if err != nil {
		return nil, &ops.UsageError{Problem: err.Error()}
	}
	if owners != nil {
		owners.Run(ctx)
		eo.OwnerTold = owners.Notify
	}
	if o.Demo && cfg.Timeouts.Poll == model.DefaultConfig().Timeouts.Poll {
		eo.Poll = 500 * time.Millisecond // the simulator is local: follow migrations closely
	}
	kc := kube.NewClient(cs, kinv).InNamespace(namespace)
	kc.Answers = heard
	cl := &Cluster{Engine: ops.NewEngine(kc, nc, cfg, eo), Kube: kc, PoolURL: poolURL, Where: where, Demo: simulated}
	switch {
	case !o.Maintenances:
	case demoStore != nil:
		// The simulated cluster runs what a real one would: the NodeMaintenance controller.
		cl.Maintenances = demoStore
		ceo := eo
		ceo.Holder, ceo.Successor = ops.SingletonHolder("drainctl-controller")
		pol, err := policy.FromConfig(cfg)
		if err != nil { // validated by Run already; kept so that a new rule cannot slip through
			return nil, &ops.UsageError{Problem: "config: " + err.Error()}
		}
		mc := &controllers.MaintenanceController{Engine: ops.NewEngine(kc, nc, cfg, ceo), Store: demoStore,
			Run: ops.RunOptions{Policy: pol}, Resync: 5 * time.Second, Events: kc}
		// Owned by the connection (Stopped waits for it). Serve returns only once ctx ends;
		// what fails on the way is written in each NodeMaintenance's status, which the TUI shows.
		cl.background.Add(2)
		go func() { defer cl.background.Done(); _ = mc.Serve(ctx) }()
		// And automatic recovery, as a controller with [recover] automatic would.
		rcfg := demoRecovery(cfg)
		reo := eo
		reo.Holder, reo.Successor = ops.SingletonHolder("drainctl-controller")
		cl.Notices = make(chan model.Notice, 16)
		rc := &controllers.Recoverer{Engine: ops.NewEngine(kc, nc, rcfg, reo), Policy: pol, Events: kc, Resync: 2 * time.Second,
			Notify: func(n model.Notice) {
				select {
				case cl.Notices <- n:
				default: // the screen shows the newest; the Events on the node keep them all
				}
			}}
		go func() { defer cl.background.Done(); _ = rc.Serve(ctx) }()
		// And [proactive], so that :condition NODE KernelDeadlock shows a degrading host emptied.
		pc := &controllers.Proactive{Engine: ops.NewEngine(kc, nc, demoProactive(cfg), reo), Policy: pol, Events: kc,
			Resync: 2 * time.Second, Notify: rc.Notify}
		cl.background.Add(1)
		go func() { defer cl.background.Done(); _ = pc.Serve(ctx) }()
		// And the failover reserve, held as :reserve labels it.
		keeper := &controllers.ReserveKeeper{Engine: rc.Engine, Resync: 2 * time.Second}
		cl.background.Add(1)
		go func() { defer cl.background.Done(); _ = keeper.Serve(ctx) }()
	default:
		store := kube.NewMaintenances(dyn)
		if err := store.Start(ctx, max(cfg.Timeouts.API.D(), time.Minute)); err != nil {
			cl.MaintenancesErr = err
		} else {
			cl.Maintenances = store
		}
	}
	return cl, nil
}

// unreachableError is a cluster drainctl was configured for but could not use: exit 2.
type unreachableError struct {
	what string
	err  error
}

func (e *unreachableError) Error() string { return fmt.Sprintf("cannot reach %s: %v", e.what, e.err) }
func (e *unreachableError) Unwrap() error { return e.err }

func unreachable(what string, err error) error { return &unreachableError{what, err} }

// SimServe runs the simulated Nova and Keystone alone, for the openstack CLI or any
// gophercloud program, until interrupted.
func SimServe(ctx context.Context, o Options, listen string, stdout io.Writer) error {
	demo, err := sim.StartDemo(sim.DemoOptions{Nodes: o.Sim.Nodes, Seed: o.Sim.Seed, Scale: o.Sim.Scale})
	if err != nil {
		return err
	}
	demo.Close() // the generated world without its first server: serve it where asked
	srv, err := sim.Serve(demo.World, listen)
	if err != nil {
		return &ops.UsageError{Problem: fmt.Sprintf("cannot listen on %s: %v", listen, err)}
	}
	defer srv.Close()
	if err := demo.World.ApplyFaultSpec(o.Sim.Fault); err != nil {
		return &ops.UsageError{Problem: err.Error()}
	}
	fmt.Fprintf(stdout, "# simulated Nova + Keystone with %d compute hosts; interrupt to stop\n", len(demo.Computes))
	for _, kv := range srv.Env() {
		fmt.Fprintf(stdout, "export %s\n", kv)
	}
	fmt.Fprintln(stdout, "# on stdin: kill HOST (its nova-compute dies, as with a power loss), revive HOST (it restarts)")
	go simCommands(os.Stdin, stdout, demo.World, demo.Computes)
	<-ctx.Done()
	return nil
}

// simCommands reads sim serve's commands, one per line: kill HOST, revive HOST.
func simCommands(in io.Reader, out io.Writer, w *sim.World, hosts []string) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		verb, host, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		host = strings.TrimSpace(host)
		switch {
		case verb == "":
			continue
		case verb != "kill" && verb != "revive":
			fmt.Fprintf(out, "# unknown command %q: kill HOST or revive HOST\n", verb)
			continue
		case !slices.Contains(hosts, host):
			fmt.Fprintf(out, "# no compute host %q\n", host)
			continue
		case verb == "kill":
			w.KillHost(host)
		default:
			w.ReviveHost(host)
		}
		fmt.Fprintf(out, "# %s: %s\n", host, map[string]string{"kill": "dead", "revive": "running again"}[verb])
	}
}

func envMap(kvs []string) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
