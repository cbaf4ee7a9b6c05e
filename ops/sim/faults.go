package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"time"
)

// Fault makes chosen Nova calls misbehave: answer with an error status, or answer late.
type Fault struct {
	Method  string         // "" matches any
	Path    *regexp.Regexp // matched against the path after /v2.1, e.g. `^/servers/[^/]+/action$`
	Status  int            // 0: no error, only latency
	Message string
	Latency time.Duration // real time, before the request is handled
	// LatencyAfter holds the answer back after the world was read: a slow answer on the wire,
	// which shows the world as it was when the request was handled, not when it arrives.
	LatencyAfter time.Duration
	// P99 adds a latency drawn at random, one request in a hundred slower than it (a loaded
	// API: most answers quick, a tail of slow ones).
	P99 time.Duration
	// PerMove adds a latency drawn at random whose mean is PerMove for each migration under
	// way in the cloud: a nova-api and a database loaded by the moves' own work (their
	// records, their progress), which a campaign that keeps fewer under way relieves.
	PerMove time.Duration
	// Share is the share of the matching requests it applies to (0: all of them).
	Share float64
	Times int // requests it applies to; 0 is unlimited
	// Action, if set, matches only a server action with that key ("confirmResize").
	Action string
	// Meanwhile, if set, changes the world (locked) as the request arrives, before it is
	// handled: another actor's act between drainctl's read and Nova's answer.
	Meanwhile func(hosts map[string]*Host, servers map[string]*VM)
	hits      int
}

// InjectFault adds a fault; the newest matching fault wins.
func (w *World) InjectFault(f Fault) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faults = append(w.faults, &f)
}

// ClearFaults removes every fault.
func (w *World) ClearFaults() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faults = nil
}

// matchFault returns the fault that applies to this request, counting the hit.
func (w *World) matchFault(r *http.Request, path string) *Fault {
	for i := len(w.faults) - 1; i >= 0; i-- {
		f := w.faults[i]
		if (f.Method != "" && f.Method != r.Method) || (f.Path != nil && !f.Path.MatchString(path)) {
			continue
		}
		if f.Action != "" && !hasAction(r, f.Action) {
			continue
		}
		if f.Times > 0 && f.hits >= f.Times {
			continue
		}
		if f.Share > 0 && w.rng.Float64() >= f.Share {
			continue
		}
		f.hits++
		return f
	}
	return nil
}

// delay is how long the fault holds a request: its latency, one drawn for its tail (an
// exponential, whose 99th percentile is ln(100) times its mean) and one drawn for the moves
// under way; none without a fault. Called with w.mu.
func (w *World) delay(f *Fault) time.Duration {
	if f == nil {
		return 0
	}
	d := f.Latency
	if f.P99 > 0 {
		d += time.Duration(w.rng.ExpFloat64() * float64(f.P99) / math.Log(100))
	}
	if f.PerMove > 0 {
		d += time.Duration(w.rng.ExpFloat64() * float64(f.PerMove) * float64(w.inFlight()))
	}
	return d
}

// hasAction reports whether the request's JSON body has the key action; the body is put
// back for the handler.
func hasAction(r *http.Request, action string) bool {
	if r.Body == nil {
		return false
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var keys map[string]json.RawMessage
	if json.Unmarshal(body, &keys) != nil {
		return false
	}
	_, ok := keys[action]
	return ok
}
