package nova_test

// The conformance suite: every Nova and Placement behaviour a decision of drainctl reads, one
// body run against the simulator and against a real Nova (hack/nova.sh), through drainctl's
// own client. Where they differ, the simulator is wrong and changes until both pass (the
// README lists what it cannot match).

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// drainctlClient is drainctl's own client of the cloud, as the binary makes it.
func drainctlClient(t *testing.T, c *novatest.Cloud) *nova.Client {
	t.Helper()
	return drainctlClientWith(t, c, nova.Options{})
}

// drainctlClientWith is drainctlClient with options (a transport that counts, say).
func drainctlClientWith(t *testing.T, c *novatest.Cloud, o nova.Options) *nova.Client {
	t.Helper()
	o.Timeout = 30 * time.Second
	creds, err := nova.ResolveCredentials(nil, model.OpenStackConfig{}, c.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := nova.Connect(ctx, creds, o)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hypervisorOf is the Placement provider of a host: Nova's compute node UUID.
func hypervisorOf(t *testing.T, ctx context.Context, cl *nova.Client, host string) string {
	t.Helper()
	hvs, err := cl.Hypervisors(ctx)
	must(t, err)
	for _, h := range hvs {
		if h.Host == host {
			return h.ID
		}
	}
	t.Fatalf("no hypervisor for %s in %+v", host, hvs)
	return ""
}

// consumersOn lists the Placement consumers on host's provider, as drainctl reads them.
func consumersOn(t *testing.T, ctx context.Context, cl *nova.Client, host string) []string {
	t.Helper()
	ids, err := cl.ProviderConsumers(ctx, hypervisorOf(t, ctx, cl, host))
	must(t, err)
	return ids
}

// recordOf waits for the server's newest migration of typ, created at or after since (both
// Novas write created_at to the second), and returns it.
func recordOf(t *testing.T, c *novatest.Cloud, ctx context.Context, cl *nova.Client, id, typ string, since time.Time) model.Migration {
	t.Helper()
	var got model.Migration
	c.Wait(30*time.Second, "a "+typ+" record of "+id, func() bool {
		ms, err := cl.MigrationsOf(ctx, id)
		must(t, err)
		for _, m := range ms {
			if m.Type == typ && !m.CreatedAt.Before(since.Truncate(time.Second)) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// A cold migration: the 202, then its record (the API casts to the conductor, which makes
// it); RESIZE, then VERIFY_RESIZE with the host already the destination; the source's
// allocation held by the migration until the confirm; the server SHUTOFF again on its new
// host, the record confirmed, the source's provider empty.
func TestConformanceColdMigration(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("cold-1", "compute-0")
		c.Stop(id)
		asked := c.Clock()
		must(t, cl.ColdMigrate(ctx, id, ""))
		rec := recordOf(t, c, ctx, cl, id, model.MigrationTypeCold, asked)
		if rec.SourceCompute != "compute-0" || rec.UUID == "" {
			t.Fatalf("record %+v", rec)
		}
		var vm model.VM
		c.Wait(60*time.Second, "VERIFY_RESIZE", func() bool {
			var err error
			vm, err = cl.Server(ctx, id)
			must(t, err)
			return vm.Phase == model.PhaseAwaitingConfirm
		})
		if vm.Host == "compute-0" || vm.TaskState != "" {
			t.Fatalf("in VERIFY_RESIZE: %+v", vm)
		}
		if ms, _ := cl.MigrationsOf(ctx, id); ms[0].Status != model.MigrationFinished {
			t.Errorf("waiting for its confirm, the record says %q; want finished", ms[0].Status)
		}
		src := consumersOn(t, ctx, cl, "compute-0")
		if !slices.Contains(src, rec.UUID) || slices.Contains(src, id) {
			t.Errorf("before the confirm the source's consumers are %v; want the migration %s (not the server)", src, rec.UUID)
		}
		if dst := consumersOn(t, ctx, cl, vm.Host); !slices.Contains(dst, id) {
			t.Errorf("the destination's consumers are %v; want the server", dst)
		}
		must(t, cl.ConfirmResize(ctx, id))
		c.Wait(60*time.Second, "SHUTOFF on the destination, the source's allocation gone", func() bool {
			vm, _ = cl.Server(ctx, id)
			src = consumersOn(t, ctx, cl, "compute-0")
			return vm.Phase == model.PhaseStopped && vm.TaskState == "" && !slices.Contains(src, rec.UUID)
		})
		ms, _ := cl.MigrationsOf(ctx, id)
		if len(ms) != 1 || ms[0].UUID != rec.UUID || ms[0].Status != model.MigrationCompleted {
			t.Errorf("after the confirm: %+v", ms)
		}
	})
}

// serverOf reads a server through drainctl's client.
func serverOf(t *testing.T, ctx context.Context, cl *nova.Client, id string) model.VM {
	t.Helper()
	vm, err := cl.Server(ctx, id)
	must(t, err)
	return vm
}

// A live migration: the 202, then its record; in progress it is listed by the server's
// migrations (queued, preparing, running) and the server is MIGRATING; the source's share is
// held by the migration, never by the server; at its end the record is completed, the server
// ACTIVE on the destination and the source's provider holds nothing of it.
func TestConformanceLiveMigration(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("live-1", "compute-0")
		asked := c.Clock()
		must(t, cl.LiveMigrate(ctx, id, ""))
		if vm := serverOf(t, ctx, cl, id); vm.Phase != model.PhaseMovingLive || vm.TaskState != "migrating" {
			t.Errorf("right after the 202: %s/%s; want MIGRATING/migrating", vm.Status, vm.TaskState)
		}
		rec := recordOf(t, c, ctx, cl, id, model.MigrationTypeLive, asked)
		sawRunning, sawServerOnSource := false, false
		c.Wait(60*time.Second, "the live migration completed", func() bool {
			inProgress, err := cl.ServerMigrations(ctx, id)
			must(t, err)
			for _, m := range inProgress {
				if m.UUID != rec.UUID && m.ID != rec.ID {
					t.Fatalf("the server's migrations list another: %+v", m)
				}
				sawRunning = sawRunning || m.Status == model.MigrationRunning
			}
			sawServerOnSource = sawServerOnSource || slices.Contains(consumersOn(t, ctx, cl, "compute-0"), id)
			ms, err := cl.MigrationsOf(ctx, id)
			must(t, err)
			return ms[0].Status == model.MigrationCompleted
		})
		if !sawRunning {
			t.Errorf("the server's migrations never said running")
		}
		if sawServerOnSource {
			t.Errorf("the server itself held an allocation on the source while it moved")
		}
		vm := serverOf(t, ctx, cl, id)
		if vm.Phase != model.PhaseRunning || vm.Host == "compute-0" || vm.TaskState != "" {
			t.Errorf("after: %+v", vm)
		}
		if inProgress, _ := cl.ServerMigrations(ctx, id); len(inProgress) != 0 {
			t.Errorf("after its end the server's migrations still list %+v", inProgress)
		}
		c.Wait(30*time.Second, "nothing of it left on the source", func() bool {
			src := consumersOn(t, ctx, cl, "compute-0")
			return !slices.Contains(src, id) && !slices.Contains(src, rec.UUID)
		})
	})
}

// runningMigration starts a live migration of a new server from compute-0 and waits until
// the server's migrations say it runs.
func runningMigration(t *testing.T, c *novatest.Cloud, ctx context.Context, cl *nova.Client, name string) (string, model.Migration) {
	t.Helper()
	id := c.Boot(name, "compute-0")
	must(t, cl.LiveMigrate(ctx, id, ""))
	var running model.Migration
	c.Wait(30*time.Second, "the live migration running", func() bool {
		ms, err := cl.ServerMigrations(ctx, id)
		must(t, err)
		for _, m := range ms {
			if m.Status == model.MigrationRunning {
				running = m
				return true
			}
		}
		return false
	})
	return id, running
}

// A running live migration's memory counters, as drainctl samples them for its progress and
// the pace (the moves' copy): numbers (remaining within total) are one sample; nulls (the fake
// virt driver reports none) and the zeros of the libvirt driver's first save are none, and
// the pace hears nothing of the move. One sample
// gives no rate either way: a copy's rate and convergence need two.
func TestConformanceARunningLiveMigrationsCountersAreOneSampleOrNone(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id, m := runningMigration(t, c, ctx, cl, "counters-1")
		var p model.MigrationProgress
		p.Add(m, time.Now())
		switch {
		case m.MemoryTotal == nil || m.MemoryRemaining == nil || *m.MemoryTotal == 0:
			if len(p.Samples) != 0 {
				t.Errorf("null counters made a sample: %+v", p.Samples)
			}
		case *m.MemoryTotal <= 0 || *m.MemoryRemaining < 0 || *m.MemoryRemaining > *m.MemoryTotal || len(p.Samples) != 1:
			t.Errorf("counters total %d, remaining %d: samples %+v", *m.MemoryTotal, *m.MemoryRemaining, p.Samples)
		}
		if p.CopyRate() != 0 || p.ConvergeRate() != 0 || p.Stalled(time.Nanosecond) {
			t.Errorf("one reading gave a rate (%v, %v) or a stall", p.CopyRate(), p.ConvergeRate())
		}
		c.Wait(60*time.Second, "the live migration ended", func() bool {
			inProgress, err := cl.ServerMigrations(ctx, id)
			must(t, err)
			return len(inProgress) == 0
		})
	})
}

