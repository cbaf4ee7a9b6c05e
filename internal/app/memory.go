package app

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
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
		go settle(ctx, 2*time.Second)
		select {
		case <-cl.Engine.FirstRanking():
			runtime.GC()
			debug.FreeOSMemory()
		case <-ctx.Done():
		}
	}()
}

// settle gives memory back whenever the process goes quiet. A view idles for hours after a
// burst of work (its first read, a ranking, a re-join of 150,000 pods), holding the burst's
// garbage until the next collection, which at rest comes only once the heap has grown a
// quarter (GOGC 25): at 150,000 pods ~150 MiB of a ~350 MiB resident set 10 s after the first
// read, and a screen at rest trickles ~0.2 MiB a second into it. Each interval it looks at
// what was allocated since the last: in a quiet one (under 4 MiB) it collects once and returns
// the free pages if the heap holds more than slack over what was live after the last such
// collection — a burst's garbage at once, a trickle's before it grows the resident set by
// more than a few percent. Busy, it leaves the pacing to the collector.
func settle(ctx context.Context, every time.Duration) {
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	const quiet = 4 << 20
	var allocated, live uint64
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(samples)
		total, objects := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		if total-allocated < quiet && objects > live+slack(live) {
			debug.FreeOSMemory() // a collection, then the free pages back to the system
			metrics.Read(samples)
			total, live = samples[0].Value.Uint64(), samples[1].Value.Uint64()
		}
		allocated = total
	}
}

// slack is the garbage settle lets the heap hold at rest over what is live: 3 % of it, and at
// least 4 MiB (a collection of a small heap is not worth its cost below that).
func slack(live uint64) uint64 { return max(4<<20, live/32) }
