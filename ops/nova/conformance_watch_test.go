package nova_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// A server read from the watch: after one server read alone (its answer's Date begins the
// watch) and a host's servers, each server is read from the process's read of what changed,
// never alone, and still shows what another actor did meanwhile (a stop, a live migration by
// hand); a server deleted meanwhile is read alone again and is gone. What it relies on of Nova:
// changes-since on servers/detail shows a server stopped or moved since, to the second of
// updated_at, on Nova's clock, which the answers' Date shows.
func TestConformanceAServerIsReadFromWhatChanged(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		var alone, changed atomic.Int64
		cl := drainctlClientWith(t, c, nova.Options{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			path := r.URL.Path
			switch {
			case r.Method == "GET" && strings.Contains(path, "/servers/") && !strings.HasSuffix(path, "/detail"):
				alone.Add(1)
			case r.Method == "GET" && strings.HasSuffix(path, "/servers/detail") && r.URL.Query().Get("changes-since") != "":
				changed.Add(1)
			}
			return http.DefaultTransport.RoundTrip(r)
		})})
		ctx := context.Background()
		stopped, moved := c.Boot("watch-stop", "compute-0"), c.Boot("watch-move", "compute-0")
		read := func(id string) model.VM {
			t.Helper()
			vm, err := cl.Server(ctx, id)
			must(t, err)
			return vm
		}
		read(stopped) // alone: begins the watch
		_, err := cl.Servers(ctx, "compute-0")
		must(t, err)
		if vm := read(moved); vm.Host != "compute-0" || vm.Phase != model.PhaseRunning {
			t.Errorf("watch-move as read: %+v; want ACTIVE on compute-0", vm)
		}

		c.Stop(stopped)
		c.MustAction(moved, map[string]any{"os-migrateLive": map[string]any{"host": "compute-1", "block_migration": "auto"}})
		c.WaitServer(moved, 60*time.Second, "ACTIVE on compute-1", func(s novatest.Server) bool {
			return s.Host == "compute-1" && s.Status == "ACTIVE" && s.Task() == ""
		})
		if vm := read(stopped); vm.Phase != model.PhaseStopped || vm.Host != "compute-0" {
			t.Errorf("watch-stop after another actor stopped it: %+v; want SHUTOFF on compute-0", vm)
		}
		if vm := read(moved); vm.Host != "compute-1" || vm.Phase != model.PhaseRunning {
			t.Errorf("watch-move after another actor moved it: %+v; want ACTIVE on compute-1", vm)
		}
		if n := alone.Load(); n != 1 {
			t.Errorf("%d servers read alone; want 1 (the one that began the watch)", n)
		}
		if changed.Load() == 0 {
			t.Errorf("no read of what changed")
		}

		must(t, cl.DeleteServer(ctx, stopped))
		c.Wait(60*time.Second, "watch-stop gone", func() bool { _, ok := c.Server(stopped); return !ok })
		var status interface{ HTTPStatus() int }
		if _, err := cl.Server(ctx, stopped); !errors.As(err, &status) || status.HTTPStatus() != 404 {
			t.Errorf("watch-stop deleted meanwhile: %v; want a 404", err)
		}
		if n := alone.Load(); n != 2 {
			t.Errorf("%d servers read alone; want 2 (the deleted one read alone again)", n)
		}
	})
}