// newestIs waits until the server's newest migration is in status.
func newestIs(t *testing.T, c *novatest.Cloud, ctx context.Context, cl *nova.Client, id string, status model.MigrationStatus) {
	t.Helper()
	c.Wait(30*time.Second, "its migration "+string(status), func() bool {
		ms, err := cl.MigrationsOf(ctx, id)
		must(t, err)
		return len(ms) > 0 && ms[0].Status == status
	})
}

// Aborting a running live migration: 202, the record cancelled, the server ACTIVE where it
// was, nothing of it on the destination.
func TestConformanceLiveMigrationAbort(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id, m := runningMigration(t, c, ctx, cl, "abort-1")
		must(t, cl.AbortMigration(ctx, id, m.ID))
		newestIs(t, c, ctx, cl, id, model.MigrationCancelled)
		c.Wait(30*time.Second, "the server ACTIVE on its source, no task", func() bool {
			vm := serverOf(t, ctx, cl, id)
			return vm.Phase == model.PhaseRunning && vm.Host == "compute-0" && vm.TaskState == ""
		})
		c.Wait(30*time.Second, "its allocation back on the source alone", func() bool {
			return slices.Contains(consumersOn(t, ctx, cl, "compute-0"), id) && !slices.Contains(consumersOn(t, ctx, cl, m.DestCompute), id)
		})
	})
}

