// Package answers tells every answer of an API (how long it took, its status; 0: none came)
// to listeners: the engine's pace follows the control planes' health from them (ops/pace.go).
package answers

import (
	"net/http"
	"sync"
	"time"
)

// Listeners are told every answer of the transports Timed wraps.
type Listeners struct {
	mu  sync.Mutex
	fns []func(took time.Duration, status int)
}

// On adds fn to the listeners of every answer from now on.
func (l *Listeners) On(fn func(took time.Duration, status int)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fns = append(l.fns, fn)
}

// Timed wraps next: each request's answer is told to the listeners, as judge says it (its
// status as the listeners are to count it; false: not told). A nil judge tells every answer
// as it came.
func (l *Listeners) Timed(next http.RoundTripper, judge func(r *http.Request, status int) (int, bool)) http.RoundTripper {
	return roundTrip(func(r *http.Request) (*http.Response, error) {
		began := time.Now()
		resp, err := next.RoundTrip(r)
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		told := true
		if judge != nil {
			status, told = judge(r, status)
		}
		if !told {
			return resp, err
		}
		l.mu.Lock()
		fns := l.fns
		l.mu.Unlock()
		for _, fn := range fns {
			fn(time.Since(began), status)
		}
		return resp, err
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
