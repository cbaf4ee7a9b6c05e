package nova_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim"
)

type env map[string]string

func (e env) get(k string) string { return e[k] }

func envOf(srv *sim.Server) env {
	e := env{}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		e[k] = v
	}
	return e
}

// countingTransport counts requests at the HTTP layer.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func world(t *testing.T, hosts, serversPerHost int, opts sim.Options) (*sim.Server, *sim.World) {
	t.Helper()
	w := sim.NewWorld(opts)
	for i := 0; i < hosts; i++ {
		h := fmt.Sprintf("compute-%d", i)
		w.AddHost(h, 32, 65536, 1000)
		for j := 0; j < serversPerHost; j++ {
			w.AddServer(fmt.Sprintf("vm-%d-%d", i, j), h, sim.Flavor{Name: "m1.medium", RAMMB: 2048, VCPUs: 2, DiskGB: 20})
		}
	}
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, w
}

func connect(t *testing.T, srv *sim.Server, opts nova.Options) *nova.Client {
	t.Helper()
	creds, err := nova.ResolveCredentials(nil, model.OpenStackConfig{}, envOf(srv).get)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := nova.Connect(ctx, creds, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestSnapshot(t *testing.T) {
	srv, _ := world(t, 3, 2, sim.Options{})
	var mu sync.Mutex
	asked := map[string]string{} // path → the microversion it was read at
	c := connect(t, srv, nova.Options{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		asked[strings.TrimPrefix(r.URL.Path, "/compute/v2.1")] = r.Header.Get("OpenStack-API-Version")
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})})
	if c.Microversion() != "2.93" || c.PlacementMissing() {
		t.Errorf("microversion %s, want 2.93: as high as Nova offers, capacity comes from Placement", c.Microversion())
	}
	snap, err := c.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Services) != 3 || len(snap.Hypervisors) != 3 || len(snap.VMs) != 6 {
		t.Fatalf("services %d hypervisors %d vms %d", len(snap.Services), len(snap.Hypervisors), len(snap.VMs))
	}
	h := snap.Hypervisors[0]
	if !h.CapacityKnown || h.Capacity == nil || h.Capacity.Source != model.CapacityPlacement || len(h.ServerIDs) != 2 {
		t.Errorf("hypervisor %+v", h) // read at 2.87 (no uptime call per host): its figures, Placement's first
	}
	mu.Lock()
	mv := asked["/os-hypervisors/detail"]
	mu.Unlock()
	if mv != "compute 2.87" {
		t.Errorf("os-hypervisors read at %q; want 2.87, the last that does not call every nova-compute for its uptime", mv)
	}
	vm := snap.VMs[0]
	if vm.Flavor != "m1.medium" || vm.RAMMB != 2048 || vm.VCPUs != 2 || vm.DiskGB != 20 || vm.Status != "ACTIVE" || vm.Host == "" {
		t.Errorf("vm %+v", vm)
	}
	if s := snap.Services[0]; !s.Enabled || !s.Up || len(s.ID) != 36 {
		t.Errorf("service %+v", s)
	}
}

// A refresh costs the same number of Nova calls whatever the number of hosts (one page
// each). Placement has no bulk read of inventories or allocations: one list, then two calls
// per provider, made several at a time.
func TestSnapshotCallsDoNotGrowWithHosts(t *testing.T) {
	calls := func(hosts int) (novaCalls, placementCalls int) {
		srv, w := world(t, hosts, 1, sim.Options{})
		c := connect(t, srv, nova.Options{})
		w.ResetStats()
		if _, err := c.Snapshot(ctx(t)); err != nil {
			t.Fatal(err)
		}
		for route, n := range w.Stats().ByRoute {
			if strings.HasPrefix(route, "placement ") {
				placementCalls += n
			} else {
				novaCalls += n
			}
		}
		return novaCalls, placementCalls
	}
	small, smallP := calls(5)
	large, largeP := calls(200)
	if small != large || small != 9 { // services, hypervisors, servers, server groups, 5 in-progress migration statuses
		t.Errorf("Nova calls per refresh: %d at 5 hosts, %d at 200 hosts, want 9", small, large)
	}
	if smallP != 1+2*5 || largeP != 1+2*200 {
		t.Errorf("Placement calls per refresh: %d at 5 hosts, %d at 200", smallP, largeP)
	}
}

