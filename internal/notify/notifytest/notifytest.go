// Package notifytest is a webhook for tests: a local HTTP server that keeps the notices posted
// with the right bearer token and refuses the others.
package notifytest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/drainctl/drainctl/model"
)

// Webhook is the server and what it heard.
type Webhook struct {
	URL  string
	mu   sync.Mutex
	told []model.Notice
}

// Start serves until the test ends; token is the bearer token a notice must carry ("": a
// notice must carry none).
func Start(t *testing.T, token string) *Webhook {
	w := &Webhook{}
	want := ""
	if token != "" {
		want = "Bearer " + token
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var n model.Notice
		if r.Header.Get("Authorization") != want || json.NewDecoder(r.Body).Decode(&n) != nil {
			http.Error(rw, "no", http.StatusUnauthorized)
			return
		}
		w.mu.Lock()
		w.told = append(w.told, n)
		w.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	w.URL = srv.URL
	return w
}

// Told are the notices heard, in order.
func (w *Webhook) Told() []model.Notice {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]model.Notice(nil), w.told...)
}

// Kinds are the kinds of the notices heard that keep says to keep (nil: all), in order.
func (w *Webhook) Kinds(keep func(model.Notice) bool) []model.NoticeKind {
	var out []model.NoticeKind
	for _, n := range w.Told() {
		if keep == nil || keep(n) {
			out = append(out, n.Kind)
		}
	}
	return out
}
