package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

func init() { lipgloss.SetColorProfile(termenv.Ascii) } // goldens without colour codes

var t0 = time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)

// inventory builds a cluster of n compute nodes plus a control plane and a storage node.
func inventory(n int) model.Inventory {
	inv := model.Inventory{At: t0, NovaConfigured: true, PDBs: []model.PDB{{Namespace: "shop", Name: "web-pdb", DisruptionsAllowed: 1}}}
	add := func(node model.Node) { inv.Nodes = append(inv.Nodes, node) }
	width := len(fmt.Sprint(n - 1))
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("compute-%0*d", width, i)
		node := model.Node{Name: name, Host: name,
			Kube: &model.KubeNode{Name: name, Ready: true, Schedulable: true, Roles: []string{"compute"},
				Allocatable: model.Resources{MilliCPU: 16000, MemoryBytes: 64 << 30, Pods: 110}},
			Requested:  model.Resources{MilliCPU: 1000 * int64(i+1), MemoryBytes: 2 << 30, Pods: 2},
			Compute:    &model.ComputeService{Host: name, Enabled: true, Up: true},
			Hypervisor: &model.Hypervisor{CapacityKnown: true, VCPUs: 64, VCPUsUsed: 12, MemoryMB: 262144, MemoryMBUsed: 24576},
			VMs: []model.VM{
				{ID: fmt.Sprintf("1a2b3c4d-0000-4000-8000-%012d", i), Name: fmt.Sprintf("vm-%04d", 2*i), Host: name, Phase: model.PhaseRunning, Status: "ACTIVE", Flavor: "m1.large", RAMMB: 8192, VCPUs: 4},
				{ID: fmt.Sprintf("5e6f7a8b-0000-4000-8000-%012d", i), Name: fmt.Sprintf("vm-%04d", 2*i+1), Host: name, Phase: model.PhaseRunning, Status: "ACTIVE", Flavor: "m1.small", RAMMB: 2048, VCPUs: 1},
			},
			Pods: []model.Pod{
				{Namespace: "openstack", Name: "libvirt-" + name, Phase: "Running", OwnerKind: "DaemonSet", Labels: map[string]string{"application": "libvirt"}},
				{Namespace: "shop", Name: "web-" + name, Phase: "Running", OwnerKind: "Deployment", PDBs: []string{"web-pdb"},
					Requests: model.Resources{MilliCPU: 500, MemoryBytes: 1 << 30, Pods: 1}},
			},
		}
		if i == 1 {
			node.Pods = append(node.Pods, model.Pod{Namespace: "shop", Name: "debug-shell", Phase: "Running"})
		}
		if i == 2 {
			node.Compute.Enabled, node.Compute.DisabledReason = false, "hardware ticket #4411"
		}
		add(node)
	}
	add(model.Node{Name: "cp-0", Kube: &model.KubeNode{Name: "cp-0", Ready: true, Schedulable: true, Roles: []string{"control-plane"}}, VMs: []model.VM{}})
	add(model.Node{Name: "storage-0", Kube: &model.KubeNode{Name: "storage-0", Ready: true, Schedulable: true, Roles: []string{"storage"}}, VMs: []model.VM{}})
	return inv
}

func newModel(t testing.TB, n int, w, h int) Model {
	hp, _ := policy.ParseSelectors("x", []string{"application in (nova, libvirt)"})
	m := New(context.Background(), nil, Options{Policy: policy.Options{IgnoreDaemonSets: true, HypervisorPods: hp[0]}, Title: "test", Now: func() time.Time { return t0 }})
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	inv := inventory(n)
	next, _ = next.Update(inventoryMsg{inv: inv, victims: policy.Rank(inv, m.s.opts.Policy, policy.DefaultWeights())})
	return next.(Model)
}

