package sim

import (
	"sync"
	"time"
)

// Clock is simulated time: real time since start, multiplied by Scale. A scale of 100
// makes a 10 s migration take 100 ms, so a test runs in milliseconds and a demo in seconds
// while every duration the API reports stays realistic.
type Clock struct {
	mu       sync.Mutex
	realZero time.Time
	simZero  time.Time
	scale    float64
	now      func() time.Time
	manual   bool          // tests: time moves only by Advance
	offset   time.Duration // manual: simulated time since simZero
}

// Advance moves a manual clock forward (see Options.ManualClock).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// NewClock starts a clock at simZero running scale times faster than real time.
func NewClock(simZero time.Time, scale float64) *Clock {
	if scale <= 0 {
		scale = 1
	}
	return &Clock{realZero: time.Now(), simZero: simZero, scale: scale, now: time.Now}
}

// Now is the current simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.manual {
		return c.simZero.Add(c.offset)
	}
	return c.simZero.Add(time.Duration(float64(c.now().Sub(c.realZero)) * c.scale))
}

// Scale is how many simulated seconds pass per real second.
func (c *Clock) Scale() float64 { return c.scale }

// Real converts a simulated duration into the real time it takes.
func (c *Clock) Real(d time.Duration) time.Duration { return time.Duration(float64(d) / c.scale) }
