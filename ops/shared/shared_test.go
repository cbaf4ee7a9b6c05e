package shared

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Callers asking while a call runs share the next one, which begins after they asked: each
// sees a value at least as new as its ask, and twenty callers cost two calls, not twenty.
func TestCallersAtOnceShareTheNextCall(t *testing.T) {
	var n atomic.Int64
	release := make(chan struct{})
	c := New(time.Minute, func(context.Context) (int64, error) {
		v := n.Add(1)
		if v == 1 {
			<-release // the first call runs while the others ask
		}
		return v, nil
	})
	first := make(chan int64)
	go func() { v, _ := c.Do(context.Background()); first <- v }()
	for n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	got := make(chan int64, 20)
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); v, _ := c.Do(context.Background()); got <- v }()
	}
	time.Sleep(50 * time.Millisecond) // all twenty wait on the call after the running one
	close(release)
	wg.Wait()
	close(got)
	if v := <-first; v != 1 {
		t.Errorf("the first caller got call %d", v)
	}
	for v := range got {
		if v != 2 {
			t.Errorf("a caller that asked during call 1 got call %d, want 2 (begun after it asked, shared)", v)
		}
	}
	if n.Load() != 2 {
		t.Errorf("%d calls for 21 callers, want 2", n.Load())
	}
}

// A caller that leaves does not cancel the call the others wait on.
func TestACallerLeavingCancelsNothing(t *testing.T) {
	started := make(chan struct{}, 2)
	c := New(time.Minute, func(ctx context.Context) (string, error) {
		started <- struct{}{}
		time.Sleep(20 * time.Millisecond)
		return "done", ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if _, err := c.Do(ctx); err == nil {
		t.Error("the caller that left got no error")
	}
	if v, err := c.Do(context.Background()); v != "done" || err != nil {
		t.Errorf("the next caller: %q, %v", v, err)
	}
}
