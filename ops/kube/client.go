// Package kube is drainctl's Kubernetes side: client configuration by the usual kubeconfig
// rules, and an informer-backed inventory of nodes, pods and PodDisruptionBudgets.
package kube

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/drainctl/drainctl/ops/answers"
)

// Options select the cluster.
type Options struct {
	Kubeconfig string // --kubeconfig; empty: KUBECONFIG, ~/.kube/config, in-cluster
	Context    string // --context
	QPS        float32
	Burst      int
	// WrapTransport, when set, wraps the HTTP transport (tests count requests with it).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Answers, when set, is told every answer of the API server (the engine's pace follows
	// them; Client.Answers is the same): a watch's is not (it lasts as long as the watch),
	// and an eviction a budget refuses (429) is an answer, not a failure.
	Answers *answers.Listeners
}

// ConfigError is a kubeconfig problem: exit code 2.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string {
	return fmt.Sprintf(
		"Kubernetes configuration: %v; drainctl looked at the kubeconfig given, then KUBECONFIG, then ~/.kube/config, then the "+
			"in-cluster service account",
		e.Err,
	)
}
func (e *ConfigError) Unwrap() error { return e.Err }

// errNoKubeconfig: none was found and no cluster is around (ConfigError.HintText says how to give one).
var errNoKubeconfig = errors.New("no kubeconfig found and not running in a cluster")

// HintText says how to give a kubeconfig when none was found (the app names its flag).
func (e *ConfigError) HintText() string {
	if errors.Is(e.Err, errNoKubeconfig) {
		return "give a kubeconfig file, or set KUBECONFIG"
	}
	return ""
}

// RESTConfig resolves the client configuration.
func RESTConfig(o Options) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		// client-go's own words name KUBERNETES_MASTER, which nothing reads any more.
		err = errNoKubeconfig
	}
	if err != nil {
		return nil, &ConfigError{err}
	}
	return Tune(cfg, o), nil
}

// ContextName is the kubeconfig context the options select ("" in-cluster or unknown).
func ContextName(o Options) string {
	if o.Context != "" {
		return o.Context
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// Contexts lists the kubeconfig's contexts, sorted.
func Contexts(o Options) []string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Tune applies rate limits, silences API warnings and wraps the transport.
func Tune(cfg *rest.Config, o Options) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if o.QPS > 0 {
		cfg.QPS = o.QPS
	}
	if o.Burst > 0 {
		cfg.Burst = o.Burst
	}
	// API warnings would be printed to stderr, over the TUI.
	cfg.WarningHandler = rest.NoWarnings{}
	cfg.UserAgent = "drainctl"
	if o.WrapTransport != nil {
		cfg.Wrap(o.WrapTransport)
	}
	if o.Answers != nil { // outermost: what the test's transport answers too
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return o.Answers.Timed(rt, judgeAnswer) })
	}
	return cfg
}

// judgeAnswer says how an answer of the API server counts for the pace. A watch is not told
// (it lasts as long as it watches), nor an informer's list (resourceVersion given: its time
// follows the cluster's size, not the server's load).
func judgeAnswer(r *http.Request, status int) (int, bool) {
	if q := r.URL.Query(); q.Get("watch") == "true" || r.Method == http.MethodGet && q.Has("resourceVersion") {
		return status, false
	}
	if status == http.StatusTooManyRequests && strings.HasSuffix(r.URL.Path, "/eviction") {
		return http.StatusOK, true // a budget's answer: the server is not throttling
	}
	return status, true
}

// NewClientset builds a clientset for the configuration.
func NewClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, &ConfigError{err}
	}
	return cs, nil
}

// RedirectLogs sends klog (client-go's logger) to w instead of stderr, where it would
// corrupt the TUI and mix into --auto's output. w may be io.Discard or a log file.
func RedirectLogs(w io.Writer) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(w)
	klog.LogToStderr(false)
}

// Ping asks the API server for its version within timeout: a kubeconfig pointing at a
// closed port or an unresolvable name fails in seconds, naming the server, instead of the
// informers retrying silently until their sync deadline.
func Ping(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("no answer within %s: %w", timeout, err)
	}
	return err
}
