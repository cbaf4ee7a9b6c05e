package app

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// Every service drainctl serves authenticates its callers: /metrics answers only a caller the
// API server knows (TokenReview) and lets get /metrics (SubjectAccessReview), over TLS, so
// the token never crosses the network in clear; the health checks answer the kubelet's
// probes, and say only ok. A made-up token, a stranger's and none are refused, each saying why.
func TestOnlyACallerTheAPIServerLetsReadsTheMetrics(t *testing.T) {
	cfg := kubetest.Config(t)
	addr := kubetest.FreeAddr(t)
	var logged strings.Builder
	met, stop, err := serveMetrics(addr, cfg, &logged)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	met.SetReady(true)
	reader, stranger := kubetest.MetricsToken(t, true), kubetest.MetricsToken(t, false)
	for _, c := range []struct {
		what, path, token string
		code              int
		says              string
	}{
		{"a reader's token", "/metrics", reader, 200, "drainctl_"},
		{"a reader's token again (its answer kept)", "/metrics", reader, 200, "drainctl_"},
		{"no token", "/metrics", "", 401, "send a Kubernetes bearer token"},
		{"a made-up token", "/metrics", "not-a-token", 401, "does not know this token"},
		{"a stranger's token", "/metrics", stranger, 403, "may not get /metrics"},
		{"the liveness probe", "/healthz", "", 200, "ok"},
		{"the readiness probe", "/readyz", "", 200, "ok"},
	} {
		code, body := kubetest.Scrape(addr, c.path, c.token)
		if code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %q; want %d saying %q", c.what, code, body, c.code, c.says)
		}
		if c.token != "" && (strings.Contains(body, c.token) || strings.Contains(logged.String(), c.token)) {
			t.Errorf("%s: the token is shown", c.what)
		}
	}
	// In clear, nothing: Go's TLS server answers a plain request with 400 and no metrics.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || strings.Contains(string(body), "drainctl_") {
			t.Errorf("plain HTTP: %d %q", resp.StatusCode, body)
		}
	}
	if _, _, err := serveMetrics(kubetest.FreeAddr(t), nil, io.Discard); err == nil || !strings.Contains(err.Error(), "authenticate") {
		t.Errorf("without an API server to ask: %v; want refused", err)
	}
}