// Force-completing a running live migration: 202, then completed on the destination.
func TestConformanceLiveMigrationForceComplete(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id, m := runningMigration(t, c, ctx, cl, "force-1")
		must(t, cl.ForceComplete(ctx, id, m.ID))
		newestIs(t, c, ctx, cl, id, model.MigrationCompleted)
		if vm := serverOf(t, ctx, cl, id); vm.Phase != model.PhaseRunning || vm.Host != m.DestCompute {
			t.Errorf("after: %+v, want ACTIVE on %s", vm, m.DestCompute)
		}
	})
}

// A host dies: its nova-compute stops, Nova sees it down within service_down_time, its
// updated_at no longer moves. Forced down, its server is evacuated (200), rebuilt ACTIVE
// elsewhere, its record "done"; the server's allocation stays on the dead host's provider
// and forcing the service up is refused, until the host's nova-compute starts again: then
// the allocation goes, the record is "completed" and the force-up is accepted.
func TestConformanceEvacuation(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("evac-1", "compute-1")
		if st, text := c.Action(id, map[string]any{"evacuate": map[string]any{}}); st != 400 || !strings.Contains(text, "still in use") {
			t.Errorf("evacuating from a live host: %d %s; want 400 still in use", st, text)
		}
		// A live nova-compute reports every report_interval: its updated_at moves on (what
		// automatic recovery watches, beside the kubelet's Lease).
		svcs, err := cl.ComputeServices(ctx, "compute-1")
		must(t, err)
		c.Wait(30*time.Second, "a live nova-compute's updated_at moving on", func() bool {
			now, err := cl.ComputeServices(ctx, "compute-1")
			must(t, err)
			return now[0].UpdatedAt.After(svcs[0].UpdatedAt)
		})
		c.StopCompute("compute-1")
		// Before Nova sees it down, the hypervisors still read at once: from 2.88 Nova asks
		// every nova-compute for its uptime (an RPC call, 60 s to time out for a dead one);
		// drainctl reads them at 2.87.
		hvCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = cl.Hypervisors(hvCtx)
		cancel()
		must(t, err)
		var down model.ComputeService
		c.Wait(60*time.Second, "nova-compute on compute-1 down", func() bool {
			svcs, err := cl.ComputeServices(ctx, "compute-1")
			must(t, err)
			down = svcs[0]
			return !down.Up
		})
		time.Sleep(2 * time.Second)
		if svcs, _ := cl.ComputeServices(ctx, "compute-1"); !svcs[0].UpdatedAt.Equal(down.UpdatedAt) {
			t.Errorf("a dead service's updated_at moved: %v then %v", down.UpdatedAt, svcs[0].UpdatedAt)
		}
		// Down, its VMs move neither cold (the API refuses: the source's service is checked)
		// nor live (accepted, then the conductor's pre-check fails it: its record in error,
		// the VM left as it was): a dead host is recovered, not evacuated.
		if st, text := c.Action(id, map[string]any{"migrate": nil}); st != 409 || !strings.Contains(text, "unavailable") {
			t.Errorf("a cold migration off a down host: %d %s; want 409 Service is unavailable", st, text)
		}
		liveAsked := c.Clock()
		if st, text := c.Action(id, map[string]any{"os-migrateLive": map[string]any{"host": nil, "block_migration": "auto"}}); st != 202 {
			t.Errorf("a live migration off a down host: %d %s; want 202 (it fails after)", st, text)
		} else {
			live := recordOf(t, c, ctx, cl, id, model.MigrationTypeLive, liveAsked)
			c.Wait(30*time.Second, "the live migration's record in error", func() bool { return c.MigrationStatus(id, live.ID) == "error" })
			c.Wait(30*time.Second, "the VM left as it was", func() bool {
				vm := serverOf(t, ctx, cl, id)
				return vm.Phase == model.PhaseRunning && vm.TaskState == "" && vm.Host == "compute-1"
			})
		}
		_, err = cl.SetForcedDown(ctx, "compute-1", true)
		must(t, err)
		asked := c.Clock()
		must(t, cl.Evacuate(ctx, id, ""))
		rec := recordOf(t, c, ctx, cl, id, model.MigrationTypeEvacuation, asked)
		var vm model.VM
		c.Wait(60*time.Second, "rebuilt ACTIVE elsewhere", func() bool {
			vm = serverOf(t, ctx, cl, id)
			return vm.Phase == model.PhaseRunning && vm.TaskState == "" && vm.Host != "compute-1"
		})
		if st := c.MigrationStatus(id, rec.ID); st != "done" {
			t.Errorf("rebuilt, the record says %q; want done", st)
		}
		if src := consumersOn(t, ctx, cl, "compute-1"); !slices.Contains(src, id) {
			t.Errorf("the dead host's consumers are %v; want the evacuated server's still there", src)
		}
		if dst := consumersOn(t, ctx, cl, vm.Host); !slices.Contains(dst, id) {
			t.Errorf("the new host's consumers are %v; want the server", dst)
		}
		_, err = cl.SetForcedDown(ctx, "compute-1", false)
		if err == nil || !strings.Contains(err.Error(), "evacuation migration records remain") {
			t.Errorf("forcing up with done evacuations: %v; want refused", err)
		}
		c.StartCompute("compute-1")
		c.Wait(90*time.Second, "the dead host's allocation gone, the record completed", func() bool {
			return !slices.Contains(consumersOn(t, ctx, cl, "compute-1"), id) && c.MigrationStatus(id, rec.ID) == "completed"
		})
		c.Wait(30*time.Second, "the force-up accepted", func() bool {
			_, err := cl.SetForcedDown(ctx, "compute-1", false)
			return err == nil
		})
	})
}

