package notify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
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