func press(m Model, keys ...string) Model {
	for _, k := range keys {
		var msg tea.KeyMsg
		switch k {
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "space":
			msg = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		case "pgdown":
			msg = tea.KeyMsg{Type: tea.KeyPgDown}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		next, _ := m.Update(msg)
		m = next.(Model)
	}
	return m
}

func TestNavigationFilterSelection(t *testing.T) {
	m := newModel(t, 5, 100, 30)
	if len(m.nodes().rows) != 7 {
		t.Fatalf("rows %d", len(m.nodes().rows))
	}
	m = press(m, "jj", "G", "g", "j") // "jj": two keys that arrived in one read
	if n, _ := m.current(); n.Name != "compute-1" {
		t.Errorf("cursor on %s", n.Name)
	}
	m = press(m, "/", "c", "p", "enter")
	if len(m.nodes().rows) != 1 || m.s.inv.Nodes[m.nodes().rows[0]].Name != "cp-0" {
		t.Errorf("filter cp: %v", m.nodes().rows)
	}
	m = press(m, "esc") // clears the filter
	if len(m.nodes().rows) != 7 {
		t.Errorf("after esc: %d rows", len(m.nodes().rows))
	}
	m = press(m, "g", "space", "space")
	if len(m.nodes().selected) != 2 || !m.nodes().selected["compute-0"] || !m.nodes().selected["compute-1"] {
		t.Errorf("selection %v", m.nodes().selected)
	}
	if got := m.targets(); strings.Join(got, ",") != "compute-0,compute-1" {
		t.Errorf("targets %v", got)
	}
	m = press(m, "enter")
	if !on[*detailPane](&m) || paneIn[*detailPane](&m).node != "compute-2" {
		t.Errorf("enter: screen %v detail %s", screenOf(m), paneIn[*detailPane](&m).node)
	}
	m = press(m, "esc", "?")
	if !on[*helpPane](&m) || !strings.Contains(m.View(), "force-complete") {
		t.Error("help")
	}
	m = press(m, "x")
	if !on[*nodesPane](&m) {
		t.Error("any key leaves help")
	}
}

func TestKeysThatCannotActSayWhy(t *testing.T) {
	m := newModel(t, 3, 100, 30)
	m = press(m, "u")
	if m.status != "no cluster" {
		t.Errorf("status %q", m.status)
	}
	m.eng = &ops.Engine{} // only cannot() looks at it
	m = press(m, "u")
	if m.status != "compute-0 is not cordoned" || !m.statusBad || !on[*nodesPane](&m) {
		t.Errorf("uncordon a schedulable node: %q", m.status)
	}
	ro := newModel(t, 3, 100, 30)
	ro.s.opts.ReadOnly = true
	keys := DefaultKeys().WithoutDangerous()
	ro.s.keys = &keys
	ro = press(ro, "e")
	if !on[*nodesPane](&ro) || !strings.HasPrefix(ro.status, "read-only (--readonly)") {
		t.Errorf("read-only evacuate acted, or said nothing: %v %q", screenOf(ro), ro.status)
	}
	if strings.Contains(ro.View(), "e evacuate") {
		t.Error("read-only footer shows a destructive key")
	}
}

// feed plays an operation's events into the model, as the engine would send them.
func feed(m Model, key string, evs ...ops.Event) Model {
	batch := eventsMsg{}
	for _, ev := range evs {
		batch = append(batch, tagged{ev: ev, key: key})
	}
	next, _ := m.Update(batch)
	return next.(Model)
}

func opModel(t testing.TB, w, h int) Model {
	m := newModel(t, 3, w, h)
	node, _ := m.s.inv.Node("compute-0")
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-0", Host: "compute-0", VMs: node.VMs, Pods: node.Pods[1:]}
	m.s.ops.add("compute-0", plan, t0, func() {})
	m.s.shownOp = "compute-0"
	m.push(&opPane{})
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	vm0, vm1 := node.VMs[0], node.VMs[1]
	return feed(m, "compute-0",
		ops.NewPlanReady(at(0), plan),
		ops.NewStepEvent(at(0), "compute-0", model.StepCordon, ops.StepDone, "unschedulable"),
		ops.NewStepEvent(at(1), "compute-0", model.StepMigrateVMs, ops.StepStarted, "live-migrate 2 VM(s)"),
		ops.NewMigrationEvent(at(2), "compute-0", ops.MigrationEvent{VM: vm0.Name, VMID: vm0.ID, State: ops.MigRequested, Source: "compute-0"}),
		ops.NewMigrationEvent(at(5), "compute-0", ops.MigrationEvent{VM: vm0.Name, VMID: vm0.ID, State: ops.MigRunning, Source: "compute-0", Dest: "compute-1",
			Total: 8 << 30, Processed: 6 << 30, Remaining: 3 << 30, Rate: 1 << 30, Converge: 1 << 30, ETA: 3 * time.Second}),
		ops.NewMigrationEvent(at(6), "compute-0", ops.MigrationEvent{VM: vm0.Name, VMID: vm0.ID, State: ops.MigRunning, Source: "compute-0", Dest: "compute-1",
			Total: 8 << 30, Processed: 20 << 30, Remaining: 2 << 30, Rate: 2 << 30, Converge: 1 << 30, ETA: 2 * time.Second, Stalled: true}),
		ops.NewMigrationEvent(at(6), "compute-0", ops.MigrationEvent{VM: vm1.Name, VMID: vm1.ID, State: ops.MigState(model.MigrationQueued), Source: "compute-0", Dest: "compute-2"}),
		ops.NewPodEvent(at(7), "compute-0", "shop/web-compute-0", ops.PodBlocked, "web-pdb", 2, ""),
	)
}

func TestOperationEventsUpdatePanes(t *testing.T) {
	m := opModel(t, 120, 30)
	op := m.s.ops.views["compute-0"]
	vm := op.vms[op.vmOrder[0]]
	if vm.state != ops.MigRunning || vm.remaining != 2<<30 || !vm.stalled || vm.dest != "compute-1" {
		t.Errorf("vm pane %+v", vm)
	}
	if p := op.pods["shop/web-compute-0"]; p.state != ops.PodBlocked || p.pdb != "web-pdb" {
		t.Errorf("pod %+v", p)
	}
	// Copied is what the bar shows (total less remaining), the ETA goes with the rate remaining
	// falls at, and bytes sent beyond the memory are said as rewritten pages, not as copied.
	wide := m
	wide.s.width = 160
	if v := wide.View(); !strings.Contains(v, "6G/8G  2G left  STALLED  eta 2s at 1024 MiB/s  link 2048 MiB/s  sent 20G (2.5× its memory") {
		t.Errorf("a live copy's line:\n%s", v)
	}
	// The node's row shows the operation inline.
	m = m.goHome()
	if v := m.View(); !strings.Contains(v, "evacuating: 0/2 VMs, 0/1 pods") {
		t.Errorf("row:\n%s", v)
	}
	m = feed(m, "compute-0", ops.NewRunDone(t0.Add(time.Minute), ops.Report{Op: model.OpEvacuate, Node: "compute-0", Result: ops.ResultDone}))
	if !op.finished() || m.running("compute-0") {
		t.Error("RunDone did not finish the view")
	}
}

func TestQuitWhileRunningAsks(t *testing.T) {
	m := opModel(t, 100, 30)
	cancelled := false
	m.s.ops.views["compute-0"].cancel = func() { cancelled = true }
	next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	m = next.(Model)
	if !on[*quitPane](&m) || cmd != nil || !strings.Contains(m.View(), "Still running: evacuate compute-0") {
		t.Fatalf("q while running: screen %v\n%s", screenOf(m), m.View())
	}
	m = press(m, "w")
	if !on[*opPane](&m) || cancelled {
		t.Error("w must go back and leave the operation running")
	}
	m = press(m, "q", "l")
	if !cancelled {
		t.Error("l must stop the operation at a safe point")
	}
}

// Goldens: fixed sizes, ASCII profile, fixed times; the final View is compared.
func golden(t *testing.T, m Model, w, h int) {
	t.Helper()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	tm.Send(tea.WindowSizeMsg{Width: w, Height: h})
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC}) // quits (no operation runs in these models)
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
	teatest.RequireEqualOutput(t, []byte(fm.View()))
}

