// Package poll is the engine's one way to wait: a sleep that ends with its context, and a
// wait that polls until done and says what it waits for once, not at every poll.
package poll

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends (false).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Until calls check every interval until it says done or fails. While it waits, what it
// waits for is said once (and again when that changes): a log of one line, not one a poll;
// a check that fails may still say what it waited for, and it is said (once) before the
// error ends the wait. It ends with ctx's error when ctx ends first. A nil say: a wait that
// says nothing.
func Until(
	ctx context.Context,
	every time.Duration,
	say func(string),
	check func(context.Context) (done bool, waiting string, err error),
) error {
	said := ""
	for {
		done, waiting, err := check(ctx)
		if waiting != "" && waiting != said && say != nil {
			say(waiting)
			said = waiting
		}
		if done || err != nil {
			return err
		}
		if !Sleep(ctx, every) {
			return ctx.Err()
		}
	}
}
