package prom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drainctl/drainctl/model"
)

// The gate's token never crosses the network in clear nor follows a redirect: plain http off
// this machine is refused when a token is given (loopback is allowed, and so is plain http
// with no token), and a redirect is a failure, the token never sent where it points.
func TestTheGatesTokenStaysOnTLSAndOffRedirects(t *testing.T) {
	if _, err := New(Options{URL: "http://prometheus.example:9090", Token: model.Secret("s3cret")}); err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("a token over plain http off this machine: %v; want refused", err)
	}
	if _, err := New(Options{URL: "http://prometheus.example:9090"}); err != nil {
		t.Errorf("plain http without a token: %v", err)
	}
	var leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.Write([]byte(`{"status":"success","data":{"alerts":[]}}`))
	}))
	defer elsewhere.Close()
	redirecting := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/api/v1/alerts", http.StatusFound))
	defer redirecting.Close()
	c, err := New(Options{URL: redirecting.URL, Token: model.Secret("s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Firing(context.Background()); err == nil || leaked.Load() != 0 || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a redirect: %v, the token sent on %d time(s); want a failure and no token sent", err, leaked.Load())
	}
}
