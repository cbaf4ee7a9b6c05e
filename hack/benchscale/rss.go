package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// The memory side by side (-rss): the TUI launched on the large world, drainctl and a
// baseline binary (-baseline) in turn, -rss-rounds times each, alternating. Two methods, both
// printed: the user's (as a person reads it: `--readonly` in tmux, from launch until
// node-00000's row shows its pods, then the resident set 10 s, 60 s and -rss-rest later) and
// the bench's own before it (10 s after the first read is over and nothing says loading). The
// time to the pod count is printed too: a change that saves memory must not slow the first read.
func runRSS(ctx context.Context, o options, c *cluster) error {
	bins := []string{o.drainctl}
	if o.baseline != "" {
		bins = []string{o.baseline, o.drainctl}
	}
	got := map[string][]rssRun{}
	for round := 0; round < o.rssRounds; round++ {
		for _, bin := range bins {
			oo := o
			oo.drainctl = bin
			r, err := measureRSS(ctx, oo, c)
			if err != nil {
				return fmt.Errorf("%s: %w", bin, err)
			}
			logf("%s: pod counts at %s; RSS %s", bin, secs(r.counts), r)
			got[bin] = append(got[bin], r)
		}
	}
	fmt.Printf("\nbench-scale -rss: %d nodes, %d pods on a real kube-apiserver, the TUI (--readonly) at %dx%d in tmux, "+
		"%d round(s) alternating; load avg %s\n\n", o.size.nodes, o.size.pods, o.width, o.height, o.rssRounds, loadavg())
	rest := "at rest (-rss-rest not given)"
	if o.rssRest > 0 {
		rest = text(o.rssRest) + " after"
	}
	fmt.Printf("| binary | the user's: 10 s after node-00000 shows its pods | 60 s after | %s | the bench's own: 10 s after ready | "+
		"launch → pod counts |\n|---|---|---|---|---|---|\n", rest)
	for _, bin := range bins {
		rs := got[bin]
		col := func(f func(rssRun) int64) string {
			var each []string
			var xs []int64
			for _, r := range rs {
				each, xs = append(each, fmt.Sprintf("%.0f", float64(f(r))/(1<<20))), append(xs, f(r))
			}
			return fmt.Sprintf("%.0f MiB (%s)", float64(median(xs))/(1<<20), strings.Join(each, ", "))
		}
		var counts []time.Duration
		for _, r := range rs {
			counts = append(counts, r.counts)
		}
		restCol := "–"
		if o.rssRest > 0 {
			restCol = col(func(r rssRun) int64 { return r.atRest })
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", bin, col(func(r rssRun) int64 { return r.at10 }),
			col(func(r rssRun) int64 { return r.at60 }), restCol, col(func(r rssRun) int64 { return r.ready10 }), secs(median(counts)))
	}
	if len(bins) == 2 {
		m := func(bin string) float64 {
			var xs []int64
			for _, r := range got[bin] {
				xs = append(xs, r.at10)
			}
			return float64(median(xs))
		}
		fmt.Printf("\nmedian RSS by the user's method at 10 s, %s ÷ %s: %.2f×\n", o.drainctl, o.baseline, m(o.drainctl)/m(o.baseline))
	}
	return nil
}

// rssRun is one launch's resident set by both methods, and when the pod counts showed.
type rssRun struct {
	counts                      time.Duration
	at10, at60, atRest, ready10 int64
}

func (r rssRun) String() string {
	return fmt.Sprintf("%.0f / %.0f / %.0f MiB (10 s, 60 s, rest), %.0f MiB 10 s after ready",
		float64(r.at10)/(1<<20), float64(r.at60)/(1<<20), float64(r.atRest)/(1<<20), float64(r.ready10)/(1<<20))
}

// measureRSS launches the TUI once, --readonly, and samples its resident set by both methods.
func measureRSS(ctx context.Context, o options, c *cluster) (rssRun, error) {
	tl := drainctlTool(o, c.kubeconfig)
	tl.argv = append(tl.argv, "--readonly")
	s, err := startScreen("bench-rss", o.width, o.height, tl.env, tl.argv...)
	if err != nil {
		return rssRun{}, err
	}
	defer s.close()
	var r rssRun
	if r.counts, err = s.waitFor(s.started, 5*time.Minute, func(p, _ string) bool { return tl.counts(p) }); err != nil {
		return r, err
	}
	shown := time.Now()
	ready, err := s.waitFor(s.started, 5*time.Minute, func(p, _ string) bool { return tl.ready(p) })
	if err != nil {
		return r, err
	}
	readyAt := s.started.Add(ready)
	for _, at := range []struct {
		when time.Time
		into *int64
	}{
		{shown.Add(10 * time.Second), &r.at10},
		{readyAt.Add(10 * time.Second), &r.ready10},
		{shown.Add(60 * time.Second), &r.at60},
		{shown.Add(o.rssRest), &r.atRest},
	} {
		if at.into == &r.atRest && o.rssRest <= 0 {
			continue
		}
		sleepUntil(ctx, at.when)
		*at.into = s.rss()
	}
	return r, ctx.Err()
}

// text is a duration as a person writes it ("10m", "1m30s").
func text(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func median[T int64 | time.Duration](xs []T) T {
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
