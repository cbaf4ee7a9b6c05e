package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// An API server that never answers the review refuses the scrape once the review's bound
// (10 s) passes: 503, never the metrics, and never a wait without end.
func TestAReviewThatHangsRefusesTheScrape(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release) // before the server's Close, which waits for its handlers
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: hung.URL})
	var logged []string
	h := Guarded(New().Handler(), cs, func(l string) { logged = append(logged, l) })
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer some-token")
	served := make(chan struct{})
	go func() { h.ServeHTTP(rec, req); close(served) }()
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("a hung review held the scrape past 30 s")
	}
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "drainctl_") {
		t.Errorf("a hung review: %d %q; want 503 and no metrics", rec.Code, rec.Body.String())
	}
	if len(logged) == 0 || strings.Contains(strings.Join(logged, "\n"), "some-token") {
		t.Errorf("logged %q: want the failure said, the token never", logged)
	}
}
