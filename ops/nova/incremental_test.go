package nova_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim"
)

// After a full read, a refresh reads only what changed: servers and migrations with
// changes-since (one page each at rest), a deleted server seen as gone, a changed one with
// its new state, a migration started seen in progress and then gone from the list when it
// completes; every FullReadEvery (and after ReadAllNext) everything is read again.
func TestSnapshotReadsWhatChanged(t *testing.T) {
	w := sim.NewWorld(sim.Options{Scale: 50})
	for _, h := range []string{"c0", "c1", "c2"} {
		w.AddHost(h, 16, 65536, 1000)
	}
	for i, name := range []string{"vm-a", "vm-b", "vm-c", "vm-d"} {
		w.AddServer(name, []string{"c0", "c1", "c2", "c0"}[i], sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	}
	// Nova's changes-since is "at or after": the servers updated in the newest second come
	// again. Let one be the newest, as in a cloud at rest.
	time.Sleep(60 * time.Millisecond) // 3 simulated seconds
	d, _ := w.ServerByName("vm-d")
	w.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[d.ID].Locked = true })
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := connect(t, srv, nova.Options{PageSize: 2})
	snapshot := func() (map[string]model.VM, []model.Migration) {
		t.Helper()
		snap, err := c.Snapshot(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]model.VM{}
		for _, vm := range snap.VMs {
			out[vm.Name] = vm
		}
		return out, snap.Migrations
	}
	serverPages := func() int { return w.Stats().ByRoute["GET /servers/detail"] }
	full, _ := snapshot()
	if len(full) != 4 || serverPages() != 3 { // 4 servers, 2 a page: 3 pages (the last one empty)
		t.Fatalf("full read: %d servers in %d pages", len(full), serverPages())
	}
	before := serverPages()
	again, _ := snapshot()
	if len(again) != 4 || serverPages()-before != 1 {
		t.Errorf("a refresh at rest: %d servers, %d server pages read; want 4 and 1", len(again), serverPages()-before)
	}
	// Changes: a server deleted, one stopped, one live-migrating.
	w.DeleteServer("vm-b")
	w.Stop("vm-c")
	a, _ := w.ServerByName("vm-a")
	w.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[a.ID].DirtyBytesPerSec = 0.9 * (1 << 30) })
	if err := c.LiveMigrate(ctx(t), a.ID, "c1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	vms, migs := snapshot()
	var names []string
	for n := range vms {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "vm-a,vm-c,vm-d" || vms["vm-c"].Status != "SHUTOFF" || len(migs) != 1 || migs[0].InstanceID != a.ID {
		t.Fatalf("after the changes: servers %v (vm-c %s), migrations in progress %+v", names, vms["vm-c"].Status, migs)
	}
	w.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[a.ID].DirtyBytesPerSec = 0 })
	deadline := time.Now().Add(10 * time.Second)
	for {
		vms, migs = snapshot()
		if len(migs) == 0 && vms["vm-a"].Host == "c1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the migration's end is not seen: vm-a on %s, in progress %+v", vms["vm-a"].Host, migs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// r: everything again.
	c.ReadAllNext()
	before = serverPages()
	if vms, _ = snapshot(); len(vms) != 3 || serverPages()-before != 2 {
		t.Errorf("after ReadAllNext: %d servers in %d pages; want 3 in 2 (a full read)", len(vms), serverPages()-before)
	}
}
