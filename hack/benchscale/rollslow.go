package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/ops/sim"
)

// The pace's curve (-roll-slow-at): Nova's API slowed mid-campaign (every answer held a
// random delay, p99 -roll-slow-p99) for -roll-slow-for, then well again. Each second the
// bench samples the moves under way in the simulator and the latency of Nova's answers in
// that second; it prints the curve and how the moves under way followed: halved within how
// long of the slowing, back to 90 % of what they were within how long of the recovery. The
// moves under way are the mean of ten samples a second (a move of the simulator's 10× time
// lasts well under a second).

type slowOptions struct {
	at, lasts, p99 time.Duration
	perMove        time.Duration // the slowing grows with the moves under way (sim.Fault.PerMove) instead
	curve          string        // the curve's table is written here too ("": printed only)
}

type curvePoint struct {
	t        time.Duration // since the campaign began
	slowed   bool
	inFlight float64 // the mean of the second's samples
	answers  int
	p50, p99 time.Duration
}

// slowNova slows the simulator's API at o.at after start, for o.lasts, sampling each
// second until stop is closed; it returns the curve then.
func slowNova(w *sim.World, o slowOptions, start time.Time, stop <-chan struct{}) <-chan []curvePoint {
	out := make(chan []curvePoint, 1)
	w.KeepAnswers()
	go func() {
		var curve []curvePoint
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		slowed, recovered := false, false
		samples, sum := 0, 0
		for {
			select {
			case <-stop:
				out <- curve
				return
			case now := <-tick.C:
				sum += w.InFlight()
				if samples++; samples < 10 {
					continue
				}
				t := now.Sub(start)
				if !slowed && o.at > 0 && t >= o.at { // no slowing asked: the curve alone
					w.InjectFault(o.fault())
					slowed = true
				}
				if slowed && !recovered && t >= o.at+o.lasts {
					w.ClearFaults()
					recovered = true
				}
				took := w.AnswersSince(now.Add(-time.Second))
				slices.Sort(took)
				p := curvePoint{t: t, slowed: slowed && !recovered, inFlight: float64(sum) / float64(samples), answers: len(took)}
				samples, sum = 0, 0
				if len(took) > 0 {
					p.p50, p.p99 = took[len(took)/2], took[(len(took)*99)/100]
				}
				curve = append(curve, p)
			}
		}
	}()
	return out
}

// fault is the slowing: a delay that grows with the moves under way, else a tail of p99.
func (o slowOptions) fault() sim.Fault {
	if o.perMove > 0 {
		return sim.Fault{PerMove: o.perMove}
	}
	return sim.Fault{P99: o.p99}
}

// what says the slowing in words.
func (o slowOptions) what() string {
	if o.perMove > 0 {
		return fmt.Sprintf("%s a move under way", o.perMove)
	}
	return "p99 " + o.p99.String()
}

// printCurve prints how the moves under way followed the slowing, then the curve.
func printCurve(o slowOptions, curve []curvePoint) error {
	var before []float64
	for _, p := range curve {
		if p.t < o.at && p.t >= o.at-30*time.Second && p.t >= 10*time.Second {
			before = append(before, p.inFlight)
		}
	}
	mean := 0.0
	for _, n := range before {
		mean += n
	}
	if len(before) > 0 {
		mean /= float64(len(before))
	}
	halvedIn, backIn := "never", "never"
	for _, p := range curve {
		if p.t >= o.at && halvedIn == "never" && p.inFlight <= mean/2 {
			halvedIn = secs(p.t - o.at)
		}
		if p.t >= o.at+o.lasts && backIn == "never" && p.inFlight >= 0.9*mean {
			backIn = secs(p.t - o.at - o.lasts)
		}
	}
	if o.at > 0 {
		fmt.Printf("\nNova slowed (%s) at %s for %s: moves under way before, mean of the 30 s before: %.1f; "+
			"halved within %s of the slowing; back to 90 %% within %s of the recovery\n\n", o.what(), secs(o.at), secs(o.lasts), mean, halvedIn, backIn)
	}
	var b strings.Builder
	b.WriteString("| t | Nova slowed | moves under way | Nova answers | p50 | p99 |\n|---|---|---|---|---|---|\n")
	for _, p := range curve {
		slowed := ""
		if p.slowed {
			slowed = "slowed"
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %d | %s | %s |\n", secs(p.t), slowed, p.inFlight, p.answers,
			p.p50.Round(time.Millisecond), p.p99.Round(time.Millisecond))
	}
	fmt.Print(b.String())
	if o.curve != "" {
		return os.WriteFile(o.curve, []byte(b.String()), 0o644)
	}
	return nil
}