func TestGoldenNodes80x24(t *testing.T) { golden(t, newModel(t, 30, 80, 24), 80, 24) }
func TestGoldenNodes140x30(t *testing.T) {
	golden(t, press(newModel(t, 3, 140, 30), "j", "space"), 140, 30)
}
func TestGoldenDetail(t *testing.T) {
	m := newModel(t, 3, 120, 24)
	n := &m.s.inv.Nodes[1] // a VM of compute-1 is migrating
	n.VMs[0].Status, n.VMs[0].TaskState = "MIGRATING", "migrating"
	n.Migrations = []model.Migration{{ID: 7, InstanceID: n.VMs[0].ID, Status: model.MigrationRunning, SourceCompute: "compute-1", DestCompute: "compute-0"}}
	golden(t, press(m, "j", "enter"), 120, 24)
}
func TestGoldenHelp(t *testing.T) { golden(t, press(newModel(t, 3, 100, 40), "?"), 100, 40) }

func TestGoldenVictims(t *testing.T) {
	golden(t, press(newModel(t, 4, 120, 24), "s", "j", "j"), 120, 24)
}

func TestGoldenOperation(t *testing.T) {
	m := opModel(t, 100, 24)
	m.s.ops.views["compute-0"].report = &ops.Report{Result: ops.ResultDone} // so that ctrl+c quits
	golden(t, m, 100, 24)
}

