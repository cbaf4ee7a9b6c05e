package ops_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// uncordon --return-vms after an evacuation brings each VM that left home, live or cold as
// it left; the journal is a claim: a VM moved, resized or deleted since stays where it is,
// and the report says why for each.
func TestUncordonBringsTheVMsHome(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0, c2 := c.Name("c0"), c.Name("c2")
	for _, name := range []string{"vm-c", "vm-d", "vm-e"} {
		c.World.AddServer(name, c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	}
	c.World.Stop("vm-e") // moves cold, and comes back cold
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	j, _ := ops.ReadJournal(c.Node(c0))
	if len(j.Left) != 5 {
		t.Fatalf("the journal records %d VMs that left, want 5: %+v", len(j.Left), j.Left)
	}
	for _, l := range j.Left {
		if vm, _ := c.World.ServerByName(l.Name); l.To != vm.Host || l.To == c0 || l.ID != vm.ID {
			t.Errorf("journal says %s went to %s; Nova says %s", l.Name, l.To, vm.Host)
		}
	}

	// Since: a colleague moves vm-b elsewhere, vm-c is resized, vm-d deleted.
	b, _ := c.World.ServerByName("vm-b")
	elsewhere := c.Name("c1")
	if b.Host == elsewhere {
		elsewhere = c2
	}
	c.World.Update(func(_ map[string]*sim.Host, servers map[string]*sim.VM) {
		for _, s := range servers {
			switch s.Name {
			case "vm-b":
				s.Host = elsewhere
			case "vm-c":
				s.Flavor = sim.Flavor{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40}
			}
		}
	})
	c.World.DeleteServer("vm-d")

	rec, rep, err := run(
		t,
		e,
		model.OpUncordon,
		c0,
		ops.RunOptions{Policy: defaults(), UncordonParams: ops.UncordonParams{ReturnVMs: true}},
	)
	if err != nil {
		t.Fatalf("uncordon --return-vms: %v\n%s", err, rec.Transcript(c.Px))
	}
	want := map[string]string{
		"vm-a": "",
		"vm-e": "",
		"vm-b": "moved since it left",
		"vm-c": "resized since it left (m1.medium, was m1.small)",
		"vm-d": "deleted since it left",
	}
	if len(rep.Returns) != len(want) {
		t.Fatalf("returns: %+v", rep.Returns)
	}
	for _, r := range rep.Returns {
		w := want[r.Name]
		if (w == "") != r.Home || !strings.HasPrefix(r.Why, w) {
			t.Errorf("%s: home %v, why %q; want %q", r.Name, r.Home, r.Why, w)
		}
	}
	for name, host := range map[string]string{"vm-a": c0, "vm-e": c0, "vm-b": elsewhere} {
		if vm, _ := c.World.ServerByName(name); vm.Host != host {
			t.Errorf("%s is on %s, want %s", name, vm.Host, host)
		}
	}
	if e, _ := c.World.ServerByName("vm-e"); e.Status != "SHUTOFF" || len(c.World.MigrationStatuses(e.ID)) != 2 {
		t.Errorf("vm-e (stopped) should go and come back cold, stopped: %s, migrations %v", e.Status, c.World.MigrationStatuses(e.ID))
	}
	if _, journaled := ops.ReadJournal(c.Node(c0)); journaled {
		t.Error("the journal was not cleared after the return")
	}
}

// A VM whose node someone else is working now (its lease held by a colleague) is left where
// it is: a return would race their moves.
func TestAReturnLeavesAVMOnANodeAColleagueWorks(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	colleague := c.Engine("colleague@b", nil)
	c0 := c.Name("c0")
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	a, _ := c.World.ServerByName("vm-a")
	if _, _, err := run(t, colleague, model.OpCordon, a.Host, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatalf("the colleague's cordon of %s: %v", a.Host, err)
	}
	_, rep, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{Policy: defaults(), UncordonParams: ops.UncordonParams{ReturnVMs: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Returns {
		if r.Name == "vm-a" && (r.Home || !strings.Contains(r.Why, "being worked by colleague@b")) {
			t.Errorf("vm-a: %+v; want it left, the colleague named", r)
		}
	}
	if now, _ := c.World.ServerByName("vm-a"); now.Host != a.Host {
		t.Errorf("vm-a moved from %s to %s under a colleague's lease", a.Host, now.Host)
	}
}

// The journal's list of VMs that left is a claim anyone who may annotate a node can write: a
// VM named there that Nova never saw leave the node (a forged entry), or that someone moved
// since from elsewhere (a stale one), stays where it is; only the VM whose last move, by
// Nova's record, was off this node comes home.
func TestAForgedOrStaleReturnRecordMovesNothing(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	c.World.AddServer("vm-elsewhere", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	// A colleague's deliberate move, before the evacuation: vm-col went from c0 to c1 by a real
	// migration. A forged entry for it (with no migration, or another's) must not undo it.
	col := c.World.AddServer("vm-col", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	if err := c.Nova.LiveMigrate(t.Context(), col.ID, c1); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "vm-col moved by a colleague", func() bool {
		now, _ := c.World.ServerByName("vm-col")
		return now.Host == c1 && now.Status == "ACTIVE" && now.TaskState == ""
	})
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	b, _ := c.World.ServerByName("vm-b")
	other, _ := c.World.ServerByName("vm-elsewhere")
	// Forged: vm-elsewhere never left c0, claimed where it is. Stale: vm-b's claim stands
	// (the right host), but it was moved since, by a real migration, from a host not its home.
	j, _ := ops.ReadJournal(c.Node(c0))
	j.Left = append(j.Left, model.VMLeft{ID: other.ID, Name: other.Name, To: c1, Method: model.MoveLive, Flavor: "m1.small"},
		model.VMLeft{ID: col.ID, Name: col.Name, To: c1, Method: model.MoveLive, Flavor: "m1.small"})
	away := c1
	if b.Host == c1 {
		away = c2
	}
	if err := c.Nova.LiveMigrate(t.Context(), b.ID, away); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "vm-b moved away", func() bool {
		now, _ := c.World.ServerByName("vm-b")
		return now.Host == away && now.Status == "ACTIVE" && now.TaskState == ""
	})
	if err := c.Nova.LiveMigrate(t.Context(), b.ID, b.Host); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "vm-b moved back where the journal says", func() bool {
		now, _ := c.World.ServerByName("vm-b")
		return now.Host == b.Host && now.Status == "ACTIVE" && now.TaskState == ""
	})
	raw, _ := json.Marshal(j)
	patch, _ := json.Marshal(
		map[string]any{"metadata": map[string]any{"annotations": map[string]string{ops.JournalAnnotation: string(raw)}}},
	)
	if _, err := c.CS.CoreV1().Nodes().Patch(t.Context(), c0, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 5*time.Second, "the cache sees the forged journal", func() bool {
		k, _ := c.Kube.Node(c0)
		got, _ := ops.ReadJournal(k)
		return len(got.Left) == 4
	})

	_, rep, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{Policy: defaults(), UncordonParams: ops.UncordonParams{ReturnVMs: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Returns {
		home := r.Name == "vm-a"
		if r.Home != home || (!home && !strings.Contains(r.Why, "the record is no proof")) {
			t.Errorf("%s: home %v, why %q", r.Name, r.Home, r.Why)
		}
	}
	for name, host := range map[string]string{"vm-a": c0, "vm-b": b.Host, "vm-elsewhere": c1, "vm-col": c1} {
		if now, _ := c.World.ServerByName(name); now.Host != host {
			t.Errorf("%s is on %s, want %s", name, now.Host, host)
		}
	}
}

// The TUI's way (u, H, y): a view plans and runs from its cache (FromCache), read while the
// node's nova-compute was still disabled; the return is judged on a read made after the step
// enabled it, so the VMs come home.
func TestAViewsReturnIsJudgedAfterTheEnable(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	if _, err := e.Inventory().Read(t.Context()); err != nil { // the view's last read: disabled
		t.Fatal(err)
	}
	back := ops.RunOptions{Policy: defaults(), FromCache: true, UncordonParams: ops.UncordonParams{ReturnVMs: true}}
	rec, rep, err := run(t, e, model.OpUncordon, c0, back)
	if err != nil {
		t.Fatalf("uncordon --return-vms: %v\n%s", err, rec.Transcript(c.Px))
	}
	bothHome(t, rep)
}

// A campaign's returns (ByHost) plan each VM's move on its home read afresh, on the last whole
// read, with the VM as the return read it just before: bringing VMs home reads no host of the
// cloud but home, once a VM (the VM's host is not read again).
func TestACampaignsReturnReadsItsHomeAlone(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	if _, err := e.Inventory().Read(t.Context()); err != nil { // the campaign's whole read
		t.Fatal(err)
	}
	c.World.ResetStats()
	back := ops.RunOptions{Policy: defaults(), ByHost: true, UncordonParams: ops.UncordonParams{ReturnVMs: true}}
	rec, rep, err := run(t, e, model.OpUncordon, c0, back)
	if err != nil {
		t.Fatalf("uncordon --return-vms: %v\n%s", err, rec.Transcript(c.Px))
	}
	bothHome(t, rep)
	st := c.World.Stats().ByRoute
	for _, whole := range []string{"GET /os-hypervisors/detail", "placement GET /resource_providers"} {
		if st[whole] != 0 {
			t.Errorf("the returns read %s %d times: the cloud's whole list", whole, st[whole])
		}
	}
	// Home's room read afresh (the move fills it), not its hypervisor (its service says it).
	if n := st["placement GET /resource_providers/{uuid}/allocations"]; n != len(rep.Returns) || st["GET /os-hypervisors/{id}"] != 0 {
		t.Errorf("%d rooms read by %d returns, %d hypervisors by ID; want home's alone, once a return", n, len(rep.Returns), st["GET /os-hypervisors/{id}"])
	}
}

// bothHome fails unless vm-a and vm-b came home.
func bothHome(t *testing.T, rep ops.Report) {
	t.Helper()
	if len(rep.Returns) != 2 {
		t.Fatalf("returns %+v; want vm-a and vm-b", rep.Returns)
	}
	for _, r := range rep.Returns {
		if !r.Home {
			t.Errorf("%s not brought home: %s", r.Name, r.Why)
		}
	}
}
