package model

import (
	"testing"
	"time"
)

func sample(p *MigrationProgress, at time.Duration, total, processed, remaining int64) {
	p.Add(Migration{MemoryTotal: &total, MemoryProcessed: &processed, MemoryRemaining: &remaining}, time.Unix(0, 0).Add(at))
}

func TestProgressRatesAndETA(t *testing.T) {
	var p MigrationProgress
	if p.ETA() != -1 || p.Percent() != 0 {
		t.Error("empty progress must be unknown")
	}
	p.Add(Migration{}, time.Unix(0, 0)) // null counters: not a sample
	if len(p.Samples) != 0 {
		t.Error("a reading with null counters was kept")
	}
	const G = 1 << 30
	sample(&p, 0, 8*G, 0, 8*G)
	sample(&p, 2*time.Second, 8*G, 2*G, 6*G)
	sample(&p, 4*time.Second, 8*G, 4*G, 4*G)
	if r := p.CopyRate(); r != G {
		t.Errorf("copy rate %v", r)
	}
	if r := p.ConvergeRate(); r != G {
		t.Errorf("converge rate %v", r)
	}
	if eta := p.ETA(); eta != 4*time.Second {
		t.Errorf("eta %v", eta)
	}
	if pc := p.Percent(); pc != 0.5 {
		t.Errorf("percent %v", pc)
	}
	if p.Stalled(3 * time.Second) {
		t.Error("falling remaining is not a stall")
	}
}

func TestProgressStall(t *testing.T) {
	var p MigrationProgress
	const G = 1 << 30
	// Copying at 1 GiB/s while the guest dirties as fast: remaining hovers.
	for i := 0; i <= 10; i++ {
		rem := int64(3*G + (i%2)*G/200)
		sample(&p, time.Duration(i)*time.Second, 8*G, int64(i)*G, rem)
	}
	if !p.Stalled(5 * time.Second) {
		t.Error("hovering remaining is a stall")
	}
	if p.ETA() != -1 && p.ETA() < time.Hour {
		t.Errorf("eta %v for a stalled migration", p.ETA())
	}
	if p.Stalled(20 * time.Second) {
		t.Error("samples span only 10 s: too early to call a 20 s stall")
	}
}

// Polls a little more than a second apart (as a poll's own time adds): a stall of three polls
// is seen once three polls have passed, not never.
func TestProgressStallOfAFewPolls(t *testing.T) {
	var p MigrationProgress
	const G = 1 << 30
	for i := range 4 {
		sample(&p, time.Duration(i)*(2*time.Second+2*time.Millisecond), 8*G, int64(i)*G, 8*G)
		if stalled := p.Stalled(6 * time.Second); stalled != (i == 3) {
			t.Errorf("after %d polls 2.002 s apart: stalled %v for 6 s, want %v", i+1, stalled, i == 3)
		}
	}
	sample(&p, 8*time.Second, 8*G, 5*G, 7*G)
	if p.Stalled(6 * time.Second) {
		t.Error("remaining fell by 1 GiB in the last 6 s: no stall")
	}
}

// A real guest's migration as Nova's record showed it (the libvirt world: a 256 MiB guest, an
// 8 MiB/s link; the counters as read): the first save all zeros, then a save every ~5 s and
// the same counters between. Read every 0.25 s, as drainctl's poll in the hypervisor tests; a
// rate over repeated readings of one save would be no rate.
func TestProgressOfARealRecordSavedEvery5s(t *testing.T) {
	var p MigrationProgress
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	const total = 277422080
	saves := []struct {
		at                   float64 // when the save was first read
		processed, remaining int64
	}{{2.25, 0, 0}, {7.25, 42905926, 218648576}, {12.25, 85813114, 90341376}}
	read := func(from, to float64, s int) {
		for at := from; at < to; at += 0.25 {
			tot := int64(total)
			if saves[s].processed == 0 {
				tot = 0
			}
			sample(&p, sec(at), tot, saves[s].processed, saves[s].remaining)
		}
	}
	read(saves[0].at, saves[1].at, 0)
	if len(p.Samples) != 0 || p.ETA() != -1 {
		t.Fatalf("the zeros of the first save were taken as counters: %+v", p.Samples)
	}
	read(saves[1].at, saves[2].at, 1)
	read(saves[2].at, 16.5, 2)
	if len(p.Samples) != 2 {
		t.Fatalf("%d samples from 2 saves: %+v", len(p.Samples), p.Samples)
	}
	// libvirt's own job information said 8.02 MiB/s all along.
	if r := p.CopyRate() / (1 << 20); r < 8.02*0.9 || r > 8.02*1.1 {
		t.Errorf("copy rate %.2f MiB/s, libvirt said 8.02", r)
	}
	// The ETA counts from the newest reading, not from the save.
	full := time.Duration(float64(90341376) / p.ConvergeRate() * float64(time.Second))
	if eta, want := p.ETA(), max(0, full-sec(16.25-12.25)); eta != want {
		t.Errorf("eta %v, want %v", eta, want)
	}
	if p.Stalled(10 * time.Second) {
		t.Error("remaining fell at the last save, 4 s ago: no stall of 10 s")
	}
	read(16.5, 26.5, 2) // no save for 14 s: the copy is not moving
	if !p.Stalled(10 * time.Second) {
		t.Error("a record not saved again for 14 s is a stall of 10 s")
	}
}

// A campaign's ETA counts down while a node runs, down to the rounds still to start.
func TestCampaignETACountsDown(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	c := Campaign{Parallel: 1, Nodes: []CampaignNode{
		{Name: "a", Phase: PhaseDone, Started: t0, Finished: t0.Add(10 * time.Minute)},
		{Name: "b", Phase: PhaseEvacuating, Started: t0.Add(10 * time.Minute)},
		{Name: "c", Phase: PhasePending},
	}}
	if got := c.ETAAt(t0.Add(10 * time.Minute)); got != 20*time.Minute {
		t.Errorf("as b starts: %s, want 20m", got)
	}
	if got := c.ETAAt(t0.Add(14 * time.Minute)); got != 16*time.Minute {
		t.Errorf("4 minutes into b: %s, want 16m", got)
	}
	if got := c.ETAAt(t0.Add(40 * time.Minute)); got != 10*time.Minute {
		t.Errorf("b running long: %s, want c's 10m still", got)
	}
}