func TestGoldenConfirm(t *testing.T) {
	m := newModel(t, 3, 100, 24)
	node, _ := m.s.inv.Node("compute-1")
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-1", VMs: node.VMs, Pods: node.Pods[1:],
		Steps: []model.Step{{Kind: model.StepCordon, Detail: "unschedulable + taint"}, {Kind: model.StepMigrateVMs, Detail: "live-migrate 2 VM(s)"}},
		Reasons: []model.Reason{
			{Code: model.BarePod, Severity: model.Blocks, Object: "shop/debug-shell", Message: "no controller", Override: "--force"},
			{Code: model.PDBExhausted, Severity: model.Waits, Object: "shop/web-compute-1", Message: "web-pdb", Override: "--disable-eviction"}}}
	next, _ := m.Update(planMsg{op: model.OpEvacuate, targets: []string{"compute-1"}, batch: ops.Batch{Plans: []model.Plan{plan}}})
	golden(t, next.(Model), 100, 24)
}

// BenchmarkFrame measures one Update (a key) and one View, the cost of a frame.
func BenchmarkFrame(b *testing.B) {
	for _, n := range []int{12, 500, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			m := newModel(b, n-2, 160, 50)
			down := tea.KeyMsg{Type: tea.KeyDown}
			up := tea.KeyMsg{Type: tea.KeyUp}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				msg := down
				if i%2 == 1 {
					msg = up
				}
				next, _ := m.Update(msg)
				m = next.(Model)
				_ = m.View()
			}
		})
	}
}

// t in a migrate plan opens a filterable list of the hosts the VM may go to: the
// scheduler's choice, then each enabled, up host that is not its source; enter plans again.
func TestMigrateTargetPicker(t *testing.T) {
	m := newModel(t, 3, 120, 30)
	plan := model.Plan{Op: model.OpMigrate, Node: "compute-0", Host: "compute-0", VM: "vm-0000"}
	next, _ := m.Update(planMsg{op: model.OpMigrate, targets: []string{"vm-0000"}, batch: ops.Batch{Plans: []model.Plan{plan}}})
	m = press(next.(Model), "t")
	if !on[*listPane](&m) || paneIn[*listPane](&m).kind != hostPicker {
		t.Fatalf("t: screen %v", screenOf(m))
	}
	var hosts []string
	for _, r := range paneIn[*listPane](&m).rows {
		hosts = append(hosts, r.key)
	}
	// compute-2 is disabled, compute-0 is the source.
	if strings.Join(hosts, ",") != ",compute-1" {
		t.Errorf("hosts %q", hosts)
	}
	m = press(m, "/", "c", "o", "m", "enter")
	next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if !on[*confirmPane](ptr(next)) || cmd == nil {
		t.Errorf("enter on compute-1: screen %v, cmd %v", screenOf(next.(Model)), cmd != nil)
	}
	if r, _ := paneIn[*listPane](&m).current(); r.key != "compute-1" {
		t.Errorf("the filter left %q under the cursor", r.key)
	}
}

