package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// tool is a terminal program measured on the node list, and how to read its screen.
type tool struct {
	name string
	argv []string
	env  []string
	// rows: node rows are on screen; counts: with every node's pod count (nil: the tool
	// has none); ready: the first read is over (nothing says loading).
	rows, counts, ready func(plain string) bool
	// cursorOn: the row under the cursor is node's.
	cursorOn func(plain, styled, node string) bool
	// filter types a filter that leaves one node (keys for tmux send-keys).
	filter func(node string) [][]string
	// plans are keys that put a plan of the node under the cursor on screen, and how to
	// know it is there (drainctl's e and C; none for k9s).
	plans []planKey
}

// planKey is a key that plans, timed from the key to its plan on screen.
type planKey struct {
	key, what string
	shown     func(plain, node string) bool
}

// tuiResult is what one run of a tool measured.
type tuiResult struct {
	rows, counts, ready   time.Duration
	rss10, rss80, peakRSS int64
	idleCPU               float64 // share of one core over the idle minute
	j100, bigG, filter    time.Duration
	plans                 []time.Duration // by tool.plans
	err                   error
}

const (
	idleWindow = 60 * time.Second
	rssLate    = 80 * time.Second
)

// measureTool runs tl and measures it: the launch (rows, counts, ready, RSS 10 s later),
// then, unless launchOnly, memory later, idle CPU and keys.
func measureTool(ctx context.Context, tl tool, o options, launchOnly bool) (r tuiResult) {
	logf("%s: starting in tmux %dx%d", tl.name, o.width, o.height)
	s, err := startScreen("bench-"+tl.name, o.width, o.height, tl.env, tl.argv...)
	if err != nil {
		return tuiResult{err: err}
	}
	defer s.close()
	wait := func(since time.Time, timeout time.Duration, ok func(plain, styled string) bool) time.Duration {
		if r.err != nil {
			return 0
		}
		d, err := s.waitFor(since, timeout, ok)
		if err != nil {
			r.err = err
		}
		return d
	}
	plain := func(f func(string) bool) func(string, string) bool { return func(p, _ string) bool { return f(p) } }
	r.rows = wait(s.started, 5*time.Minute, plain(tl.rows))
	if tl.counts != nil {
		r.counts = wait(s.started, 5*time.Minute, plain(tl.counts))
	}
	r.ready = wait(s.started, 5*time.Minute, plain(tl.ready))
	if r.err != nil {
		return r
	}
	readyAt := time.Now()
	logf("%s: rows %s, counts %s, ready %s; measuring memory and idle CPU for %s", tl.name, secs(r.rows), secs(r.counts), secs(r.ready), rssLate)
	sleepUntil(ctx, readyAt.Add(10*time.Second))
	r.rss10 = s.rss()
	if launchOnly {
		return r
	}
	cpu0, t0 := s.cpu(), time.Now()
	sleepUntil(ctx, t0.Add(idleWindow))
	r.idleCPU = float64(s.cpu()-cpu0) / float64(time.Since(t0))
	sleepUntil(ctx, readyAt.Add(rssLate))
	r.rss80 = s.rss()

	key := func(target string, keys ...[]string) time.Duration {
		t := time.Now()
		for _, k := range keys {
			if err := s.keys(k...); err != nil && r.err == nil {
				r.err = err
			}
		}
		return wait(t, time.Minute, func(p, st string) bool { return tl.cursorOn(p, st, target) })
	}
	r.j100 = key(nodeName(100), []string{"-N", "100", "j"})
	r.bigG = key(nodeName(o.size.nodes-1), []string{"G"})
	r.filter = key(nodeName(o.size.nodes/2), tl.filter(nodeName(o.size.nodes/2))...)
	if r.err == nil { // no other node left on screen
		target := nodeName(o.size.nodes / 2)
		_, err := s.waitFor(time.Now(), 10*time.Second, func(p, _ string) bool {
			for _, n := range nodeNames.FindAllString(p, -1) {
				if n != target {
					return false
				}
			}
			return true
		})
		if err != nil {
			r.err = fmt.Errorf("the filter left other nodes: %w", err)
		}
	}
	for _, pk := range tl.plans { // on the node the filter left, each plan, then esc
		target := nodeName(o.size.nodes / 2)
		sent := time.Now()
		if err := s.keys(pk.key); err != nil && r.err == nil {
			r.err = err
		}
		r.plans = append(r.plans, wait(sent, time.Minute, func(p, _ string) bool { return pk.shown(p, target) }))
		if r.err == nil {
			_ = s.keys("Escape")
			_, _ = s.waitFor(time.Now(), 10*time.Second, func(p, _ string) bool { return !pk.shown(p, target) })
		}
	}
	r.peakRSS = peakRSS(s.pid)
	logf("%s: j×100 %s, G %s, filter %s, plans %v", tl.name, secs(r.j100), secs(r.bigG), secs(r.filter), r.plans)
	return r
}

var nodeNames = regexp.MustCompile(`node-\d{5}`)

func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-time.After(time.Until(t)):
	case <-ctx.Done():
	}
}

// peakRSS is the process's high-water mark of resident memory (VmHWM).
func peakRSS(pid int) int64 { return procStatus(pid, "VmHWM") }

