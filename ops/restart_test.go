package ops_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// restart-in-place: the VM is stopped where it is before the node's step and started there
// again when the node returns; one its owner had stopped stays stopped; a rollback starts
// what drainctl stopped too.
func TestARestartInPlaceVMIsStoppedAndStartedWhereItIs(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0, c1 := c.Name("c0"), c.Name("c1")
	c.World.SetMetadata("vm-a", model.VMPolicyKey, "restart-in-place")
	c.World.AddServer("vm-off", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.SetMetadata("vm-off", model.VMPolicyKey, "restart-in-place")
	c.World.Stop("vm-off") // its owner stopped it: it stays stopped
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true

	p, err := e.Plan(t.Context(), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]model.MoveMethod{}
	for _, vm := range p.VMs {
		methods[vm.Name] = vm.Method
	}
	if methods["vm-a"] != model.MoveRestart || methods["vm-off"] != model.MoveRestart || methods["vm-b"] != model.MoveLive {
		t.Fatalf("planned moves %v", methods)
	}
	rec, rep, err := run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	a, _ := c.World.ServerByName("vm-a")
	if a.Host != c0 || a.Status != "SHUTOFF" || len(c.World.MigrationStatuses(a.ID)) != 0 {
		t.Errorf(
			"vm-a after the evacuation: %s on %s, migrations %v; want SHUTOFF on %s, never moved",
			a.Status,
			a.Host,
			c.World.MigrationStatuses(a.ID),
			c0,
		)
	}
	if b, _ := c.World.ServerByName("vm-b"); b.Host == c0 {
		t.Error("vm-b (migrate) was not moved")
	}
	if len(rep.Left) != 2 || rep.Result != ops.ResultDone {
		t.Errorf("the report: %s, left %v; want the node not empty, vm-a and vm-off left on purpose", rep.Result, rep.Left)
	}
	j, _ := ops.ReadJournal(c.Node(c0))
	if len(j.Restart) != 1 || j.Restart[0] != a.ID {
		t.Errorf("the journal's restart list %v, want vm-a's ID alone", j.Restart)
	}

	rec, _, err = run(t, e, model.OpUncordon, c0, ops.RunOptions{Policy: defaults()})
	if err != nil {
		t.Fatalf("uncordon: %v\n%s", err, rec.Transcript(c.Px))
	}
	if a, _ := c.World.ServerByName("vm-a"); a.Host != c0 || a.Status != "ACTIVE" {
		t.Errorf("vm-a after uncordon: %s on %s, want ACTIVE on %s", a.Status, a.Host, c0)
	}
	if off, _ := c.World.ServerByName("vm-off"); off.Status != "SHUTOFF" {
		t.Errorf("vm-off, stopped by its owner, was started: %s", off.Status)
	}

	// A rollback starts again what drainctl stopped.
	c.World.AddServer("vm-r", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.SetMetadata("vm-r", model.VMPolicyKey, "restart-in-place")
	vmsOnly := ro
	vmsOnly.VMsOnly = true // c1's pods are the budget's last: the VMs are what this checks
	if rec, _, err := run(t, e, model.OpEvacuate, c1, vmsOnly); err != nil {
		t.Fatalf("evacuate %s: %v\n%s", c1, err, rec.Transcript(c.Px))
	}
	if r, _ := c.World.ServerByName("vm-r"); r.Status != "SHUTOFF" {
		t.Fatalf("vm-r after the evacuation: %s", r.Status)
	}
	if rec, _, err := run(t, e, model.OpRollback, c1, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatalf("rollback: %v\n%s", err, rec.Transcript(c.Px))
	}
	if r, _ := c.World.ServerByName("vm-r"); r.Status != "ACTIVE" || r.Host != c1 {
		t.Errorf("vm-r after the rollback: %s on %s", r.Status, r.Host)
	}
}

// A node removed (scale-down) does not return: a VM asking to be restarted in place is
// migrated instead, and the plan says why.
func TestARemovedNodeMigratesARestartInPlaceVM(t *testing.T) {
	c, e, c0, ro := restartInPlaceOnC0(t)
	rec, err := e.ScaleDown(t.Context(), c0, ro, nil, func(ops.Event) {})
	if err != nil {
		t.Fatalf("scale-down: %v %+v", err, rec)
	}
	a, _ := c.World.ServerByName("vm-a")
	if a.Host == c0 || a.Status != "ACTIVE" {
		t.Errorf("vm-a after its node's scale-down: %s on %s", a.Status, a.Host)
	}
	found := false
	for _, v := range rec.VMs {
		found = found || (v.VM == "vm-a" && v.Result == ops.MigCompleted)
	}
	if !found || len(rec.Left) != 0 {
		t.Errorf("vm-a not reported moved: %+v, left %v", rec.VMs, rec.Left)
	}
}

// A stop that never ends (the host's compute agent stuck: Nova accepted it, 202, and nothing
// happens) fails the step at timeouts.migration, saying what was last seen. The VM was
// journaled before its stop was asked, so the node's return knows drainctl stopped it.
func TestARestartInPlaceStopThatNeverEndsFailsAtItsTimeout(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Timeouts.Migration = model.Duration(2 * time.Second)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	c.World.SetMetadata("vm-a", model.VMPolicyKey, "restart-in-place")
	if err := c.World.ApplyFaultSpec("boot-hang=" + c0); err != nil {
		t.Fatal(err)
	}
	rec, _, err := run(t, e, model.OpEvacuate, c0, ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}})
	if err == nil || !strings.Contains(err.Error(), "not stopped within timeouts.migration (2s): ACTIVE (task powering-off)") {
		t.Fatalf("want the stop to fail at its timeout, still powering off; got %v\n%s", err, rec.Transcript(c.Px))
	}
	a, _ := c.World.ServerByName("vm-a")
	if a.Host != c0 || len(c.World.MigrationStatuses(a.ID)) != 0 {
		t.Errorf("vm-a moved: on %s, migrations %v", a.Host, c.World.MigrationStatuses(a.ID))
	}
	if j, _ := ops.ReadJournal(c.Node(c0)); !slices.Contains(j.Restart, a.ID) {
		t.Errorf("the journal's restart list %v does not name vm-a (%s)", j.Restart, a.ID)
	}
}

