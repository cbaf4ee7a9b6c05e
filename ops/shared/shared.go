// Package shared shares one call among the callers that ask for it at once, each of them
// getting a call that began after it asked (never an older one): a claim read just before an
// act is still read as the world is then, and a record written is written with every change
// made before the write was asked for. Twenty nodes writing their campaign's record, or ten
// evictions checking their node's lease, cost one call a moment, not twenty or ten.
package shared

import (
	"context"
	"sync"
	"time"
)

// Calls makes fn's calls, one at a time, each shared by the callers that asked before it began.
// fn runs with its own deadline (timeout): a caller may leave, the others wait on it.
type Calls[T any] struct {
	fn      func(context.Context) (T, error)
	timeout time.Duration

	mu      sync.Mutex
	next    *call[T] // the call the callers waiting now share; nil: none waits
	calling bool     // the caller loop runs
}

type call[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// New shares fn's calls.
func New[T any](timeout time.Duration, fn func(context.Context) (T, error)) *Calls[T] {
	return &Calls[T]{fn: fn, timeout: timeout}
}

// Do waits for the next call to begin and end, and returns what it returned.
func (c *Calls[T]) Do(ctx context.Context) (T, error) {
	c.mu.Lock()
	next := c.next
	if next == nil {
		next = &call[T]{done: make(chan struct{})}
		c.next = next
	}
	if !c.calling {
		c.calling = true
		go c.loop()
	}
	c.mu.Unlock()
	select {
	case <-next.done:
		return next.v, next.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// loop makes the calls asked for until none waits.
func (c *Calls[T]) loop() {
	for {
		c.mu.Lock()
		next := c.next
		c.next = nil
		if next == nil {
			c.calling = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		next.v, next.err = c.fn(ctx)
		cancel()
		close(next.done)
	}
}