// A locked server (its owner's guard against their own calls) still moves for an admin, live
// and cold, and stays locked, its reason kept.
func TestConformanceLockedServerMovesForAnAdmin(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		live, cold := c.Boot("locked-live", "compute-0"), c.Boot("locked-cold", "compute-0")
		c.Stop(cold)
		for _, id := range []string{live, cold} {
			c.MustAction(id, map[string]any{"lock": map[string]any{"locked_reason": "owner says hands off"}})
		}
		if !cl.Admin() {
			t.Fatal("the test's user is no admin")
		}
		must(t, cl.LiveMigrate(ctx, live, ""))
		must(t, cl.ColdMigrate(ctx, cold, ""))
		c.Wait(60*time.Second, "the cold one in VERIFY_RESIZE", func() bool { return serverOf(t, ctx, cl, cold).Phase == model.PhaseAwaitingConfirm })
		must(t, cl.ConfirmResize(ctx, cold))
		c.Wait(60*time.Second, "both moved", func() bool {
			l, k := serverOf(t, ctx, cl, live), serverOf(t, ctx, cl, cold)
			return l.Phase == model.PhaseRunning && l.Host != "compute-0" && k.Phase == model.PhaseStopped && k.Host != "compute-0" && k.TaskState == ""
		})
		for _, id := range []string{live, cold} {
			if s, _ := c.Server(id); !s.Locked {
				t.Errorf("%s is no longer locked after its move: %+v", id, s)
			}
		}
	})
}

