package nova

import (
	"net/http"
	"sync"
	"time"
)

// answers tells every answer of Nova, Placement and the rest of the cloud (how long it took,
// its status; 0: none came) to the listeners: the engine's pace follows the control plane's
// health from them.
type answers struct {
	mu        sync.Mutex
	listeners []func(took time.Duration, status int)
}

// OnAnswer adds fn to the listeners of every answer from now on.
func (c *Client) OnAnswer(fn func(took time.Duration, status int)) {
	c.answers.mu.Lock()
	defer c.answers.mu.Unlock()
	c.answers.listeners = append(c.answers.listeners, fn)
}

// timing wraps next: each request's answer is told to the listeners.
func (a *answers) timing(next http.RoundTripper) http.RoundTripper {
	return roundTrip(func(r *http.Request) (*http.Response, error) {
		began := time.Now()
		resp, err := next.RoundTrip(r)
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		a.mu.Lock()
		listeners := a.listeners
		a.mu.Unlock()
		for _, fn := range listeners {
			fn(time.Since(began), status)
		}
		return resp, err
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
