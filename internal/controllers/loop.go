package controllers

import (
	"context"
	"time"
)

// The controllers' one skeleton: level-triggered, as a controller-runtime reconciler is, but
// without its work queue: every pass reconciles everything (a node or a NodeMaintenance is a
// few map reads when nothing changed), so a missed or coalesced notification loses nothing.
// A pass runs at start, on any change signalled, every resync, and when the last pass asked
// to be woken (a retry's backoff). The engine's own informers feed it: no second cache.

// loop runs pass until ctx ends. pass returns how soon it wants to run again (0: not before
// the next change or resync).
func loop(ctx context.Context, resync time.Duration, changes []<-chan struct{}, pass func(context.Context) time.Duration) {
	t := time.NewTicker(resync)
	defer t.Stop()
	merged := make(chan struct{}, 1)
	for _, ch := range changes {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-ch:
					if !ok {
						return
					}
					select {
					case merged <- struct{}{}:
					default: // a pass is due already
					}
				}
			}
		}()
	}
	for {
		var retry <-chan time.Time
		if wait := pass(ctx); wait > 0 {
			retry = time.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-merged:
		case <-t.C:
		case <-retry:
		}
	}
}