// Power actions: a stop goes through powering-off to SHUTOFF, a start through powering-on to
// ACTIVE, a pause to PAUSED; a second stop is refused with Nova's words (409). Each is an
// instance action, newest first, under the request ID Nova answered the action with.
func TestConformancePowerActions(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("power-1", "compute-0")
		req, err := cl.StopServer(ctx, id)
		must(t, err)
		// The stop's request ID is its instance action's: what restart-in-place's return asks
		// Nova before it starts a server again.
		if last, err := cl.LastPowerAction(ctx, id); err != nil || last.Action != "stop" || !strings.HasPrefix(req, "req-") || last.RequestID != req || last.UserID == "" {
			t.Errorf("the newest power action %+v, %v; want the stop of request %q, by a user", last, err, req)
		}
		if vm := serverOf(t, ctx, cl, id); vm.Phase != model.PhaseStopped && vm.TaskState != "powering-off" {
			t.Errorf("right after os-stop: %s/%s; want powering-off (or already SHUTOFF)", vm.Status, vm.TaskState)
		}
		c.Wait(30*time.Second, "SHUTOFF", func() bool {
			vm := serverOf(t, ctx, cl, id)
			return vm.Phase == model.PhaseStopped && vm.TaskState == "" && vm.VMState == "stopped"
		})
		if _, err := cl.StopServer(ctx, id); err == nil || !nova.IsStatus(err, 409) || !strings.Contains(err.Error(), "in vm_state stopped") {
			t.Errorf("a second stop: %v; want 409 in vm_state stopped", err)
		}
		must(t, cl.StartServer(ctx, id))
		c.Wait(30*time.Second, "ACTIVE", func() bool {
			vm := serverOf(t, ctx, cl, id)
			return vm.Phase == model.PhaseRunning && vm.TaskState == ""
		})
		if last, err := cl.LastPowerAction(ctx, id); err != nil || last.Action != "start" {
			t.Errorf("after a start, the newest power action %+v, %v; want the start", last, err)
		}
		c.MustAction(id, map[string]any{"pause": nil})
		c.Wait(30*time.Second, "PAUSED", func() bool { return serverOf(t, ctx, cl, id).Phase == model.PhasePaused })
		if st, text := c.Action(id, map[string]any{"os-stop": nil}); st != 409 {
			t.Errorf("stopping a paused server: %d %s; want 409", st, text)
		}
		var acts struct {
			InstanceActions []struct {
				Action    string `json:"action"`
				RequestID string `json:"request_id"`
			} `json:"instanceActions"`
		}
		c.API.Must("GET", "compute", "/servers/"+id+"/os-instance-actions", nil, &acts, 200)
		var names []string
		for _, a := range acts.InstanceActions {
			names = append(names, a.Action)
			if !strings.HasPrefix(a.RequestID, "req-") {
				t.Errorf("action %s has request ID %q", a.Action, a.RequestID)
			}
		}
		if want := []string{"pause", "start", "stop", "create"}; !slices.Equal(names, want) {
			t.Errorf("instance actions %v; want %v (newest first)", names, want)
		}
	})
}

