package poll

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Until says what it waits for once, again only when that changes, and ends when check is
// done, fails, or the context ends.
func TestUntilSaysOnce(t *testing.T) {
	var said []string
	n := 0
	err := Until(context.Background(), time.Millisecond, func(s string) { said = append(said, s) }, func(context.Context) (bool, string, error) {
		n++
		switch {
		case n < 4:
			return false, "waiting for Ready", nil
		case n < 6:
			return false, "waiting for the taint", nil
		}
		return true, "", nil
	})
	if err != nil || n != 6 || len(said) != 2 || said[0] != "waiting for Ready" || said[1] != "waiting for the taint" {
		t.Errorf("err %v, %d checks, said %q", err, n, said)
	}
	boom := errors.New("boom")
	if err := Until(context.Background(), time.Millisecond, func(string) {}, func(context.Context) (bool, string, error) { return false, "", boom }); err != boom {
		t.Errorf("a failed check: %v", err)
	}
	var last []string
	err = Until(context.Background(), time.Millisecond, func(s string) { last = append(last, s) }, func(context.Context) (bool, string, error) {
		return false, "waiting for the gate", boom
	})
	if err != boom || len(last) != 1 || last[0] != "waiting for the gate" {
		t.Errorf("a check that fails while it says what it waited for: %v, said %q", err, last)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Until(ctx, time.Millisecond, func(string) {}, func(context.Context) (bool, string, error) { return false, "never", nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an ended context: %v", err)
	}
}