// A Nova read asked for while another load runs (an operation ended during a re-join) is
// not lost: it starts when that load lands.
func TestFreshRefreshIsNotDropped(t *testing.T) {
	m := newModel(t, 3, 100, 30)
	m.eng = &ops.Engine{} // load() returns a Cmd; it is not run here
	cmd := m.refresh(false)
	if cmd == nil || !m.loading {
		t.Fatal("the first refresh must start a load")
	}
	if cmd := m.refresh(true); cmd != nil || !m.wantFresh {
		t.Fatal("a fresh refresh during a load must be remembered, not started")
	}
	next, cmd := m.Update(inventoryMsg{inv: inventory(3)})
	m = next.(Model)
	if cmd == nil || !m.loading || m.wantFresh {
		t.Errorf("the remembered refresh must start when the load lands: cmd=%v loading=%v", cmd != nil, m.loading)
	}
}

// NodeMaintenance keys: without the CRD they say so; with it, n asks (showing what the
// controller will do) then creates; the row and the detail show its state; N deletes it.
func TestNodeMaintenanceKeys(t *testing.T) {
	m := newModel(t, 3, 120, 30)
	m = press(m, "n")
	if !strings.Contains(m.status, "install deploy/crd-nodemaintenance.yaml") || !on[*nodesPane](&m) {
		t.Errorf("without the CRD: %q", m.status)
	}
	store := sim.NewMaintenances()
	m.s.opts.Maintenances = store
	m.eng = &ops.Engine{} // only checked for presence on these paths
	m = press(m, "N")
	if m.status != "compute-0 has no NodeMaintenance" {
		t.Errorf("N without one: %q", m.status)
	}
	// n plans the evacuation in a Cmd; the plan comes back as a planMsg for confirmation.
	node, _ := m.s.inv.Node("compute-0")
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-0", VMs: node.VMs, Steps: []model.Step{{Kind: model.StepCordon}}}
	next, _ := m.Update(planMsg{op: model.OpEvacuate, targets: []string{"compute-0"}, batch: ops.Batch{Plans: []model.Plan{plan}}, maintenance: maintainCreate})
	m = next.(Model)
	if v := m.View(); !on[*confirmPane](&m) || !strings.Contains(v, "Create a NodeMaintenance for compute-0? The controller will:") ||
		strings.Contains(v, "toggle --force") {
		t.Fatalf("confirm:\n%s", v)
	}
	next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	m = next.(Model)
	next, _ = m.Update(cmd())
	m = next.(Model)
	list := store.List()
	if len(list) != 1 || list[0].NodeName != "compute-0" || !strings.HasPrefix(list[0].Reason, "requested in drainctl by ") {
		t.Fatalf("store: %+v", list)
	}
	if !strings.Contains(m.status, "NodeMaintenance compute-0 created") {
		t.Errorf("status %q", m.status)
	}
	// The controller reports progress; the row and the detail follow it.
	store.UpdateStatus(context.Background(), "compute-0", model.MaintenanceStatus{Phase: model.MaintenanceRunning, DrainProgress: 50,
		EvictionPods: 2, PendingPods: []string{"shop/web-compute-0"}, TotalVMs: 2, MigratedVMs: 1, PendingVMs: []string{"vm-0001"}})
	next, _ = m.Update(maintMsg(store.List()))
	m = next.(Model)
	if row := m.View(); !strings.Contains(row, "NM Running 50%") {
		t.Errorf("row:\n%s", row)
	}
	if d := press(m, "enter").View(); !strings.Contains(d, "NodeMaintenance compute-0: Running 50% · pods 1/2 evicted · VMs 1/2 migrated") {
		t.Errorf("detail:\n%s", d)
	}
	store.UpdateStatus(context.Background(), "compute-0", model.MaintenanceStatus{Phase: model.MaintenanceFailed,
		LastError: "refused: shop/debug-shell: no controller (attempt 2, next in 2s)"})
	next, _ = m.Update(maintMsg(store.List()))
	if row := next.(Model).View(); !strings.Contains(row, "NM Failed, retrying: refused: shop") {
		t.Errorf("row when Failed:\n%s", row)
	}
	m = press(m, "n")
	if !strings.Contains(m.status, "already under NodeMaintenance compute-0 (Running 50%)") {
		t.Errorf("n twice: %q", m.status)
	}
	// N: the restore's plan, then the deletion (no finalizer in this store: it goes at once).
	next, _ = m.Update(planMsg{op: model.OpUncordon, targets: []string{"compute-0"}, batch: ops.Batch{Plans: []model.Plan{{Op: model.OpUncordon, Node: "compute-0"}}}, maintenance: maintainDelete})
	m = next.(Model)
	if v := m.View(); !strings.Contains(v, "Delete NodeMaintenance compute-0? The controller will put compute-0 back:") {
		t.Fatalf("confirm delete:\n%s", v)
	}
	next, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	m = next.(Model)
	m.Update(cmd())
	if len(store.List()) != 0 {
		t.Errorf("not deleted: %+v", store.List())
	}
}