// No server boots on a disabled service: a 2.74 requested host (the scheduler's filters run)
// and an admin's forced host (they do not) alike end in ERROR, no valid host, their host null
// (Placement's COMPUTE_STATUS_DISABLED trait, forbidden to every request from Train on).
// Enabled, the host takes drainctl's canary as it boots it: the requested host, no network.
func TestConformanceBootOnADisabledHost(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		_, err := cl.SetServiceEnabled(ctx, model.ComputeService{Host: "compute-2"}, false, "drainctl conformance")
		must(t, err)
		requested := c.BootAsync(map[string]any{"name": "requested", "host": "compute-2"})
		forced := c.BootAsync(map[string]any{"name": "forced", "availability_zone": "nova:compute-2"})
		for _, id := range []string{requested, forced} {
			s := c.WaitServer(id, 60*time.Second, "ERROR", func(s novatest.Server) bool { return s.Status == "ERROR" })
			if s.Fault == nil || !strings.Contains(s.Fault.Message, "No valid host") {
				t.Errorf("%s on a disabled service: %+v", s.Name, s.Fault)
			}
			// A server placed nowhere shows its host null (not hidden): the lists still read.
			if vm := serverOf(t, ctx, cl, id); vm.Host != "" {
				t.Errorf("%s, placed nowhere, is on %q", s.Name, vm.Host)
			}
		}
		if _, err := cl.Snapshot(ctx); err != nil {
			t.Errorf("reading the cloud with servers placed nowhere: %v", err)
		}
		_, err = cl.SetServiceEnabled(ctx, model.ComputeService{Host: "compute-2"}, true, "")
		must(t, err)
		canary, err := cl.BootOn(ctx, "compute-2", "", ops.BootSpec{Name: "canary", Image: c.Image(), Flavor: "m1.tiny", Network: ops.NoNetwork})
		must(t, err)
		c.Wait(60*time.Second, "the canary ACTIVE on compute-2", func() bool {
			vm := serverOf(t, ctx, cl, canary)
			return vm.Phase == model.PhaseRunning && vm.Host == "compute-2"
		})
		if out, err := cl.ConsoleOutput(ctx, canary, 10); err != nil {
			t.Errorf("the canary's console: %v", err)
		} else {
			t.Logf("console: %q", out)
		}
		// A leftover canary is named by its journaled ID only while drainctl reads that server
		// on the host with the canary's name; one deleted since reads 404 (the journal is cleared).
		if vm := serverOf(t, ctx, cl, canary); vm.Name != "canary" || vm.Host != "compute-2" {
			t.Errorf("the canary read by its ID: %q on %q", vm.Name, vm.Host)
		}
		must(t, cl.DeleteServer(ctx, canary))
		c.Wait(60*time.Second, "the canary gone", func() bool { _, ok := c.Server(canary); return !ok })
		must(t, cl.DeleteServer(ctx, canary)) // again: gone is no error
		var status interface{ HTTPStatus() int }
		if _, err := cl.Server(ctx, canary); !errors.As(err, &status) || status.HTTPStatus() != 404 {
			t.Errorf("the deleted canary read by its ID: %v; want a 404", err)
		}
	})
}

// changes-since: after a full read, the next read asks only what changed and still sees a
// server stopped, one deleted (gone) and one booted since.
func TestConformanceChangesSince(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		stopped, deleted := c.Boot("cs-stop", "compute-0"), c.Boot("cs-del", "compute-1")
		if _, err := cl.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		c.Stop(stopped)
		must(t, cl.DeleteServer(ctx, deleted))
		c.Wait(60*time.Second, "cs-del gone", func() bool { _, ok := c.Server(deleted); return !ok })
		booted := c.Boot("cs-new", "compute-2")
		snap, err := cl.Snapshot(ctx)
		must(t, err)
		seen := map[string]model.VM{}
		for _, vm := range snap.VMs {
			seen[vm.ID] = vm
		}
		if vm, ok := seen[stopped]; !ok || vm.Phase != model.PhaseStopped {
			t.Errorf("the stopped server: %+v (seen %v)", vm, ok)
		}
		if _, ok := seen[deleted]; ok {
			t.Errorf("the deleted server is still in the read")
		}
		if vm, ok := seen[booted]; !ok || vm.Host != "compute-2" {
			t.Errorf("the booted server: %+v (seen %v)", vm, ok)
		}
	})
}

// Paging: with a page of one, every list still comes whole (servers of a host, migrations).
func TestConformancePaging(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx := context.Background()
		creds, err := nova.ResolveCredentials(nil, model.OpenStackConfig{}, c.Getenv)
		must(t, err)
		cl, err := nova.Connect(ctx, creds, nova.Options{Timeout: 30 * time.Second, PageSize: 1})
		must(t, err)
		ids := []string{c.Boot("page-1", "compute-1"), c.Boot("page-2", "compute-1"), c.Boot("page-3", "compute-1")}
		vms, err := cl.Servers(ctx, "compute-1")
		must(t, err)
		var got []string
		for _, vm := range vms {
			got = append(got, vm.ID)
		}
		slices.Sort(got)
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			t.Errorf("servers of compute-1 in pages of one: %v; want %v", got, ids)
		}
		for _, id := range ids[:2] {
			must(t, cl.LiveMigrate(ctx, id, "compute-2"))
		}
		c.Wait(60*time.Second, "two live migrations to compute-2 completed", func() bool {
			ms, err := cl.Migrations(ctx, nova.MigrationFilter{Source: "compute-1", Status: "completed"})
			must(t, err)
			n := 0
			for _, m := range ms {
				if slices.Contains(ids, m.InstanceID) {
					n++
				}
			}
			return n == 2
		})
	})
}

