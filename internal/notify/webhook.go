// Package notify tells the person on call what they must know, by webhook: one JSON POST an
// event, in the background, with a timeout and bounded retries. A failing webhook is counted
// and logged; it never holds the work that notifies.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/bearer"
)

// Notice is one event a person must know.
type Notice = model.Notice

// Webhook posts notices to one URL.
type Webhook struct {
	url      string
	shown    string // the URL as drainctl prints it (Shown)
	token    string
	client   *http.Client
	queue    chan Notice
	attempts int
	backoff  time.Duration
	failed   func(Notice, error) // a notice given up on (may be nil)
	pending  sync.WaitGroup      // notices queued or being posted
}

// New is the webhook of the configuration, or nil when none is set. The token comes from
// token_file or getenv("DRAINCTL_WEBHOOK_TOKEN"); a URL that carries a credential is refused.
func New(cfg model.NotifyConfig, getenv func(string) string, failed func(Notice, error)) (*Webhook, error) {
	if cfg.Webhook == "" {
		return nil, nil
	}
	u, err := url.Parse(cfg.Webhook)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("[notify] webhook %q is not an http(s) URL", cfg.Webhook)
	case u.User != nil:
		return nil, fmt.Errorf(
			"[notify] webhook %s carries a credential: give the token in token_file or DRAINCTL_WEBHOOK_TOKEN",
			u.Redacted(),
		)
	}
	token := strings.TrimSpace(getenv("DRAINCTL_WEBHOOK_TOKEN"))
	if cfg.TokenFile != "" {
		data, err := os.ReadFile(cfg.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("[notify] token_file: %w", err)
		}
		token = strings.TrimSpace(string(data))
	}
	client, err := bearer.Client(u, token != "", cfg.CAFile, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("[notify] webhook: %w", err)
	}
	if failed == nil {
		failed = func(Notice, error) {}
	}
	// A redirect would carry the token to wherever it points: not followed (bearer.Client), a failure.
	return &Webhook{url: cfg.Webhook, shown: Shown(u), token: token, client: client,
		queue: make(chan Notice, 64), attempts: 3, backoff: time.Second, failed: failed}, nil
}

// Run posts the queued notices until ctx ends.
func (w *Webhook) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-w.queue:
			if err := w.post(ctx, n); err != nil {
				w.failed(n, err)
			}
			w.pending.Done()
		}
	}
}

// Notify queues the notice; a full queue (a webhook down for long) drops it, counted as failed.
func (w *Webhook) Notify(n Notice) {
	if w == nil {
		return
	}
	if n.At.IsZero() {
		n.At = time.Now()
	}
	w.pending.Add(1)
	select {
	case w.queue <- n:
	default:
		w.pending.Done()
		w.failed(n, fmt.Errorf("the webhook's queue is full"))
	}
}

// Flush waits until the queued notices are posted (or given up on), at most for d: a
// headless run that ends posts what it said before it exits. It reports whether all went.
func (w *Webhook) Flush(d time.Duration) bool {
	if w == nil {
		return true
	}
	done := make(chan struct{})
	go func() { w.pending.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// post sends one notice, retried with backoff; a 4xx other than 429 is not retried.
func (w *Webhook) post(ctx context.Context, n Notice) error {
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	var last error
	for i := 0; i < w.attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(w.backoff << (i - 1)):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if w.token != "" {
			req.Header.Set("Authorization", "Bearer "+w.token)
		}
		resp, err := w.client.Do(req)
		if err != nil {
			var ue *url.Error // it names the whole URL, whose path may be its secret
			if errors.As(err, &ue) {
				err = fmt.Errorf("posting to %s: %w", w.shown, ue.Err)
			}
			last = err
			continue
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode < 300:
			return nil
		case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
			return fmt.Errorf("webhook answered %s", resp.Status)
		}
		last = fmt.Errorf("webhook answered %s", resp.Status)
	}
	return last
}
