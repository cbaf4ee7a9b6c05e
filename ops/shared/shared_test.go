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

// A paced call begins a gap after the one before; every caller still gets a call begun after
// it asked, and those asking within a gap share one.
func TestPacedCallsBeginAGapApartAndAfterTheirCallers(t *testing.T) {
	const gap = 40 * time.Millisecond
	var mu sync.Mutex
	var began []time.Time
	c := Paced(time.Minute, gap, func(context.Context) (time.Time, error) {
		now := time.Now()
		mu.Lock()
		began = append(began, now)
		mu.Unlock()
		return now, nil
	})
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 5 * time.Millisecond) // 30 callers over 150 ms
			asked := time.Now()
			got, err := c.Do(context.Background())
			if err != nil || got.Before(asked) {
				t.Errorf("a caller that asked at %s got a call begun at %s (%v)", asked.Format(".000"), got.Format(".000"), err)
			}
		}()
	}
	wg.Wait()
	for i := 1; i < len(began); i++ {
		if d := began[i].Sub(began[i-1]); d < gap {
			t.Errorf("call %d began %s after the one before, want at least %s", i, d, gap)
		}
	}
	if len(began) >= 30 {
		t.Errorf("%d calls for 30 callers over 150 ms, paced %s apart: none shared", len(began), gap)
	}
}

// DoFresh takes the last call when it began within maxAge, and the next one when it is older;
// a call that failed is never taken again.
func TestDoFreshTakesARecentCallOnly(t *testing.T) {
	var n atomic.Int64
	fail := atomic.Bool{}
	c := New(time.Minute, func(context.Context) (int64, error) {
		if fail.Load() {
			return 0, context.DeadlineExceeded
		}
		return n.Add(1), nil
	})
	ctx := context.Background()
	if v, _ := c.DoFresh(ctx, time.Hour); v != 1 {
		t.Fatalf("the first call: %d, want 1", v)
	}
	if v, _ := c.DoFresh(ctx, time.Hour); v != 1 {
		t.Errorf("a call begun within the hour not taken: got call %d, want 1", v)
	}
	time.Sleep(20 * time.Millisecond)
	if v, _ := c.DoFresh(ctx, 10*time.Millisecond); v != 2 {
		t.Errorf("a call older than maxAge taken: got call %d, want 2", v)
	}
	if v, _ := c.Do(ctx); v != 3 {
		t.Errorf("Do took a call begun before it asked: got call %d, want 3", v)
	}
	fail.Store(true)
	if _, err := c.Do(ctx); err == nil {
		t.Fatal("the failing call returned no error")
	}
	fail.Store(false)
	if v, _ := c.DoFresh(ctx, time.Hour); v != 3 {
		t.Errorf("after a failed call DoFresh got %d, want the last good call (3)", v)
	}
}
