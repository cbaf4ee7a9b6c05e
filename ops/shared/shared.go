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
	gap     time.Duration // the least time from one call's beginning to the next's

	mu      sync.Mutex
	next    *call[T] // the call the callers waiting now share; nil: none waits
	running *call[T] // the call under way; nil: none
	last    *call[T] // the last call that ended without an error
	calling bool     // the caller loop runs
}

type call[T any] struct {
	done  chan struct{}
	began time.Time
	v     T
	err   error
}

// New shares fn's calls.
func New[T any](timeout time.Duration, fn func(context.Context) (T, error)) *Calls[T] {
	return &Calls[T]{fn: fn, timeout: timeout}
}

// Paced is New with calls begun at least gap apart: the callers that ask meanwhile share the
// next one (still begun after they asked), so a hundred callers asking at their own moments
// cost one call a gap, and each waits at most a gap longer.
func Paced[T any](timeout, gap time.Duration, fn func(context.Context) (T, error)) *Calls[T] {
	return &Calls[T]{fn: fn, timeout: timeout, gap: gap}
}

// Do waits for the next call to begin and end, and returns what it returned.
func (c *Calls[T]) Do(ctx context.Context) (T, error) {
	return c.DoFresh(ctx, 0)
}

// DoFresh returns what a call begun within maxAge returned: the last one that ended, or the
// one under way, when it began that recently; else the next call, as Do. For a caller that
// follows (a poll of what it already asked for), not one about to act on what it reads.
func (c *Calls[T]) DoFresh(ctx context.Context, maxAge time.Duration) (T, error) {
	c.mu.Lock()
	fresh := func(k *call[T]) bool { return k != nil && maxAge > 0 && time.Since(k.began) <= maxAge }
	if last := c.last; fresh(last) {
		c.mu.Unlock()
		return last.v, last.err
	}
	if running := c.running; fresh(running) {
		c.mu.Unlock()
		return c.wait(ctx, running)
	}
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
	return c.wait(ctx, next)
}

func (c *Calls[T]) wait(ctx context.Context, k *call[T]) (T, error) {
	select {
	case <-k.done:
		return k.v, k.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// loop makes the calls asked for until none waits, each begun a gap after the one before.
func (c *Calls[T]) loop() {
	var prev time.Time
	for {
		if wait := c.gap - time.Since(prev); !prev.IsZero() && wait > 0 {
			time.Sleep(wait) // the callers asking meanwhile join the next call
		}
		c.mu.Lock()
		next := c.next
		c.next = nil
		if next == nil {
			c.calling = false
			c.mu.Unlock()
			return
		}
		next.began, prev = time.Now(), time.Now()
		c.running = next
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		v, err := c.fn(ctx)
		cancel()
		c.mu.Lock()
		next.v, next.err = v, err
		c.running = nil
		if err == nil {
			c.last = next
		}
		c.mu.Unlock()
		close(next.done)
	}
}
