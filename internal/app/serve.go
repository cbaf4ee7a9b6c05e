package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/drainctl/drainctl/internal/app/metrics"
	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/internal/controllers/cloudpool"
	"github.com/drainctl/drainctl/internal/controllers/proxy"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/bearer"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/text"
	"github.com/drainctl/drainctl/ui/auto"
)

// mode is one in-cluster mode for the serve skeleton: how it connects, and what it serves.
type mode struct {
	// role: a mode that runs once per cluster; a new pod takes its predecessor's leases over
	// and resumes its work ("" : every process is a holder of its own). maintenances: watch
	// NodeMaintenance resources too.
	role string
	// holder, when set, names the role from the options instead (the per-node daemon's is its
	// node's: the leases it may write name it, deploy/records-policy.yaml).
	holder       func(e env) string
	maintenances bool
	// check refuses bad options before connecting to anything.
	check func(e env) error
	// start prepares the mode on the connected cluster; the returned serve runs until ctx
	// ends and then lets its operations stop at a safe point. election names the leader
	// lease when only one instance may serve at a time ("" serves at once).
	start func(ctx context.Context, e env, cl *Cluster, emit func(ops.Event)) (serve func(context.Context) error, election string,
		err error)
}

// serve is the skeleton every in-cluster mode runs in: metrics and health on --metrics-addr,
// the cluster connection, progress lines on stderr, leader election when asked, and a stop
// on the first signal that waits for the operations to record where they stopped.
func serve(ctx context.Context, e env, m mode) error {
	if m.check != nil {
		if err := m.check(e); err != nil {
			return err
		}
	}
	met, stop, err := e.serveMetrics()
	if err != nil {
		return err
	}
	defer stop()
	role := m.role
	if m.holder != nil {
		role = cmp.Or(m.holder(e), role)
	}
	cl, err := e.connect(ctx, e.stderr, func(co *ConnectOptions) { co.Role, co.Maintenances = role, m.maintenances })
	if err != nil {
		return err
	}
	if cl.Engine != nil {
		met.WatchFleet(cl.Engine) // nodes out, operations, the failover room: from its caches at each scrape
	}
	pr := auto.NewPrinter(e.stderr, nil)
	e.met = met
	run, election, err := m.start(ctx, e, cl, func(ev ops.Event) { met.Observe(ev); pr.Emit(ev) })
	if err != nil {
		return err
	}
	met.SetReady(true)
	if election == "" {
		return run(ctx)
	}
	met.Leading(election, false) // a follower says so: a cluster whose every process waits has no leader
	err = cl.Kube.RunAsLeader(ctx, election, ops.DefaultHolder(),
		func(line string) { text.Fprintf(e.stderr, "drainctl: %s\n", line) },
		func(ctx context.Context) error {
			met.Leading(election, true)
			defer met.Leading(election, false)
			return run(ctx)
		})
	if ctx.Err() != nil {
		return nil // stopped by a signal: the operations recorded where they stopped
	}
	return err
}

// daemonMode follows cordon and uncordon (nova-kubernetes-drain's daemon mode): one node
// (--node or NODE_NAME, as in the DaemonSet), or every node, leader-elected.
var daemonMode = mode{
	holder: func(e env) string {
		if node := firstNonBlank(e.o.Serve.Node, e.getenv("NODE_NAME")); node != "" {
			return ops.NodeDaemonRole(node)
		}
		return ""
	},
	start: func(ctx context.Context, e env, cl *Cluster, emit func(ops.Event)) (func(context.Context) error, string, error) {
		if !cl.Engine.NovaConfigured() {
			return nil, "", &ops.UsageError{
				Problem: "the daemon moves VMs: it needs OpenStack credentials",
				Hint:    "set OS_CLOUD or OS_* (see --help)",
			}
		}
		node := firstNonBlank(e.o.Serve.Node, e.getenv("NODE_NAME"))
		d := &controllers.Daemon{
			Engine: cl.Engine,
			Node:   node,
			Run:    ops.RunOptions{Policy: e.pol, Why: e.o.Op.Reason},
			Events: cl.Kube,
			Emit:   emit,
		}
		if node != "" {
			fmt.Fprintf(e.stderr, "drainctl: daemon following node %s\n", node)
			return d.Serve, "", nil
		}
		fmt.Fprintln(e.stderr, "drainctl: daemon following every node (leader-elected)")
		return d.Serve, "drainctl-daemon", nil
	},
}

