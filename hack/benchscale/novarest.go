package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim"
)

// measureNovaAtRest counts what an idle TUI asks of Nova and Placement a minute, side by side:
// before (every refresh read everything, every refresh_interval: 12 reads a minute) and now
// (a full read, then what changed, the wait doubling to a minute while nothing changes: one
// read a minute at rest). Then ten VMs change: what one refresh reads.
func measureNovaAtRest(ctx context.Context, w *sim.World, env map[string]string, t *table) error {
	// A cloud at rest: its servers were last updated a while ago, one of them last.
	time.Sleep(1500 * time.Millisecond)
	w.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) {
		for _, vm := range s {
			vm.Locked = true
			break
		}
	})
	creds, err := nova.ResolveCredentials(nil, model.OpenStackConfig{}, func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	count := func() (novaReqs, placementReqs, serverPages int) {
		byRoute := w.Stats().ByRoute
		novaReqs, placementReqs = byAPI(byRoute)
		return novaReqs, placementReqs, byRoute["GET /servers/detail"]
	}
	read := func(c *nova.Client) (int, int, int, time.Duration, error) {
		w.ResetStats()
		start := time.Now()
		_, err := c.Snapshot(ctx)
		n, p, s := count()
		return n, p, s, time.Since(start), err
	}
	before, err := nova.Connect(ctx, creds, nova.Options{Timeout: time.Minute, FullReadEvery: -1})
	if err != nil {
		return err
	}
	if _, _, _, _, err := read(before); err != nil {
		return err
	}
	bn, bp, _, btook, err := read(before)
	if err != nil {
		return err
	}
	now, err := nova.Connect(ctx, creds, nova.Options{Timeout: time.Minute})
	if err != nil {
		return err
	}
	if _, _, _, _, err := read(now); err != nil {
		return err
	}
	nn, np, _, ntook, err := read(now)
	if err != nil {
		return err
	}
	const beforeReads, nowReads = 12, 1 // a minute: every 5 s before; at rest, once a minute now
	logf("nova at rest: a full read %d Nova + %d Placement requests in %s; a read of what changed %d + %d in %s",
		bn, bp, secs(btook), nn, np, secs(ntook))
	ratio := func(b, n int) string {
		if n == 0 {
			return "0"
		}
		return fmt.Sprintf("1/%.0f", float64(b)/float64(n))
	}
	t.add(fmt.Sprintf("idle TUI, Nova requests a minute (before: %d)", beforeReads*bn), note("–"),
		note(fmt.Sprintf("%d (%s)", nowReads*nn, ratio(beforeReads*bn, nowReads*nn))), "≤ 12")
	t.add(fmt.Sprintf("idle TUI, Placement requests a minute (before: %d)", beforeReads*bp), note("–"),
		note(fmt.Sprintf("%d (%s)", nowReads*np, ratio(beforeReads*bp, nowReads*np))), "≤ 60")
	// Ten VMs change (stopped): one refresh reads them.
	var names []string
	w.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) {
		for _, vm := range s {
			if len(names) == 10 {
				break
			}
			names = append(names, vm.Name)
		}
	})
	for _, name := range names {
		w.Stop(name)
	}
	cn, cp, pages, ctook, err := read(now)
	if err != nil {
		return err
	}
	logf("nova: ten VMs changed: %d Nova (%d server pages) + %d Placement requests in %s", cn, pages, cp, secs(ctook))
	t.add("ten VMs changed: server pages read by one refresh", note("–"), note(fmt.Sprint(pages)), "1")
	return nil
}

// runNovaAtRest is -nova-at-rest: the simulated Nova alone, o.size.nodes hosts and o.vms VMs.
func runNovaAtRest(ctx context.Context, o options) error {
	w, srv, env, err := serveNova(o)
	if err != nil {
		return err
	}
	defer srv.Close()
	t := &table{load: []string{loadavg()}}
	if err := measureNovaAtRest(ctx, w, env, t); err != nil {
		return err
	}
	t.load = append(t.load, loadavg())
	t.print(o)
	return nil
}

// byAPI sums a simulator's requests by route into Nova's and Placement's (Keystone's aside).
func byAPI(byRoute map[string]int) (nova, placement int) {
	for route, n := range byRoute {
		switch {
		case strings.HasPrefix(route, "placement "):
			placement += n
		case strings.HasPrefix(route, "keystone") || strings.Contains(route, "/v3/"):
		default:
			nova += n
		}
	}
	return nova, placement
}
