package app

import (
	"context"
	"runtime"
	"runtime/debug"
)

// The first read of a large cluster decodes every pod and keeps a small summary of each: it
// allocates several times what it keeps. Collecting garbage rarely while it runs saves CPU
// (at 150,000 pods the collector had 38 % of it). Once it is over, the read's garbage goes
// back to the system and the heap may grow a quarter over what is live before the next
// collection (Go's default: double): at 150,000 pods, ~190 MiB live, 372 MiB resident
// against 444–485 MiB at GOGC 50. It costs collections while the cluster changes (a re-join
// allocates ~100 MB), none at rest. GOGC, when set, wins. (A heap limit, GOMEMLIMIT, was
// tried: below what the runtime holds after the read, the collector ran without end, 1.9
// cores on an idle screen.)
const (
	syncGCPercent   = 400
	steadyGCPercent = 25
)

// tuneMemory sets the pace for the first read; the returned func, called once it is over,
// sets the steady one and hands the read's garbage back to the system.
func tuneMemory(getenv func(string) string) (synced func()) {
	prev := debug.SetGCPercent(syncGCPercent)
	return func() {
		if getenv("GOGC") == "" {
			prev = steadyGCPercent
		}
		debug.SetGCPercent(prev)
		runtime.GC()
		debug.FreeOSMemory()
	}
}

// afterSync runs f once the cluster's first read is over (at once if it is), and hands the
// garbage back again after the first ranking (the TUI's; --auto and the daemons may never
// rank), unless ctx ends first.
func afterSync(ctx context.Context, cl *Cluster, f func()) {
	go func() {
		if err := cl.Kube.WaitSynced(ctx); err != nil {
			return
		}
		f()
		select {
		case <-cl.Engine.FirstRanking():
			runtime.GC()
			debug.FreeOSMemory()
		case <-ctx.Done():
		}
	}()
}