func TestSnapshotFollowsPagination(t *testing.T) {
	srv, w := world(t, 5, 3, sim.Options{})
	c := connect(t, srv, nova.Options{PageSize: 2})
	w.ResetStats()
	snap, err := c.Snapshot(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Hypervisors) != 5 || len(snap.VMs) != 15 {
		t.Fatalf("hypervisors %d vms %d", len(snap.Hypervisors), len(snap.VMs))
	}
	seen := map[string]bool{}
	for _, v := range snap.VMs {
		if seen[v.ID] {
			t.Errorf("server %s listed twice", v.ID)
		}
		seen[v.ID] = true
	}
	if got := w.Stats().ByRoute["GET /servers/detail"]; got != 8 { // 15 servers, 2 a page
		t.Errorf("server pages fetched: %d", got)
	}
}

func TestServiceDisableEnable(t *testing.T) {
	srv, w := world(t, 2, 0, sim.Options{})
	c := connect(t, srv, nova.Options{})
	s, err := c.SetServiceEnabled(ctx(t), model.ComputeService{Host: "compute-1"}, false, "drainctl: maintenance by ops")
	if err != nil {
		t.Fatal(err)
	}
	if s.Enabled || s.DisabledReason != "drainctl: maintenance by ops" {
		t.Errorf("after disable: %+v", s)
	}
	if h, _ := w.Host("compute-1"); h.Enabled || h.DisabledReason != "drainctl: maintenance by ops" {
		t.Errorf("world: %+v", h)
	}
	if s, err = c.SetServiceEnabled(ctx(t), model.ComputeService{Host: "compute-1"}, true, ""); err != nil || !s.Enabled || s.DisabledReason != "" {
		t.Errorf("after enable: %+v %v", s, err)
	}
	if _, err := c.SetServiceEnabled(ctx(t), model.ComputeService{Host: "compute-9"}, false, "x"); err == nil {
		t.Error("no error for an unknown host")
	}
}

