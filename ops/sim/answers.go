package sim

import "time"

// answered counts one answer of Nova's API, to a request begun at began (for AnswersSince).
func (w *World) answered(began time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.took != nil {
		w.took = append(w.took, answer{time.Now(), time.Since(began)})
	}
}

// answer is one answer of Nova's API: when it was given, how long its request waited.
type answer struct {
	at   time.Time
	took time.Duration
}

// KeepAnswers starts keeping how long each answer of Nova's API takes (a benchmark's curve
// of the API's latency; off by default, it grows with every request).
func (w *World) KeepAnswers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.took = []answer{}
}

// AnswersSince is how long each answer of Nova's API given since t (real time) took, while
// KeepAnswers keeps them.
func (w *World) AnswersSince(t time.Time) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for i := len(w.took) - 1; i >= 0 && !w.took[i].at.Before(t); i-- {
		out = append(out, w.took[i].took)
	}
	return out
}

// InFlight is how many migrations are unfinished now.
func (w *World) InFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inFlight()
}

// inFlight is InFlight, called with w.mu.
func (w *World) inFlight() int {
	n := 0
	for _, o := range w.migrations {
		if o.active() {
			n++
		}
	}
	return n
}
