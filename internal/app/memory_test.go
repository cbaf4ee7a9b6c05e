package app

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

var sink []byte

// objects is the heap's bytes in objects, live or not yet collected.
func objects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A burst of work leaves garbage that, at rest, no collection would ever take: settle
// collects it once the process goes quiet.
func TestSettleReturnsTheGarbageOfABurstOnceQuiet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // only settle collects here
	runtime.GC()
	before := objects()
	for i := 0; i < 64; i++ { // the burst: 64 MiB, garbage once it is over
		sink = make([]byte, 1<<20)
	}
	sink = nil
	if objects() < before+60<<20 {
		t.Fatalf("the burst left %d bytes of objects, want ≥ 60 MiB more than %d", objects(), before)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go settle(ctx, 50*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for objects() > before+16<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("still %d MiB of objects 5 s after the burst, %d MiB before it", objects()>>20, before>>20)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A screen at rest allocates a little at a time, never enough in one interval to count as
// busy: settle still collects that garbage before it grows the heap by more than its slack,
// rather than leaving it for the collector, which at GOGC 25 waits for a quarter more.
func TestSettleReturnsATricklesGarbageAtRest(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // only settle collects here
	runtime.GC()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go settle(ctx, 50*time.Millisecond)
	time.Sleep(120 * time.Millisecond) // its first look: nothing to collect yet
	before, most := objects(), uint64(0)
	for i := 0; i < 160; i++ { // 40 MiB in 256 KiB every 10 ms: 1.25 MiB an interval, quiet
		sink = make([]byte, 256<<10)
		time.Sleep(10 * time.Millisecond)
		most = max(most, objects())
	}
	sink = nil
	if most > before+16<<20 {
		t.Errorf("the trickle piled up to %d MiB of objects over %d MiB before it: settle never collected it",
			(most-before)>>20, before>>20)
	}
}