// waitMigration polls the way the engine does until the server's migration ends, and
// returns the statuses seen in /servers/{id}/migrations.
func waitMigration(t *testing.T, c *nova.Client, id string, each func(model.Migration)) model.Migration {
	t.Helper()
	for {
		in, err := c.ServerMigrations(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range in {
			if each != nil {
				each(m)
			}
		}
		if len(in) == 0 {
			all, err := c.Migrations(ctx(t), nova.MigrationFilter{InstanceID: id})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) > 0 && !all[0].InProgress() {
				return all[0]
			}
		}
		select {
		case <-ctx(t).Done():
			t.Fatal("migration did not finish")
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func TestLiveMigrationThroughEveryPhase(t *testing.T) {
	const scale = 50
	// A copy of 8 s: Nova saves the counters to the record every 5 s, the first save zeros.
	srv, w := world(t, 3, 2, sim.Options{Scale: scale, BandwidthBytesPerSec: 256 << 20})
	c := connect(t, srv, nova.Options{})
	vm, _ := w.ServerByName("vm-0-0")
	start := time.Now()
	if err := c.LiveMigrate(ctx(t), vm.ID, ""); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Server(ctx(t), vm.ID)
	if got.Status != "MIGRATING" || got.TaskState != "migrating" {
		t.Errorf("while migrating: %s/%s", got.Status, got.TaskState)
	}
	var sawBytes bool
	final := waitMigration(t, c, vm.ID, func(m model.Migration) {
		if m.Status == "running" && m.MemoryTotal != nil && *m.MemoryTotal == 2048<<20 && m.MemoryProcessed != nil {
			sawBytes = true
		}
		if m.Status == "queued" && m.MemoryTotal != nil {
			t.Error("memory counters must be null before running")
		}
	})
	elapsed := time.Since(start)
	if final.Status != "completed" || final.DestCompute == "" || final.DestCompute == "compute-0" {
		t.Fatalf("final %+v", final)
	}
	if !sawBytes {
		t.Error("never saw memory counters while running")
	}
	want := []string{"accepted", "queued", "preparing", "running", "post-migrating", "completed"}
	if got := w.MigrationStatuses(vm.ID)[0]; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("statuses %v, want %v", got, want)
	}
	after, _ := c.Server(ctx(t), vm.ID)
	if after.Host != final.DestCompute || after.Status != "ACTIVE" || after.TaskState != "" {
		t.Errorf("after: %+v", after)
	}
	// 0.1 s scheduling + 1 s preparing + (2 GiB - 50 MiB) at 1 GiB/s + 0.8 s post = ~3.85 s of
	// simulated time, so at least 3.85/scale of real time.
	if min := time.Duration(3.85 / scale * float64(time.Second)); elapsed < min {
		t.Errorf("took %v of real time, less than the scaled minimum %v", elapsed, min)
	}
}

func TestQueuedBehindSameSource(t *testing.T) {
	srv, w := world(t, 3, 2, sim.Options{Scale: 50})
	c := connect(t, srv, nova.Options{})
	a, _ := w.ServerByName("vm-0-0")
	b, _ := w.ServerByName("vm-0-1")
	c.LiveMigrate(ctx(t), a.ID, "")
	c.LiveMigrate(ctx(t), b.ID, "")
	waitMigration(t, c, a.ID, nil)
	waitMigration(t, c, b.ID, nil)
	// With max_concurrent_live_migrations=1 the second waits queued for the first.
	sa, sb := w.MigrationStatuses(a.ID)[0], w.MigrationStatuses(b.ID)[0]
	if sa[len(sa)-1] != "completed" || sb[len(sb)-1] != "completed" {
		t.Fatalf("%v %v", sa, sb)
	}
	all, _ := c.Migrations(ctx(t), nova.MigrationFilter{Source: "compute-0"})
	if len(all) != 2 || all[0].InstanceID != b.ID {
		t.Errorf("os-migrations newest first: %+v", all)
	}
}

func TestAbortAndForceComplete(t *testing.T) {
	srv, w := world(t, 3, 2, sim.Options{Scale: 20})
	c := connect(t, srv, nova.Options{})
	never, _ := w.ServerByName("vm-0-0")
	forced, _ := w.ServerByName("vm-1-0")
	w.Update(func(_ map[string]*sim.Host, servers map[string]*sim.VM) {
		servers[never.ID].DirtyBytesPerSec = 2 << 30 // dirties faster than the copy: never converges
		servers[forced.ID].DirtyBytesPerSec = 2 << 30
	})
	c.LiveMigrate(ctx(t), never.ID, "")
	c.LiveMigrate(ctx(t), forced.ID, "")
	running := func(id string) model.Migration {
		for {
			ms, _ := c.ServerMigrations(ctx(t), id)
			if len(ms) == 1 && ms[0].Status == "running" {
				return ms[0]
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	m := running(never.ID)
	if err := c.AbortMigration(ctx(t), never.ID, m.ID); err != nil {
		t.Fatal(err)
	}
	if final := waitMigration(t, c, never.ID, nil); final.Status != "cancelled" {
		t.Errorf("after abort: %s", final.Status)
	}
	if s, _ := c.Server(ctx(t), never.ID); s.Host != "compute-0" || s.Status != "ACTIVE" {
		t.Errorf("aborted server moved: %+v", s)
	}
	m = running(forced.ID)
	if err := c.ForceComplete(ctx(t), forced.ID, m.ID); err != nil {
		t.Fatal(err)
	}
	if final := waitMigration(t, c, forced.ID, nil); final.Status != "completed" {
		t.Errorf("after force-complete: %s", final.Status)
	}
	// Force-completing a finished migration is refused with Nova's 400.
	if err := c.ForceComplete(ctx(t), forced.ID, m.ID); !nova.IsStatus(err, 400) {
		t.Errorf("force-complete of a finished migration: %v", err)
	}
}

func TestNoValidHost(t *testing.T) {
	srv, w := world(t, 2, 1, sim.Options{Scale: 50})
	c := connect(t, srv, nova.Options{})
	if _, err := c.SetServiceEnabled(ctx(t), model.ComputeService{Host: "compute-1"}, false, "full"); err != nil {
		t.Fatal(err)
	}
	vm, _ := w.ServerByName("vm-0-0")
	if err := c.LiveMigrate(ctx(t), vm.ID, ""); err != nil {
		t.Fatalf("Nova accepts (202) even with no valid host: %v", err)
	}
	final := waitMigration(t, c, vm.ID, nil)
	if final.Status != model.MigrationFailed { // Nova says "error"; mapped once, to failed
		t.Fatalf("status %s", final.Status)
	}
	f, err := c.LastActionError(ctx(t), vm.ID, model.MoveLive)
	if err != nil || f.Message != "No valid host was found. There are not enough hosts available." || f.CannotLive || !f.NoValidHost {
		t.Errorf("action error %+v %v", f, err)
	}
	if s, _ := c.Server(ctx(t), vm.ID); s.Host != "compute-0" || s.Status != "ACTIVE" || s.TaskState != "" {
		t.Errorf("server after error: %+v", s)
	}
}

func TestMigrateConflictsAndFaults(t *testing.T) {
	srv, w := world(t, 2, 1, sim.Options{Scale: 1})
	c := connect(t, srv, nova.Options{})
	vm, _ := w.ServerByName("vm-0-0")
	if err := c.LiveMigrate(ctx(t), vm.ID, "compute-0"); !nova.IsStatus(err, 400) {
		t.Errorf("to its own host: %v", err)
	}
	if err := c.LiveMigrate(ctx(t), vm.ID, ""); err != nil {
		t.Fatal(err)
	}
	err := c.LiveMigrate(ctx(t), vm.ID, "")
	var ae *nova.APIError
	if !errors.As(err, &ae) || ae.Status != 409 || !strings.Contains(ae.Message, "task_state migrating") {
		t.Errorf("while migrating: %v", err)
	}
	w.InjectFault(sim.Fault{Method: "POST", Path: regexp.MustCompile(`/action$`), Status: 500, Times: 1})
	other, _ := w.ServerByName("vm-1-0")
	if err := c.LiveMigrate(ctx(t), other.ID, ""); !nova.IsStatus(err, 500) {
		t.Errorf("injected 500: %v", err)
	}
}

// gophercloud re-authenticates when Keystone's token stops being accepted.
func TestReauthOnExpiredToken(t *testing.T) {
	srv, _ := world(t, 1, 0, sim.Options{})
	c := connect(t, srv, nova.Options{})
	srv.ExpireTokens()
	if _, err := c.ComputeServices(ctx(t), ""); err != nil {
		t.Errorf("after token expiry: %v", err)
	}
}

func TestWrongPasswordIsClearAndSecret(t *testing.T) {
	srv, _ := world(t, 1, 0, sim.Options{})
	e := envOf(srv)
	e["OS_PASSWORD"] = "not-the-password-xyzzy"
	creds, err := nova.ResolveCredentials(nil, model.OpenStackConfig{}, e.get)
	if err != nil {
		t.Fatal(err)
	}
	_, err = nova.Connect(ctx(t), creds, nova.Options{})
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "OS_* environment variables") {
		t.Errorf("got %v", err)
	}
	if strings.Contains(err.Error(), "xyzzy") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// roundTrip is a transport made of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A Nova whose os-migrations pages do not go back (the marker ignored: the same newest page
// again and again) is not read forever: the list of moves is read by status instead, and has
// every move made since.
func TestPagesThatNeverGoBackAreNotReadForever(t *testing.T) {
	srv, w := world(t, 2, 12, sim.Options{}) // moves of seconds: under way when read
	var pages atomic.Int64
	c := connect(t, srv, nova.Options{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if q := r.URL.Query(); strings.HasSuffix(r.URL.Path, "/os-migrations") && q.Get("marker") != "" {
			pages.Add(1)
			q.Del("marker") // ignored: the newest page again
			r.URL.RawQuery = q.Encode()
		}
		return http.DefaultTransport.RoundTrip(r)
	})})
	if _, _, err := c.MovingFrom(ctx(t), "", 0); err != nil { // read by status: what follows is read by what changed
		t.Fatal(err)
	}
	for j := range 12 { // 12 records made since: more than a page of 5
		vm, _ := w.ServerByName(fmt.Sprintf("vm-0-%d", j))
		if err := c.LiveMigrate(ctx(t), vm.ID, "compute-1"); err != nil {
			t.Fatal(err)
		}
	}
	read := make(chan error, 1)
	var recent []model.Migration
	go func() {
		var err error
		recent, err = c.RecentMoves(ctx(t), 0)
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the read did not end: %d pages read", pages.Load())
	}
	if n := pages.Load(); n == 0 || n > 2 {
		t.Errorf("%d pages past the first read, want 1 or 2 (the page that did not go back ends it)", n)
	}
	if len(recent) < 12 {
		t.Errorf("the list has %d moves, want the 12 made (read by status instead)", len(recent))
	}
}