// controllerMode reconciles NodeMaintenance resources (node-maintenance-operator's mode),
// leader-elected; a new pod takes its predecessor's leases over and resumes its work.
var controllerMode = mode{role: "drainctl-controller", maintenances: true,
	start: func(ctx context.Context, e env, cl *Cluster, emit func(ops.Event)) (func(context.Context) error, string, error) {
		if cl.MaintenancesErr != nil {
			return nil, "", &ops.UsageError{Problem: cl.MaintenancesErr.Error()}
		}
		mc := &controllers.MaintenanceController{
			Engine: cl.Engine,
			Store:  cl.Maintenances,
			Run:    ops.RunOptions{Policy: e.pol, Why: e.o.Op.Reason},
			Events: cl.Kube,
			Emit:   emit,
		}
		// Automatic recovery ([recover] automatic = true) runs beside it, under the same leader.
		logLine := func(line string) { text.Fprintf(e.stderr, "drainctl: %s\n", line) }
		hook, stopHook, err := e.webhook(ctx, func(n model.Notice, err error) {
			e.met.WebhookFailed()
			logLine(webhookFailed(n, err))
		})
		if err != nil {
			return nil, "", &ops.UsageError{Problem: err.Error()}
		}
		notify := func(n model.Notice) {
			e.met.Notice(n)
			hook.Notify(n)
		}
		rc := &controllers.Recoverer{Engine: cl.Engine, Policy: e.pol, Events: cl.Kube, Emit: emit, Log: logLine, Notify: notify,
			Paused: e.met.RecoveryPaused}
		// And [proactive]: a degrading node told of, quarantined or evacuated before it fails.
		pc := &controllers.Proactive{Engine: cl.Engine, Policy: e.pol, Events: cl.Kube, Emit: emit, Log: logLine, Notify: notify}
		// And the failover reserve ([recover] reserve_label), held between recoveries.
		kc := &controllers.ReserveKeeper{Engine: cl.Engine, Log: logLine}
		serve := func(ctx context.Context) error {
			defer stopHook()
			done := make(chan struct{}, 3)
			go func() { defer func() { done <- struct{}{} }(); _ = rc.Serve(ctx) }()
			go func() { defer func() { done <- struct{}{} }(); _ = pc.Serve(ctx) }()
			go func() { defer func() { done <- struct{}{} }(); _ = kc.Serve(ctx) }()
			err := mc.Serve(ctx)
			<-done
			<-done
			<-done
			return err
		}
		if e.cfg.Recover.Automatic {
			fmt.Fprintln(
				e.stderr,
				"drainctl: automatic recovery on ([recover] automatic): a dead node is fenced and recovered without a person",
			)
		}
		if p := e.cfg.Proactive; len(p.Conditions) > 0 {
			text.Fprintf(e.stderr, "drainctl: proactive on ([proactive]): a node with %s is %s\n",
				strings.Join(p.Conditions, " or "), cmp.Or(p.Action, model.ProactiveNotify)+" (action)")
		}
		if e.o.Demo {
			return serve, "", nil
		}
		fmt.Fprintln(e.stderr, "drainctl: NodeMaintenance controller (leader-elected)")
		return serve, "drainctl-controller", nil
	}}

// proxyMode serves the cloudpool API in front of the backend pool
// (kubeaware-cloudpool-proxy's mode); a new pod takes its predecessor's leases over.
var proxyMode = mode{role: "drainctl-proxy",
	check: func(e env) error {
		if e.cfg.CloudPool.URL == "" && !e.o.Demo {
			return &ops.UsageError{Problem: "--proxy needs the backend cloudpool it sits in front of",
				Hint: "set [cloudpool] url in config.toml (e.g. http://cloudpool:9010)"}
		}
		_, err := proxyToken(e)
		return err
	},
	start: func(ctx context.Context, e env, cl *Cluster, emit func(ops.Event)) (func(context.Context) error, string, error) {
		token, err := proxyToken(e)
		if err != nil {
			return nil, "", err
		}
		p, err := proxy.New(ctx, cl.Engine, proxy.Options{Backend: cl.PoolURL, BackendTimeout: e.cfg.CloudPool.BackendTimeout.D(),
			Token:   token,
			MinSize: e.cfg.CloudPool.MinSize, MaxSize: e.cfg.CloudPool.MaxSize,
			MaxScaleDown: e.cfg.CloudPool.MaxScaleDown, MaxScaleDownPerHour: e.cfg.CloudPool.MaxScaleDownPerHour,
			Run:  ops.RunOptions{Policy: e.pol, Why: firstNonBlank(e.o.Op.Reason, "scale-down")},
			Emit: emit,
			Logf: func(format string, a ...any) { text.Fprintf(e.stderr, "drainctl: proxy: "+format+"\n", a...) }})
		if err != nil {
			return nil, "", err
		}
		addr := firstNonBlank(e.o.Serve.Listen, ":8080")
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", &ops.UsageError{Problem: fmt.Sprintf("cannot listen on --listen %s: %v", addr, err)}
		}
		srv := &http.Server{Handler: p.Handler(), ReadTimeout: e.cfg.CloudPool.ClientTimeout.D(), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
		fmt.Fprintf(e.stderr, "drainctl: cloudpool proxy on %s in front of %s\n", ln.Addr(), cloudpool.Redacted(cl.PoolURL))
		return func(ctx context.Context) error {
			<-ctx.Done()
			shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv.Shutdown(shutdown) //nolint:errcheck // stopping anyway
			p.Wait()               // a scale-down in progress stops at a safe point
			return nil
		}, "", nil
	}}