// A VM drainctl stopped for restart-in-place whose host then dies: the recovery rebuilds it
// and starts it where it was rebuilt; one the recovery leaves on the dead host (its local disk)
// is said to stay stopped, never a silent success.
func TestARestartInPlaceVMOfADeadHostIsStartedWhereItIsRebuilt(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	c.World.SetMetadata("vm-a", model.VMPolicyKey, "restart-in-place")
	c.World.SetMetadata("vm-b", model.VMPolicyKey, "restart-in-place")
	c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
		for _, vm := range vms {
			vm.VolumeBacked = vm.Name == "vm-a" // vm-b's local disk: a person's to lose
		}
	})
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Status != "SHUTOFF" || vm.Host != c0 {
			t.Fatalf("%s after the evacuation: %s on %s", name, vm.Status, vm.Host)
		}
	}
	c.World.KillHost(c0)
	kubetest.SetReady(t, c.CS, c0, false, time.Now().Add(-5*time.Minute))
	kubetest.Eventually(
		t,
		10*time.Second,
		"the engine's cache seeing "+c0+" NotReady",
		func() bool { k, _ := e.KubeNode(c0); return !k.Ready },
	)
	rro := ops.RunOptions{Policy: defaults(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	rro.Policy.KeepLocalDisks = true
	rec, rep, err := run(t, e, model.OpRecover, c0, rro)
	if err != nil {
		t.Fatalf("recover: %v\n%s", err, rec.Transcript(c.Px))
	}
	if a, _ := c.World.ServerByName("vm-a"); a.Host == c0 || a.Status != "ACTIVE" {
		t.Errorf("vm-a after the recovery: %s on %s; want ACTIVE where it was rebuilt", a.Status, a.Host)
	}
	if b, _ := c.World.ServerByName("vm-b"); b.Host != c0 || b.Status != "SHUTOFF" {
		t.Errorf("vm-b after the recovery: %s on %s; want left, stopped", b.Status, b.Host)
	}
	if !slices.ContainsFunc(rep.Left, func(l string) bool {
		return strings.Contains(l, "vm-b: stopped by drainctl for restart-in-place, not started")
	}) {
		t.Errorf("the report's left %v; want vm-b said stopped by drainctl, not started", rep.Left)
	}
}

// The journal steers nothing of another tenant's (#52.2): uncordon starts a VM only while its
// newest stop in Nova's instance actions is the one drainctl asked. A VM its owner stopped again
// during the window, and another tenant's stopped VM a forged journal names (with a made-up
// request ID), stay stopped, named; the VM drainctl stopped is started.
func TestAStartNeedsDrainctlsOwnStop(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	ctx := t.Context()
	for _, name := range []string{"vm-a", "vm-b"} {
		c.World.SetMetadata(name, model.VMPolicyKey, "restart-in-place")
	}
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	shutoff := func(name string) bool {
		vm, _ := c.World.ServerByName(name)
		return vm.Status == "SHUTOFF" && vm.TaskState == ""
	}
	// vm-a's owner starts it and stops it again; another tenant's vm-t is stopped by its owner.
	a, _ := c.World.ServerByName("vm-a")
	if err := c.Nova.StartServer(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(
		t,
		30*time.Second,
		"vm-a started by its owner",
		func() bool { vm, _ := c.World.ServerByName("vm-a"); return vm.Status == "ACTIVE" },
	)
	if _, err := c.Nova.StopServer(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	tenant := c.World.AddServer("vm-t", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	if _, err := c.Nova.StopServer(ctx, tenant.ID); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(
		t,
		30*time.Second,
		"vm-a and vm-t stopped by their owners",
		func() bool { return shutoff("vm-a") && shutoff("vm-t") },
	)
	// The forgery: one merge patch on the Node names vm-t, with a made-up request ID.
	j, _ := ops.ReadJournal(c.Node(c0))
	j.Restart = append(j.Restart, tenant.ID)
	j.Stopped[tenant.ID] = "req-00000000-0000-0000-0000-000000000000"
	raw, _ := json.Marshal(j)
	patch, _ := json.Marshal(
		map[string]any{"metadata": map[string]any{"annotations": map[string]string{ops.JournalAnnotation: string(raw)}}},
	)
	if _, err := c.CS.CoreV1().Nodes().Patch(ctx, c0, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The uncordon is planned from the engine's cache: it must have the forgery (under load
	// the watch is a moment behind the patch, and the plan would not name vm-t at all).
	kubetest.Eventually(t, 10*time.Second, "the engine's cache seeing the forged journal", func() bool {
		k, _ := e.KubeNode(c0)
		j, _ := ops.ReadJournal(k)
		return slices.Contains(j.Restart, tenant.ID)
	})
	rec, rep, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{Policy: defaults()})
	if err != nil {
		t.Fatalf("uncordon: %v\n%s", err, rec.Transcript(c.Px))
	}
	if b, _ := c.World.ServerByName("vm-b"); b.Status != "ACTIVE" {
		t.Errorf("vm-b, stopped by drainctl: %s; want started", b.Status)
	}
	for _, name := range []string{"vm-a", "vm-t"} {
		if !shutoff(name) {
			vm, _ := c.World.ServerByName(name)
			t.Errorf("%s, stopped by its owner: %s; want left stopped", name, vm.Status)
		}
	}
	var said string
	for _, ev := range rec.Events() {
		if s, ok := ev.(ops.StepEvent); ok && s.Step == model.StepRestartVMs && s.State == ops.StepDone {
			said = s.Detail
		}
	}
	if !strings.Contains(said, "vm-a: left stopped: its newest stop is not the one drainctl asked") ||
		!strings.Contains(said, "vm-t: left stopped") {
		t.Errorf("the step does not name the VMs left stopped (result %s): %q", rep.Result, said)
	}
}

// A VM drainctl stopped for restart-in-place whose node is then removed (scale-down) does
// not stay stopped in silence (#51.6): it is moved off with the rest and started where it
// went, as its own stop is drainctl's, or the report says why it was not.
func TestAStoppedRestartInPlaceVMOfARemovedNodeIsStartedWhereItGoes(t *testing.T) {
	c, e, c0, ro := restartInPlaceOnC0(t)
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	if a, _ := c.World.ServerByName("vm-a"); a.Status != "SHUTOFF" || a.Host != c0 {
		t.Fatalf("vm-a after the evacuation: %s on %s; want stopped in place", a.Status, a.Host)
	}
	rep, err := e.ScaleDown(t.Context(), c0, ro, nil, func(ops.Event) {})
	if err != nil {
		t.Fatalf("scale-down: %v %+v", err, rep)
	}
	a, _ := c.World.ServerByName("vm-a")
	said := slices.ContainsFunc(rep.Left, func(l string) bool {
		return strings.Contains(l, "vm-a: stopped by drainctl for restart-in-place, not started")
	})
	if a.Host == c0 || (a.Status != "ACTIVE" && !said) {
		t.Errorf(
			"vm-a after its node's scale-down: %s on %s, left %v; want running where it went, or said stopped",
			a.Status,
			a.Host,
			rep.Left,
		)
	}
}

// restartInPlaceOnC0 is a cluster whose vm-a (on c0) asks to be restarted in place, an engine,
// and run options that force past the other blockers.
func restartInPlaceOnC0(t *testing.T) (*simtest.Cluster, *ops.Engine, string, ops.RunOptions) {
	c := newCluster(t, 100)
	c.World.SetMetadata("vm-a", model.VMPolicyKey, "restart-in-place")
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	return c, c.Engine("tester@a", nil), c.Name("c0"), ro
}
