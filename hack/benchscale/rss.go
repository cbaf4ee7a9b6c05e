package main

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// The memory side by side (-rss): the TUI launched on the large world, drainctl and a
// baseline binary (-baseline) in turn, -rss-rounds times each, alternating: RSS 10 s after
// the first read is over and ranked, and the time to that point (a change that saves memory
// must not slow the first read).
func runRSS(ctx context.Context, o options, c *cluster) error {
	bins := []string{o.drainctl}
	if o.baseline != "" {
		bins = []string{o.baseline, o.drainctl}
	}
	rss := map[string][]int64{}
	ready := map[string][]time.Duration{}
	for round := 0; round < o.rssRounds; round++ {
		for _, bin := range bins {
			oo := o
			oo.drainctl = bin
			r := measureTool(ctx, drainctlTool(oo, c.kubeconfig), oo, true)
			if r.err != nil {
				return fmt.Errorf("%s: %w", bin, r.err)
			}
			logf("%s: ready %s, RSS 10 s after %.0f MiB", bin, secs(r.ready), float64(r.rss10)/(1<<20))
			rss[bin] = append(rss[bin], r.rss10)
			ready[bin] = append(ready[bin], r.ready)
		}
	}
	fmt.Printf("\nbench-scale -rss: %d nodes, %d pods on a real kube-apiserver, the TUI at %dx%d, %d round(s) alternating; load avg %s\n\n",
		o.size.nodes, o.size.pods, o.width, o.height, o.rssRounds, loadavg())
	fmt.Println("| binary | RSS 10 s after ready (each run) | median | launch → ready (median) |")
	fmt.Println("|---|---|---|---|")
	for _, bin := range bins {
		runs := ""
		for i, b := range rss[bin] {
			if i > 0 {
				runs += ", "
			}
			runs += fmt.Sprintf("%.0f", float64(b)/(1<<20))
		}
		fmt.Printf("| %s | %s MiB | %.0f MiB | %s |\n", bin, runs, float64(median(rss[bin]))/(1<<20), secs(median(ready[bin])))
	}
	if len(bins) == 2 {
		fmt.Printf("\nmedian RSS, %s ÷ %s: %.2f×\n", o.drainctl, o.baseline, float64(median(rss[o.drainctl]))/float64(median(rss[o.baseline])))
	}
	return nil
}

func median[T int64 | time.Duration](xs []T) T {
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
