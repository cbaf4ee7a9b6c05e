package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim"
)

// timed runs a command to its end, its output discarded, and returns its wall time and
// peak RSS (the kernel's ru_maxrss).
func timed(ctx context.Context, env []string, argv ...string) (time.Duration, int64, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, stderr.String())
	}
	return wall, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10, nil
}

// measureHeadless: `drainctl --auto list -o json` (every node with its pods' summary).
// (kubectl get pods -A -o json was tried as an anchor: 14.6 GiB resident and nearly four
// minutes of CPU without finishing, on this machine; it is no one's way to look at this.)
func measureHeadless(ctx context.Context, o options, c *cluster, t *table) error {
	env := []string{"HOME=" + filepath.Join(o.data, "home")}
	dw, drss, err := timed(ctx, env, o.drainctl, "--kubeconfig", c.kubeconfig, "--auto", "list", "-o", "json")
	if err != nil {
		return err
	}
	t.add("`--auto list -o json`: wall", note("–"), dur(dw, nil), "report")
	t.add("`--auto list -o json`: peak RSS", note("–"), mib(drss, nil), "report")
	return nil
}

// measureNova serves a simulated Nova with one hypervisor per node and o.vms VMs, then
// measures drainctl's first full inventory read of it (services, hypervisors with
// Placement's capacity, servers, migrations: what the TUI and --auto read first), and the
// TUI with both sides.
func measureNova(ctx context.Context, o options, c *cluster, t *table) error {
	w, srv, env, err := serveNova(o)
	if err != nil {
		return err
	}
	defer srv.Close()
	creds, err := nova.ResolveCredentials(nil, model.OpenStackConfig{}, func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	start := time.Now()
	nc, err := nova.Connect(ctx, creds, nova.Options{Timeout: time.Minute})
	if err != nil {
		return err
	}
	snap, err := nc.Snapshot(ctx)
	if err != nil {
		return err
	}
	first := time.Since(start)
	w.ResetStats()
	start = time.Now()
	if _, err := nc.Snapshot(ctx); err != nil {
		return err
	}
	again, reqs := time.Since(start), w.Stats().Requests
	logf("nova: %d hypervisors, %d VMs read in %s (again: %s, %d requests)", len(snap.Hypervisors), len(snap.VMs), secs(first), secs(again), reqs)
	t.add(fmt.Sprintf("first full Nova inventory, %d hosts / %d VMs (simulator)", o.size.nodes, o.vms), note("–"), dur(first, nil), "≤ 5 s")
	t.add(fmt.Sprintf("a Nova refresh (%d requests)", reqs), note("–"), dur(again, nil), "")
	if err := measureNovaAtRest(ctx, w, env, t); err != nil {
		return err
	}

	var osEnv []string
	for k, v := range env {
		osEnv = append(osEnv, k+"="+v)
	}
	withNova := drainctlTool(o, c.kubeconfig, osEnv...)
	withNova.name = "drainctl+nova"
	d := measureTool(ctx, withNova, o, true)
	if d.err != nil {
		return fmt.Errorf("drainctl with Nova: %w", d.err)
	}
	t.add("with Nova: launch → node rows", note("–"), dur(d.rows, nil), "")
	t.add("with Nova: launch → first read over and ranked", note("–"), dur(d.ready, nil), "")
	t.add("with Nova: RSS 10 s after ready", note("–"), mib(d.rss10, nil), "≤ 400 MB")
	return nil
}

// serveNova serves a simulated Nova with one hypervisor per node and o.vms VMs; env is the
// OS_* variables that reach it.
func serveNova(o options) (*sim.World, *sim.Server, map[string]string, error) {
	w := sim.NewWorld(sim.Options{Seed: 1})
	for i := 0; i < o.size.nodes; i++ {
		w.AddHost(nodeName(i), 64, 262144, 2000)
	}
	flavor := sim.Flavor{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40}
	for j := 0; j < o.vms; j++ {
		w.AddServer(fmt.Sprintf("vm-%06d", j), nodeName(j%o.size.nodes), flavor)
	}
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, err
	}
	env := map[string]string{}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return w, srv, env, nil
}
