package model

import "time"

// MigrationSample is one reading of a live migration's memory counters.
type MigrationSample struct {
	At        time.Time
	Total     int64
	Processed int64
	Remaining int64
}

// MigrationProgress keeps recent samples of one migration and derives its rate and ETA.
// Nova leaves the counters null until the copy starts, then saves them to the record only
// every 5 s, the first as the job starts, often all zeros (measured on real guests): a sample
// is a reading whose counters are known and new, stamped when first read; Read is the newest
// reading, new or not.
type MigrationProgress struct {
	Samples []MigrationSample // oldest first, the last keepFor, at most maxSamples
	Read    time.Time         // the newest reading, counters changed or not
}

const (
	maxSamples = 1024
	keepFor    = 10 * time.Minute // longer than any stall window worth waiting for
)

// Add records a reading: a sample when its counters are known (a total of 0 is the first
// save, before QEMU counts) and differ from the last sample's (the record saved again).
func (p *MigrationProgress) Add(m Migration, at time.Time) {
	if m.MemoryTotal == nil || m.MemoryRemaining == nil || *m.MemoryTotal <= 0 {
		return
	}
	s := MigrationSample{At: at, Total: *m.MemoryTotal, Remaining: *m.MemoryRemaining}
	if m.MemoryProcessed != nil {
		s.Processed = *m.MemoryProcessed
	}
	p.Read = at
	if last, ok := p.Last(); ok && last.Total == s.Total && last.Processed == s.Processed && last.Remaining == s.Remaining {
		return // the same save read again: its time is when it was first seen
	}
	p.Samples = append(p.Samples, s)
	drop := 0
	for drop < len(p.Samples)-1 && (len(p.Samples)-drop > maxSamples || at.Sub(p.Samples[drop].At) > keepFor) {
		drop++
	}
	p.Samples = p.Samples[drop:]
}

// Last is the newest sample.
func (p MigrationProgress) Last() (MigrationSample, bool) {
	if len(p.Samples) == 0 {
		return MigrationSample{}, false
	}
	return p.Samples[len(p.Samples)-1], true
}

// Percent is how much of the memory has been copied, by remaining over total.
func (p MigrationProgress) Percent() float64 {
	s, ok := p.Last()
	if !ok || s.Total <= 0 {
		return 0
	}
	done := float64(s.Total-s.Remaining) / float64(s.Total)
	return min(1, max(0, done))
}

// window returns the samples within d of the newest.
func (p MigrationProgress) window(d time.Duration) []MigrationSample {
	last, ok := p.Last()
	if !ok {
		return nil
	}
	i := len(p.Samples) - 1
	for i > 0 && last.At.Sub(p.Samples[i-1].At) <= d {
		i--
	}
	return p.Samples[i:]
}

// CopyRate is bytes copied per second over the last 10 s (the link speed seen).
func (p MigrationProgress) CopyRate() float64 {
	return p.rate(func(first, last MigrationSample) int64 { return last.Processed - first.Processed })
}

// ConvergeRate is how fast remaining falls, bytes per second over the last 10 s; zero or
// negative means the guest dirties memory as fast as it is copied.
func (p MigrationProgress) ConvergeRate() float64 {
	return p.rate(func(first, last MigrationSample) int64 { return first.Remaining - last.Remaining })
}

// rate divides a change between the oldest and newest samples of the last 10 s by the time.
func (p MigrationProgress) rate(delta func(first, last MigrationSample) int64) float64 {
	w := p.window(10 * time.Second)
	if len(w) < 2 {
		return 0
	}
	dt := w[len(w)-1].At.Sub(w[0].At).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(delta(w[0], w[len(w)-1])) / dt
}

// ETA is the time left at the current convergence rate, counted from the newest reading
// (the copy went on since the last save), or -1 when unknown or never.
func (p MigrationProgress) ETA() time.Duration {
	s, ok := p.Last()
	r := p.ConvergeRate()
	if !ok || r <= 0 {
		return -1
	}
	eta := time.Duration(float64(s.Remaining)/r*float64(time.Second)) - p.Read.Sub(s.At)
	return max(0, eta)
}

// Stalled reports whether remaining has not fallen for at least d: from the newest sample at
// least d older than the newest reading to the last, it never fell by more than 1 %. Polls a
// little over d/k apart still find one (taking only the samples within d, a stall of three
// polls was never seen); a record not saved again for d is a stall too.
func (p MigrationProgress) Stalled(d time.Duration) bool {
	last, ok := p.Last()
	if !ok {
		return false
	}
	now := last.At
	if p.Read.After(now) {
		now = p.Read
	}
	from := -1
	for i := len(p.Samples) - 1; i >= 0; i-- {
		if now.Sub(p.Samples[i].At) >= d {
			from = i
			break
		}
	}
	if from < 0 {
		return false // the samples span less than d: too early to say
	}
	lowest := p.Samples[from].Remaining
	for _, s := range p.Samples[from+1:] {
		if s.Remaining < lowest-lowest/100 { // fell by more than 1%: progress
			return false
		}
	}
	return true
}