func TestGoldenMaintenanceConfirm(t *testing.T) {
	m := newModel(t, 3, 100, 24)
	m.s.opts.Maintenances = sim.NewMaintenances()
	plan := model.Plan{Op: model.OpEvacuate, Node: "compute-1",
		Steps: []model.Step{{Kind: model.StepLease, Detail: "take the maintenance lease"}, {Kind: model.StepCordon, Detail: "unschedulable + taint"},
			{Kind: model.StepMigrateVMs, Detail: "live-migrate 2 VM(s)"}},
		Reasons: []model.Reason{{Code: model.BarePod, Severity: model.Blocks, Object: "shop/debug-shell", Message: "no controller", Override: "--force"}}}
	next, _ := m.Update(planMsg{op: model.OpEvacuate, targets: []string{"compute-1"}, batch: ops.Batch{Plans: []model.Plan{plan}}, maintenance: maintainCreate})
	golden(t, next.(Model), 100, 24)
}

// While the first read goes on the node rows are on screen, the header says so, and the
// full read (with its ranking) replaces what the read had so far; a late partial one is
// ignored.
func TestRowsWhileThePodsAreRead(t *testing.T) {
	m := New(context.Background(), nil, Options{Title: "test", Now: func() time.Time { return t0 }})
	next, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	partial := inventory(3)
	for i := range partial.Nodes {
		partial.Nodes[i].Pods = nil
	}
	next, _ = next.Update(syncMsg{inv: partial, syncing: true})
	view := next.(Model).View()
	if !strings.Contains(view, "reading pods…") || !strings.Contains(view, partial.Nodes[0].Name) || strings.Contains(view, "reading the cluster…") {
		t.Fatalf("while syncing:\n%s", view)
	}
	// PODS says … while the pods stream in: a 0 would be a claim.
	for _, line := range strings.Split(view, "\n") {
		if strings.Contains(line, partial.Nodes[0].Name) && (!strings.Contains(line, "…") || strings.Contains(line, " 0 ")) {
			t.Errorf("a row while the pods are read: %q", line)
		}
	}
	full := inventory(3)
	next, _ = next.Update(inventoryMsg{inv: full, victims: policy.Rank(full, policy.Options{}, policy.DefaultWeights())})
	next, _ = next.Update(syncMsg{inv: partial, syncing: false})
	view = next.(Model).View()
	if strings.Contains(view, "reading pods…") || next.(Model).s.totalPods == 0 {
		t.Fatalf("after the full read (%d pods):\n%s", next.(Model).s.totalPods, view)
	}
}

