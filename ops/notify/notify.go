// Package notify is a small coalescing pub/sub: the informers and the NodeMaintenance stores
// signal changes through it without knowing who listens (the engine, the TUI, controllers).
package notify

import "sync"

// Signal tells its subscribers that something changed. A subscriber that has not taken the
// last signal yet gets no second one: bursts of changes coalesce.
type Signal struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// Notify signals every subscriber.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}

// Subscribe returns a channel of signals, until cancel is called.
func (s *Signal) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[chan struct{}]struct{}{}
	}
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}
}