// No valid host for a live migration: still 202; the record goes to error, the server stays
// ACTIVE where it was with no task, and its instance action says why.
func TestConformanceNoValidHost(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("novalid-1", "compute-0")
		for _, h := range []string{"compute-1", "compute-2"} {
			_, err := cl.SetServiceEnabled(ctx, model.ComputeService{Host: h}, false, "drainctl conformance")
			must(t, err)
		}
		turnedDown(t, c, cl, id, "")
	})
}

// A live migration asked to a host whose service is disabled (since 2.30, without force): the
// scheduler checks the host it is given when it acts, and turns it down as it does when it
// finds none (202, the record in error, the server ACTIVE where it was, the action's error
// NoValidHost). drainctl's live moves rely on it instead of reading the host before each.
func TestConformanceARequestedHostDisabledIsTurnedDown(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		cl := drainctlClient(t, c)
		id := c.Boot("turned-down-1", "compute-0")
		_, err := cl.SetServiceEnabled(context.Background(), model.ComputeService{Host: "compute-1"}, false, "drainctl conformance")
		must(t, err)
		turnedDown(t, c, cl, id, "compute-1")
	})
}

// turnedDown asks for a live migration of id (on compute-0) to host ("": the scheduler's
// choice) and checks Nova turns it down: the record in error, the server ACTIVE on compute-0
// with no task, the action's error NoValidHost.
func turnedDown(t *testing.T, c *novatest.Cloud, cl *nova.Client, id, host string) {
	t.Helper()
	ctx := context.Background()
	asked := c.Clock()
	must(t, cl.LiveMigrate(ctx, id, host))
	rec := recordOf(t, c, ctx, cl, id, model.MigrationTypeLive, asked)
	c.Wait(30*time.Second, "the record in error", func() bool {
		ms, err := cl.MigrationsOf(ctx, id)
		must(t, err)
		return ms[0].ID == rec.ID && ms[0].Status == model.MigrationFailed
	})
	c.Wait(30*time.Second, "ACTIVE on compute-0, no task", func() bool {
		vm := serverOf(t, ctx, cl, id)
		return vm.Phase == model.PhaseRunning && vm.Host == "compute-0" && vm.TaskState == ""
	})
	f, err := cl.LastActionError(ctx, id, model.MoveLive)
	must(t, err)
	if !strings.Contains(f.Message, "No valid host") || !f.NoValidHost || f.CannotLive {
		t.Errorf("the action's error: %+v (NoValidHost, and not CannotLive, expected)", f)
	}
}

// A nova-compute's silence is read on the cloud's own clock (its API's Date less updated_at),
// as automatic recovery reads it: a live one's is under its report interval; a dead one's
// grows from its last report, no longer than since its death and one report interval. Then a
// dead service forced down is disabled at once (recover forces it down first: a disable of a
// service Nova still deems up asks its compute over RPC).
func TestConformanceAServicesSilenceIsTheClouds(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		const reportBound = 12 * time.Second // the real one reports every 2 s here, the simulator every 10 s
		live, err := cl.ComputeServices(ctx, "compute-0")
		must(t, err)
		if live[0].Silent >= reportBound || live[0].UpdatedAt.IsZero() {
			t.Errorf("a live nova-compute silent for %s (updated_at %s); want under %s", live[0].Silent, live[0].UpdatedAt, reportBound)
		}
		c.StopCompute("compute-1")
		died := c.Clock()
		var dead model.ComputeService
		c.Wait(60*time.Second, "compute-1 silent for 5 s on the cloud's clock", func() bool {
			svcs, err := cl.ComputeServices(ctx, "compute-1")
			must(t, err)
			dead = svcs[0]
			return dead.Silent >= 5*time.Second
		})
		if since := c.Clock().Sub(died); dead.Silent > since+reportBound {
			t.Errorf("compute-1 silent for %s, %s after its death; want no more than that and one report interval", dead.Silent, since)
		}
		_, err = cl.SetForcedDown(ctx, "compute-1", true)
		must(t, err)
		asked := time.Now()
		_, err = cl.SetServiceEnabled(ctx, model.ComputeService{Host: "compute-1"}, false, "conformance: a dead host")
		must(t, err)
		if took := time.Since(asked); took > 5*time.Second {
			t.Errorf("disabling a dead service forced down took %s; want an answer at once", took)
		}
	})
}