// A host's room read alone (a plan by host) reads its provider's allocations, and its
// inventories only when the generation moved since the last read: Placement moves a provider's
// generation with any change of its inventories or allocations (a VM arriving), so the same
// generation is the same room. What it relies on of Placement: a live migration moves the
// destination's generation; nothing moves it at rest.
func TestConformanceAHostsInventoriesAreReadAgainOnlyWhenItsGenerationMoved(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		var inventories, allocations atomic.Int64
		cl := drainctlClientWith(t, c, nova.Options{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			switch {
			case strings.HasSuffix(r.URL.Path, "/inventories"):
				inventories.Add(1)
			case strings.HasSuffix(r.URL.Path, "/allocations"):
				allocations.Add(1)
			}
			return http.DefaultTransport.RoundTrip(r)
		})})
		ctx := context.Background()
		hv := wholeReadOf(t, cl, "compute-1") // the whole read: every provider's room
		room := func(what string, wantInventories int64) model.Capacity {
			t.Helper()
			inventories.Store(0)
			allocations.Store(0)
			part, err := cl.HostSnapshot(ctx, hv, true)
			must(t, err)
			if len(part.Hypervisors) != 1 || part.Hypervisors[0].Capacity == nil {
				t.Fatalf("%s: compute-1 read with no room: %+v", what, part.Hypervisors)
			}
			if i, a := inventories.Load(), allocations.Load(); i != wantInventories || a != 1 {
				t.Errorf("%s: %d inventories and %d allocations read; want %d and 1", what, i, a, wantInventories)
			}
			return *part.Hypervisors[0].Capacity
		}
		before := room("at rest, after the whole read", 0)
		vm := c.Boot("gen-move", "compute-0")
		c.MustAction(vm, map[string]any{"os-migrateLive": map[string]any{"host": "compute-1", "block_migration": "auto"}})
		c.WaitServer(vm, 60*time.Second, "ACTIVE on compute-1", func(s novatest.Server) bool {
			return s.Host == "compute-1" && s.Status == "ACTIVE" && s.Task() == ""
		})
		arrived := room("a VM arrived", 1)
		if arrived.MemoryMB.Used <= before.MemoryMB.Used {
			t.Errorf("compute-1's memory used %d MB after a VM arrived, %d before", arrived.MemoryMB.Used, before.MemoryMB.Used)
		}
		if again := room("at rest again", 0); again.MemoryMB.Used != arrived.MemoryMB.Used {
			t.Errorf("compute-1's memory used read again at rest: %d MB; want %d", again.MemoryMB.Used, arrived.MemoryMB.Used)
		}
	})
}

// A host's servers for a step that works them: listed once since the watch began, then from the
// reads of what changed, still with a server another actor moved there and without one deleted
// meanwhile; a host not listed since the watch began is listed again.
func TestConformanceAHostsServersAreListedFromWhatChanged(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		var listed atomic.Int64
		cl := drainctlClientWith(t, c, nova.Options{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/servers/detail") && r.URL.Query().Get("host") != "" {
				listed.Add(1)
			}
			return http.DefaultTransport.RoundTrip(r)
		})})
		ctx := context.Background()
		stays, deleted := c.Boot("host-stays", "compute-0"), c.Boot("host-deleted", "compute-0")
		comes := c.Boot("host-comes", "compute-1")
		_, err := cl.Server(ctx, stays) // begins the watch
		must(t, err)
		_, err = cl.Servers(ctx, "compute-0")
		must(t, err)

		c.MustAction(comes, map[string]any{"os-migrateLive": map[string]any{"host": "compute-0", "block_migration": "auto"}})
		must(t, cl.DeleteServer(ctx, deleted))
		c.WaitServer(comes, 60*time.Second, "ACTIVE on compute-0", func(s novatest.Server) bool {
			return s.Host == "compute-0" && s.Status == "ACTIVE" && s.Task() == ""
		})
		c.Wait(60*time.Second, "host-deleted gone", func() bool { _, ok := c.Server(deleted); return !ok })
		ids := func(host string) []string {
			t.Helper()
			vms, err := cl.HostServers(ctx, host)
			must(t, err)
			var out []string
			for _, vm := range vms {
				out = append(out, vm.ID)
			}
			slices.Sort(out)
			return out
		}
		want := []string{stays, comes}
		slices.Sort(want)
		if got := ids("compute-0"); !slices.Equal(got, want) {
			t.Errorf("compute-0's servers from the watch: %v; want %v (host-stays and host-comes)", got, want)
		}
		if n := listed.Load(); n != 1 {
			t.Errorf("compute-0 listed %d times; want 1 (before the watch held it)", n)
		}
		if got := ids("compute-1"); len(got) != 0 {
			t.Errorf("compute-1's servers: %v; want none", got)
		}
		if n := listed.Load(); n != 2 {
			t.Errorf("%d host lists; want 2 (compute-1 not listed since the watch began: listed)", n)
		}
	})
}