// An uncordon that brought home fewer VMs than it set out to says so in its header, with why,
// not a bare "done".
func TestAReturnThatLeftVMsAwaySaysSo(t *testing.T) {
	m := opModel(t, 160, 45)
	m = feed(m, "compute-0", ops.NewRunDone(t0.Add(time.Minute), ops.Report{Op: model.OpEvacuate, Node: "compute-0", Result: ops.ResultDone,
		Returns: []model.VMReturn{{Name: "vm-a", Home: true}, {Name: "vm-b", Why: "resized since it left: it stays where it is"},
			{Name: "vm-c", Home: true}}}))
	if v := m.View(); !strings.Contains(v, "done, 1 of 3 VM(s) not brought home: vm-b: resized since it left") {
		t.Errorf("the header:\n%s", v)
	}
}

// A failure's message, cut on the header and the log line, is whole in the node's describe
// (d), and a VM's describe says its owner's words and notice as its metadata has them.
func TestDescribeSaysTheFailureWholeAndTheOwnersWords(t *testing.T) {
	m := opModel(t, 80, 24)
	long := "evacuate failed: " + strings.Repeat("a VM's move was refused by Nova for a reason this long ", 6) + "END"
	m = feed(m, "compute-0", ops.NewRunDone(t0.Add(time.Minute), ops.Report{Op: model.OpEvacuate, Node: "compute-0",
		Result: ops.ResultFailed, Error: long}))
	n, _ := m.s.inv.Node("compute-0")
	if d := strings.Join(describeNode(n, &m.s).lines, " "); !strings.Contains(d, "last operation: evacuate failed") ||
		!strings.Contains(d, "END") {
		t.Errorf("the node's describe:\n%s", d)
	}
	vm := n.VMs[0]
	for i := range m.s.inv.Nodes {
		if m.s.inv.Nodes[i].Name == "compute-0" {
			m.s.inv.Nodes[i].VMs[0].GroupAsked, m.s.inv.Nodes[i].VMs[0].Notice = "db", "live-migration at 2026-12-06T10:00:00Z, by x"
		}
	}
	p, ok := describeVM(vm.ID, &m.s)
	if d := strings.Join(p.lines, "\n"); !ok || !strings.Contains(d, `its owner's drainctl:group = "db"`) ||
		!strings.Contains(d, "its owner told (drainctl:maintenance-event): live-migration at") {
		t.Errorf("the VM's describe:\n%s", d)
	}
}

// A degrading node that [proactive] acted on, or refused, says so on its row, and its describe
// says why, as the controller's record has it.
func TestAProactiveRefusalMarksItsNode(t *testing.T) {
	m := opModel(t, 160, 45)
	m.s.proactive = map[string]model.Proactive{"compute-1": {Node: "compute-1", Triggers: []string{"KernelDeadlock"},
		Action: model.ProactiveEvacuate, Outcome: "refused", Error: "compute-1 is degrading (KernelDeadlock): evacuate refused: no room"}}
	n, _ := m.s.inv.Node("compute-1")
	if got := notes(&m.s, n, nil); !strings.Contains(got, "degrading: evacuate refused") {
		t.Errorf("the row's notes: %q", got)
	}
	if d := strings.Join(describeNode(n, &m.s).lines, "\n"); !strings.Contains(d, "degrading (KernelDeadlock): [proactive] evacuate refused") ||
		!strings.Contains(d, "evacuate refused: no room") {
		t.Errorf("the describe:\n%s", d)
	}
}

// A node's VM table that cannot show every VM says how many more there are, never a part
// shown as if it were all.
func TestTheVMTableSaysHowManyMore(t *testing.T) {
	m := opModel(t, 80, 24)
	m.s.inv.NovaConfigured = true
	n := model.Node{Name: "compute-9"}
	for i := range 11 {
		n.VMs = append(n.VMs, model.VM{ID: fmt.Sprintf("id-%02d", i), Name: fmt.Sprintf("vm-%02d", i), Phase: model.PhaseRunning, Status: "ACTIVE"})
	}
	p := detailPane{chosen: map[string]bool{}}
	if got := p.vmTable(&m.s, n, 80, 8); !strings.Contains(got, "… 6 more") {
		t.Errorf("the table of 11 VMs in 8 lines:\n%s", got)
	}
}