// An owner's stays is bounded from the server's last change ([policy.maintenance] stays_for):
// setting a server's metadata moves its updated_at on, as drainctl reads it, on both Novas
// (measured first on the real one: the simulator follows it).
func TestConformanceSettingMetadataIsAChange(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("stays-probe", "compute-0")
		before := serverOf(t, ctx, cl, id)
		if before.Updated.IsZero() {
			t.Fatalf("drainctl reads no updated_at: %+v", before)
		}
		// updated_at is kept to the second: the next second is a change.
		c.Wait(10*time.Second, "a second on the cloud's clock", func() bool { return c.Clock().Truncate(time.Second).After(before.Updated) })
		c.API.Must("POST", "compute", "/servers/"+id+"/metadata", map[string]any{"metadata": map[string]string{model.VMPolicyKey: "stays"}}, nil, 200)
		after := serverOf(t, ctx, cl, id)
		if after.PolicyAsked != "stays" || !after.Updated.After(before.Updated) {
			t.Errorf("after the metadata was set: asked %q, updated %s (was %s); want stays and a later updated_at",
				after.PolicyAsked, after.Updated, before.Updated)
		}
	})
}

// The moves under way, as every cap and step reads them: one list for the process, read by
// status once, then kept by reading what changed. From the moment Nova lists a move's record
// until it ends the list has it (one still "accepted" too), then it is seen ended; a cold
// move waiting for its confirm is listed among the host's cold moves but not as moving, and
// leaves the list at its confirm.
func TestConformanceMovesUnderWay(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		live, cold := c.Boot("uw-live", "compute-0"), c.Boot("uw-cold", "compute-1")
		c.Stop(cold)
		_, before, err := cl.MovingFrom(ctx, "", 0) // read by status: what follows is read by what changed
		must(t, err)
		find := func(id int64) (model.Migration, bool) {
			recent, err := cl.RecentMoves(ctx, 0)
			must(t, err)
			i := slices.IndexFunc(recent, func(m model.Migration) bool { return m.ID == id })
			if i < 0 {
				return model.Migration{}, false
			}
			return recent[i], true
		}
		asked := c.Clock()
		must(t, cl.LiveMigrate(ctx, live, ""))
		rec := recordOf(t, c, ctx, cl, live, model.MigrationTypeLive, asked)
		// The newest record's ID, read before a request, is below its record's (a move's
		// records are told by it), and a read after the record has it.
		if rec.ID <= before {
			t.Errorf("the newest record read before the request: %d; the request's record: %d; want newest < record (0: none yet)", before, rec.ID)
		}
		if _, after, err := cl.MovingFrom(ctx, "", 0); err != nil || after < rec.ID {
			t.Errorf("the newest record read after the request's record was made: %d (%v); want at least %d", after, err, rec.ID)
		}
		c.Wait(60*time.Second, "the live move seen ended", func() bool {
			m, ok := find(rec.ID)
			if !ok {
				t.Fatalf("the live move %d, listed by Nova, is not among the moves under way", rec.ID)
			}
			return m.Status == model.MigrationCompleted
		})
		if moving, _, err := cl.MovingFrom(ctx, "", 0); err != nil || slices.ContainsFunc(moving, func(m model.Migration) bool { return m.ID == rec.ID }) {
			t.Errorf("the live move ended but is still counted as moving: %v %+v", err, moving)
		}

		asked = c.Clock()
		must(t, cl.ColdMigrate(ctx, cold, ""))
		crec := recordOf(t, c, ctx, cl, cold, model.MigrationTypeCold, asked)
		c.Wait(60*time.Second, "VERIFY_RESIZE", func() bool { return serverOf(t, ctx, cl, cold).Phase == model.PhaseAwaitingConfirm })
		has := func(ms []model.Migration, err error) bool {
			must(t, err)
			return slices.ContainsFunc(ms, func(m model.Migration) bool { return m.ID == crec.ID })
		}
		if !has(cl.ColdFrom(ctx, "compute-1", 0)) {
			t.Errorf("the cold move waiting for its confirm is not among compute-1's cold moves")
		}
		if moving, _, err := cl.MovingFrom(ctx, "", 0); has(moving, err) {
			t.Errorf("the cold move waiting for its confirm is counted as moving (it loads no destination)")
		}
		must(t, cl.ConfirmResize(ctx, cold))
		c.Wait(60*time.Second, "the cold move seen ended", func() bool {
			m, ok := find(crec.ID)
			return ok && m.Status == model.MigrationCompleted
		})
		if has(cl.ColdFrom(ctx, "compute-1", 0)) {
			t.Errorf("the confirmed cold move is still among compute-1's cold moves")
		}
	})
}
