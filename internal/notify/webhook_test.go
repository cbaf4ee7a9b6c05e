package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// A webhook down is retried a bounded number of times, then the notice is given up on and
// said (a metric, a log line in the controller); a 4xx other than 429 is not retried; a URL
// with a credential is refused, and the token never appears in an error.
func TestAWebhookDownIsCountedNotBlocking(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	failed := make(chan error, 1)
	w, err := New(model.NotifyConfig{Webhook: srv.URL}, func(string) string { return "tok3n" }, func(_ Notice, err error) { failed <- err })
	if err != nil {
		t.Fatal(err)
	}
	w.backoff = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	start := time.Now()
	w.Notify(Notice{Kind: "storm", Message: "m"})
	if time.Since(start) > 100*time.Millisecond {
		t.Errorf("Notify waited for the webhook")
	}
	select {
	case err := <-failed:
		if calls.Load() != 3 || !strings.Contains(err.Error(), "503") || strings.Contains(err.Error(), "tok3n") {
			t.Errorf("after %d calls: %v", calls.Load(), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failure was never said")
	}
	if _, err := New(model.NotifyConfig{Webhook: "https://user:pw@hook.example/x"}, func(string) string { return "" }, nil); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("a URL with a credential: %v", err)
	}
}

// A webhook that never answers holds nothing: each try ends at the client's timeout, the
// notice is given up on after its tries, the next notice is still taken, and Flush is bounded.
func TestAHangingWebhookIsGivenUpOn(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	failed := make(chan error, 2)
	w, err := New(model.NotifyConfig{Webhook: srv.URL}, func(string) string { return "" }, func(_ Notice, err error) { failed <- err })
	if err != nil {
		t.Fatal(err)
	}
	w.backoff, w.client.Timeout = 10*time.Millisecond, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	w.Notify(Notice{Kind: model.NoticeStorm, Message: "one"})
	w.Notify(Notice{Kind: model.NoticeRecoveryStarted, Message: "two"})
	if w.Flush(50 * time.Millisecond) {
		t.Errorf("Flush says all went while the webhook hangs")
	}
	for i := 0; i < 2; i++ {
		select {
		case err := <-failed:
			if !strings.Contains(err.Error(), "Timeout") && !strings.Contains(err.Error(), "deadline") {
				t.Errorf("notice %d given up on with %v", i+1, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("notice %d was never given up on (%d calls)", i+1, calls.Load())
		}
	}
	if calls.Load() != 6 {
		t.Errorf("%d calls, want three tries a notice", calls.Load())
	}
	if !w.Flush(time.Second) {
		t.Errorf("Flush after both were given up on")
	}
}

// The campaign's notices: started once (not again after a pause), a node past its deadline,
// a quarantine, the end; a pause and a resume are a person's, no notice.
func TestCampaignNoticesAreWhatOnCallMustKnow(t *testing.T) {
	var c Campaigns
	rec := model.Campaign{Name: "fleet", Nodes: []model.CampaignNode{{Name: "a"}, {Name: "b"}}}
	at := func(s model.CampaignState, node string, ph model.NodePhase, msg string) ops.CampaignEvent {
		rec.State = s
		return ops.NewCampaignEvent(time.Now(), rec, node, ph, msg)
	}
	past := at(model.CampaignRunning, "a", model.PhaseEvacuating, "not drained within its deadline (30m0s)")
	past.PastDeadline = true
	var kinds []model.NoticeKind
	for _, ev := range []ops.CampaignEvent{at("", "", "", ""), at(model.CampaignRunning, "", "", ""), at(model.CampaignRunning, "a", model.PhaseEvacuating, ""),
		past, at(model.CampaignRunning, "a", model.PhaseQuarantined, "rolled back"), at(model.CampaignPaused, "", "", "paused"),
		at(model.CampaignRunning, "", "", ""), at(model.CampaignDone, "", "", "")} {
		for _, n := range c.Notices(ev) {
			if n.Campaign != "fleet" || n.Message == "" {
				t.Errorf("notice %+v", n)
			}
			kinds = append(kinds, n.Kind)
		}
	}
	want := []model.NoticeKind{model.NoticeCampaignStarted, model.NoticeNodePastDeadline, model.NoticeNodeQuarantined, model.NoticeCampaignFinished}
	if !slices.Equal(kinds, want) {
		t.Errorf("notices %v, want %v", kinds, want)
	}
}

// The token never crosses the network in clear nor follows a redirect: a plain-http webhook
// off this machine is refused at load (loopback is allowed), and a redirect is not followed.
func TestTheTokenStaysOnTLSAndOffRedirects(t *testing.T) {
	token := func(string) string { return "tok3n" }
	if _, err := New(model.NotifyConfig{Webhook: "http://hooks.example.com/drainctl"}, token, nil); err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("a plain-http webhook off this machine: %v; want refused", err)
	}
	for _, ok := range []string{"http://127.0.0.1:9/x", "http://localhost:9/x", "http://[::1]:9/x", "https://hooks.example.com/x"} {
		if _, err := New(model.NotifyConfig{Webhook: ok}, token, nil); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	var leaked atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	failed := make(chan error, 1)
	w, err := New(model.NotifyConfig{Webhook: redirect.URL}, token, func(_ Notice, err error) { failed <- err })
	if err != nil {
		t.Fatal(err)
	}
	w.attempts, w.backoff = 1, time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go w.Run(ctx)
	w.Notify(Notice{Kind: model.NoticeStorm, Message: "x"})
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("a redirect was taken for a success")
	}
	if v := leaked.Load(); v != nil {
		t.Errorf("the token followed the redirect: %v", v)
	}
}