// proxyToken reads the token the proxy's callers present ([cloudpool] proxy_token_file).
// Without one the proxy may serve a loopback address only: anyone who reached it could
// shrink the pool, each machine emptied and terminated.
func proxyToken(e env) (string, error) {
	addr := firstNonBlank(e.o.Serve.Listen, ":8080")
	file := e.cfg.CloudPool.ProxyTokenFile
	if file == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && bearer.Loopback(host) {
			return "", nil
		}
		return "", &ops.UsageError{
			Problem: fmt.Sprintf(
				"the cloudpool proxy would serve %s without authentication: anyone who reaches it could scale the pool down", addr),
			Hint: "set [cloudpool] proxy_token_file to a file holding the token the autoscaler sends (Authorization: Bearer), " +
				"or serve this machine only (--listen 127.0.0.1:PORT)",
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", &ops.UsageError{Problem: fmt.Sprintf("[cloudpool] proxy_token_file: %v", err),
			Hint: "mount the Secret holding the proxy's token there (deploy/proxy.yaml)"}
	}
	token := strings.TrimSpace(string(b))
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", &ops.UsageError{Problem: fmt.Sprintf("[cloudpool] proxy_token_file %s holds no token (one line, no spaces)", file),
			Hint: "write the token the autoscaler sends into it, e.g. head -c 32 /dev/urandom | base64"}
	}
	return token, nil
}

// serveMetrics serves /metrics, /healthz and /readyz on addr, over TLS ("" serves nothing,
// the metrics are still counted); /metrics to the callers the API server lets read it
// (metrics.Guarded). auth is the API server's configuration (nil: none to ask, refused).
func serveMetrics(addr string, auth *rest.Config, logw io.Writer) (*metrics.Metrics, func(), error) {
	m := metrics.New()
	if addr == "" {
		return m, func() {}, nil
	}
	if auth == nil {
		return nil, nil, &ops.UsageError{Problem: "--metrics-addr: no Kubernetes API server to authenticate the callers of /metrics",
			Hint: "the demo has none: run without --metrics-addr"}
	}
	cs, err := kube.NewClientset(auth)
	if err != nil {
		return nil, nil, err
	}
	handler := metrics.Guarded(m.Handler(), cs, func(line string) { text.Fprintf(logw, "drainctl: /metrics: %s\n", line) })
	cert, err := selfSignedCert()
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, &ops.UsageError{Problem: fmt.Sprintf("cannot listen on --metrics-addr %s: %v", addr, err)}
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ErrorLog:  log.New(io.Discard, "", 0)} // a scraper's TLS handshake over plain HTTP is its own error
	go srv.ServeTLS(ln, "", "") //nolint:errcheck // ends with Shutdown
	stop := func() { _ = srv.Shutdown(context.Background()) }
	return m, stop, nil
}

// serveMetrics serves the metrics on --metrics-addr, authenticated by the API server the
// process works on (the demo has none).
func (e env) serveMetrics() (*metrics.Metrics, func(), error) {
	var auth *rest.Config
	if !e.o.Demo && e.o.Serve.MetricsAddr != "" {
		var err error
		if auth, err = kube.RESTConfig(kubeOptions(e.o.Conn, e.cfg)); err != nil {
			return nil, nil, err
		}
	}
	return serveMetrics(e.o.Serve.MetricsAddr, auth, e.stderr)
}

// selfSignedCert is the metrics endpoint's certificate, made at start: the scraper's bearer
// token never crosses the network in clear (Prometheus scrapes it with
// insecure_skip_verify, as it does controller-runtime's).
func selfSignedCert() (tls.Certificate, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("drainctl-metrics", nil, nil)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--metrics-addr: making its certificate: %w", err)
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