// drainctlTool reads drainctl's node list: a row is "▸ node-00000 … 30 …" (the cursor's
// mark is on screen with or without colour); the header says "reading pods…" while pods
// stream in and "loading…" while the ranking runs.
func drainctlTool(o options, kubeconfig string, extraEnv ...string) tool {
	perNode := o.size.pods / o.size.nodes
	counted := regexp.MustCompile(`node-00000 .*\b` + fmt.Sprint(perNode) + `\b`)
	return tool{
		name: "drainctl",
		argv: []string{o.drainctl, "--kubeconfig", kubeconfig},
		env:  append([]string{"TERM=xterm-256color", "HOME=" + filepath.Join(o.data, "home")}, extraEnv...),
		rows: func(p string) bool { return strings.Contains(p, "node-00000") },
		counts: func(p string) bool {
			return counted.MatchString(p) && !strings.Contains(p, "reading pods")
		},
		ready: func(p string) bool {
			return strings.Contains(p, "node-00000") && !strings.Contains(p, "reading pods") && !strings.Contains(p, "loading…")
		},
		cursorOn: func(p, _ string, node string) bool {
			l, ok := lineWith(p, "▸", node)
			return ok && strings.HasPrefix(strings.TrimSpace(l), "▸")
		},
		filter: func(node string) [][]string { return [][]string{{"/"}, {"-l", node}, {"Enter"}} },
		plans: []planKey{
			{key: "e", what: "`e`: the evacuation's plan on screen", shown: func(p, node string) bool {
				return strings.Contains(p, "Evacuate "+node+":")
			}},
			{key: "C", what: "`C`: the campaign's proposal on screen", shown: func(p, node string) bool {
				return strings.Contains(p, "y starts it") && strings.Contains(p, node)
			}},
		},
	}
}

func measureTUIs(ctx context.Context, o options, c *cluster, t *table) error {
	var k9s tuiResult
	if o.k9s != "" {
		k9s = measureTool(ctx, k9sTool(o, c.kubeconfig), o, false)
		if k9s.err != nil {
			logf("k9s: %v", k9s.err)
		}
	}
	d := measureTool(ctx, drainctlTool(o, c.kubeconfig), o, false)
	if d.err != nil {
		return fmt.Errorf("drainctl: %w", d.err)
	}
	t.add("launch → node rows on screen", dur(k9s.rows, k9s.err), dur(d.rows, nil), "")
	t.add("launch → every node's pod count on screen", note("never (PODS stays 0)"), dur(d.counts, nil), "≤ 1 s after the sync")
	t.add("launch → first read over (drainctl: ranked too)", dur(k9s.ready, k9s.err), dur(d.ready, nil), "sync ≤ 10 s")
	t.add("RSS 10 s after ready", mib(k9s.rss10, k9s.err), mib(d.rss10, nil), "≤ 400 MB")
	t.add(fmt.Sprintf("RSS %s after ready", rssLate), mib(k9s.rss80, k9s.err), mib(d.rss80, nil), "≤ 400 MB")
	t.add("peak RSS (whole run)", mib(k9s.peakRSS, k9s.err), mib(d.peakRSS, nil), "")
	t.add(fmt.Sprintf("CPU with no input, over %s", idleWindow), pct(k9s.idleCPU, k9s.err), pct(d.idleCPU, nil), "≤ 5 %")
	t.add("`j` ×100", dur(k9s.j100, k9s.err), dur(d.j100, nil), "≤ 50 ms")
	t.add("`G`", dur(k9s.bigG, k9s.err), dur(d.bigG, nil), "≤ 50 ms")
	t.add("filter to one node", dur(k9s.filter, k9s.err), dur(d.filter, nil), "≤ 50 ms")
	for i, pk := range drainctlTool(o, c.kubeconfig).plans {
		if i < len(d.plans) {
			t.add(pk.what+", from the key", note("–"), dur(d.plans[i], nil), "≤ 0.4 s")
		}
	}
	return nil
}

// k9sTool reads k9s's node view (-c nodes), with a configuration of its own. Its cursor row
// is the one drawn on a background colour (ESC[48;5;Nm) from the name on.
func k9sTool(o options, kubeconfig string) tool {
	home, _ := filepath.Abs(filepath.Join(o.data, "k9s-home"))
	hasRow := func(p string) bool { return strings.Contains(p, "node-00000") }
	return tool{
		name: "k9s",
		argv: []string{o.k9s, "--kubeconfig", kubeconfig, "-c", "nodes"},
		env: []string{"TERM=xterm-256color", "HOME=" + home, "XDG_CONFIG_HOME=" + home + "/config",
			"XDG_DATA_HOME=" + home + "/data", "XDG_STATE_HOME=" + home + "/state", "XDG_CACHE_HOME=" + home + "/cache"},
		rows:  hasRow,
		ready: hasRow,
		cursorOn: func(_, st, node string) bool {
			return regexp.MustCompile(`\x1b\[48;5;\d+m` + node).MatchString(st)
		},
		filter: func(node string) [][]string { return [][]string{{"/"}, {"-l", node}, {"Enter"}} },
	}
}