// A status said of one node (c on a node that is not cordoned) does not stay on another's
// describe.
func TestAStatusDoesNotFollowToAnotherNodesDescribe(t *testing.T) {
	m := opModel(t, 160, 45)
	m.setStatus("compute-0 is not cordoned", true)
	next, _ := m.apply(describe{kind: "node", key: "compute-1"})
	m = next.(Model)
	if !on[*describePane](&m) || strings.Contains(m.View(), "compute-0 is not cordoned") {
		t.Errorf("compute-1's describe (screen %v):\n%s", screenOf(m), m.View())
	}
}

// journaled puts another process's operation on the node, as its journal annotation says it.
func journaled(t *testing.T, m *Model, node string, j ops.Journal) {
	t.Helper()
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.s.inv.Nodes {
		if n := &m.s.inv.Nodes[i]; n.Name == node {
			n.Kube.Annotations = map[string]string{ops.JournalAnnotation: string(raw)}
		}
	}
}

// The controller's recovery (or a colleague's evacuation), known here only by its journal, is
// on its node's row and in `o`, whether or not this view runs an operation of its own; this
// view's own journals are not listed twice.
func TestAnOperationOfAnotherProcessIsInO(t *testing.T) {
	m := newModel(t, 3, 160, 45)
	m.s.holder = "alice@laptop/77"
	journaled(t, &m, "compute-1", ops.Journal{Op: model.OpRecover, Phase: ops.PhaseRebuilding,
		Holder: "drainctl-controller/ctl-0/1", Updated: t0})
	journaled(t, &m, "compute-2", ops.Journal{Op: model.OpEvacuate, Phase: ops.PhaseMigrating, Holder: "alice@laptop/77"})
	n, _ := m.s.inv.Node("compute-1")
	if got := notes(&m.s, n, nil); !strings.Contains(got, "recover rebuilding by drainctl-controller") {
		t.Errorf("the row's notes: %q", got)
	}
	view := press(m, "o").View()
	if !strings.Contains(view, "recover compute-1: rebuilding, by drainctl-controller/ctl-0/1 · journal written") {
		t.Errorf("`o` with no operation of this view's:\n%s", view)
	}
	if strings.Contains(view, "compute-2") {
		t.Errorf("this process's own journal listed as another's:\n%s", view)
	}

	m = opModel(t, 80, 24)
	journaled(t, &m, "compute-1", ops.Journal{Op: model.OpEvacuate, Phase: ops.PhaseFailed,
		Holder: "bob@jump/9", Error: "verifying: 1 VM left\nsecond line"})
	view = m.View()
	if !strings.Contains(view, "Run by other processes") || !strings.Contains(view, "evacuate compute-1: failed, by bob@jump/9") ||
		!strings.Contains(view, "vm-0000") {
		t.Errorf("`o` beside this view's own operation:\n%s", view)
	}
}

// A VM waiting with nothing copied yet says why whole on an 80-column screen: its empty bar
// gives way to the reason (a wait cut to "for its turn: 1 move(s) at once from its…" hid
// the cap that holds it); a copy under way keeps its bar.
func TestAWaitingVMsReasonFitsANarrowScreen(t *testing.T) {
	m := opModel(t, 80, 24)
	node, _ := m.s.inv.Node("compute-0")
	why := "for its turn: 1 move(s) at once a host (concurrency.migrations_per_source)"
	m = feed(m, "compute-0", ops.NewMigrationEvent(t0.Add(8*time.Second), "compute-0",
		ops.MigrationEvent{VM: node.VMs[1].Name, VMID: node.VMs[1].ID, State: ops.MigWaiting, Source: "compute-0", Message: why}))
	v := m.View()
	if !strings.Contains(v, "  "+why+"\n") {
		t.Errorf("the waiting VM's reason is not whole at 80 columns:\n%s", v)
	}
	if !strings.Contains(v, "░") && !strings.Contains(v, "█") {
		t.Errorf("the copy under way lost its bar:\n%s", v)
	}
}