// A plan's own host read alone (a plan by host) reads neither its hypervisor nor its Placement
// room again: its state and status are its service's, which is what Nova derives them from (up
// or down; disabled or enabled), and its room and its VMs' sizes are the last read's. A VM
// that came since is sized by its flavor, which is what Nova allocates for it. The test holds
// drainctl's hypervisor, made from the service, to Nova's own answer at rest, disabled, and with
// nova-compute dead, and a VM booted after the whole read to its allocation in Placement.
func TestConformanceAHostsHypervisorStateIsItsServices(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		var shown, placement atomic.Int64
		cl := drainctlClientWith(t, c, nova.Options{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			switch {
			case strings.Contains(r.URL.Path, "/os-hypervisors/") && !strings.HasSuffix(r.URL.Path, "/detail"):
				shown.Add(1)
			case strings.Contains(r.URL.Path, "/resource_providers/"):
				placement.Add(1)
			}
			return http.DefaultTransport.RoundTrip(r)
		})})
		ctx := context.Background()
		hv := wholeReadOf(t, cl, "compute-1")
		vm := c.Boot("came-since", "compute-1")
		var held struct {
			Allocations map[string]struct{ Resources map[string]int }
		}
		c.API.Must("GET", "placement", "/allocations/"+vm, nil, &held, 200)
		check := func(what, state, status string) {
			t.Helper()
			shown.Store(0)
			placement.Store(0)
			part, err := cl.HostSnapshot(ctx, hv, false)
			must(t, err)
			var nova struct {
				Hypervisor struct{ State, Status string }
			}
			c.API.Must("GET", "compute", "/os-hypervisors/"+hv["compute-1"].ID, nil, &nova, 200)
			if len(part.Hypervisors) != 1 {
				t.Fatalf("%s: %d hypervisors read for compute-1", what, len(part.Hypervisors))
			}
			got := part.Hypervisors[0]
			if got.State != nova.Hypervisor.State || got.Status != nova.Hypervisor.Status || got.State != state || got.Status != status {
				t.Errorf("%s: drainctl says %s and %s, Nova %s and %s; want %s and %s", what,
					got.State, got.Status, nova.Hypervisor.State, nova.Hypervisor.Status, state, status)
			}
			if got.ID != hv["compute-1"].ID || got.Capacity == nil || *got.Capacity != *hv["compute-1"].Capacity {
				t.Errorf("%s: hypervisor %q with room %v; want %q with the last read's", what, got.ID, got.Capacity, hv["compute-1"].ID)
			}
			if n, p := shown.Load(), placement.Load(); n+p != 0 {
				t.Errorf("%s: the hypervisor read again %d times, Placement %d; want none", what, n, p)
			}
			if !slices.ContainsFunc(part.VMs, func(v model.VM) bool { return v.ID == vm }) {
				t.Errorf("%s: the VM booted since is not among compute-1's", what)
			}
			for _, v := range part.VMs {
				a := held.Allocations[hv["compute-1"].ID].Resources
				if v.ID == vm && (v.VCPUs != a["VCPU"] || v.RAMMB != int64(a["MEMORY_MB"]) || v.DiskGB != int64(a["DISK_GB"])) {
					t.Errorf("%s: the VM booted since sized %d vCPU, %d MB, %d GB; Placement holds %v", what, v.VCPUs, v.RAMMB, v.DiskGB, a)
				}
			}
		}
		check("at rest", "up", "enabled")
		if code, words := c.UpdateService("compute-1", map[string]any{"status": "disabled", "disabled_reason": "conformance"}); code != 200 {
			t.Fatalf("disabling compute-1: %d %s", code, words)
		}
		check("disabled", "up", "disabled")
		c.StopCompute("compute-1")
		c.Wait(60*time.Second, "nova-compute on compute-1 down", func() bool { return c.Service("compute-1").State == "down" })
		check("nova-compute dead", "down", "disabled")
	})
}

// wholeReadOf makes the whole read (every provider's room read and kept) and returns host's
// hypervisor as it gave it, as a plan by host is given it.
func wholeReadOf(t *testing.T, cl *nova.Client, host string) map[string]model.Hypervisor {
	t.Helper()
	snap, err := cl.Snapshot(context.Background())
	must(t, err)
	for _, h := range snap.Hypervisors {
		if h.Host == host {
			return map[string]model.Hypervisor{host: h}
		}
	}
	t.Fatalf("no hypervisor for %s in %+v", host, snap.Hypervisors)
	return nil
}
