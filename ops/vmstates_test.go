package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// everyState puts on c0, beside the cluster's two ACTIVE VMs, one VM of every other kind a
// real host carries: paused, stopped, broken (ERROR with Nova's fault), locked, and one whose
// flavor passes a PCI device through. The bare pod goes, so that only VMs decide the plan.
func everyState(t *testing.T, c *simtest.Cluster) {
	t.Helper()
	c0 := c.Name("c0")
	for _, name := range []string{"vm-paused", "vm-off", "vm-broken", "vm-locked"} {
		c.World.AddServer(name, c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	}
	c.World.AddServer("vm-gpu", c0, sim.Flavor{Name: "g1.a100", RAMMB: 16384, VCPUs: 8, DiskGB: 80,
		ExtraSpecs: map[string]string{"pci_passthrough:alias": "a100:1", "hw:cpu_policy": "dedicated"}})
	c.World.Update(func(_ map[string]*sim.Host, servers map[string]*sim.VM) {
		for _, s := range servers {
			if s.Name == "vm-paused" {
				s.Status, s.VMState = "PAUSED", "paused"
			}
		}
	})
	c.World.Stop("vm-off")
	c.World.Break("vm-broken", "Build of instance aborted: disk /dev/sdb vanished")
	c.World.Lock("vm-locked")
	if err := c.CS.CoreV1().Pods(c.NS).Delete(kubetest.Ctx(t), "shell", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "the bare pod gone from the cache", func() bool {
		for _, p := range c.Kube.PodsOn(c0) {
			if p.Name == "shell" {
				return false
			}
		}
		return true
	})
}

func methods(p model.Plan) map[string]model.MoveMethod {
	out := map[string]model.MoveMethod{}
	for _, vm := range p.VMs {
		out[vm.Name] = vm.Method
	}
	return out
}

func codes(rs []model.Reason) map[string]model.ReasonCode {
	out := map[string]model.ReasonCode{}
	for _, r := range rs {
		out[r.Object] = r.Code
	}
	return out
}

func TestEveryVMStateOnOneHost(t *testing.T) {
	c := newCluster(t, 100)
	everyState(t, c)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	ctx := kubetest.Ctx(t)

	// The plan says how each VM moves, and what stops it; nothing changes.
	ro := ops.RunOptions{Policy: defaults()}
	before, novaBefore := c.Muts.N.Load(), c.World.Stats().Mutations
	plan, err := e.Plan(ctx, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]model.MoveMethod{"vm-a": "live", "vm-b": "live", "vm-paused": "live", "vm-off": "cold",
		"vm-broken": "stays", "vm-locked": "live", "vm-gpu": "stays"}
	if got := methods(plan); !mapsEqual(got, want) {
		t.Errorf("methods %v, want %v", got, want)
	}
	blockers := codes(plan.Blockers())
	if blockers["vm-broken"] != model.VMError || blockers["vm-gpu"] != model.VMPinned || len(blockers) != 2 ||
		codes(plan.Reasons)["vm-locked"] != model.VMLocked {
		t.Errorf("blockers %v", plan.Blockers())
	}
	for _, r := range plan.Blockers() {
		switch r.Object {
		case "vm-broken":
			if !strings.Contains(r.Message, "disk /dev/sdb vanished") || r.Override != model.OverrideSkipVM {
				t.Errorf("ERROR reason does not quote Nova's fault or name its override: %+v", r)
			}
		case "vm-gpu":
			if !strings.Contains(r.Message, "pci_passthrough:alias=a100:1") || r.Override != model.OverrideColdMigrateRunning {
				t.Errorf("pinned reason: %+v", r)
			}
		}
	}
	if _, _, err := run(t, e, model.OpEvacuate, c0, ro); !errors.As(err, new(*ops.RefusedError)) {
		t.Fatalf("want a refusal, got %v", err)
	}
	if c.Muts.N.Load() != before || c.World.Stats().Mutations != novaBefore {
		t.Fatal("a refused plan changed something")
	}

	// Leave the broken and the locked VM knowingly, move the PCI one cold: the run goes on;
	// the stopped VM is cold-migrated, confirmed and still SHUTOFF; the report and the verify
	// step say the node is not empty, and why.
	ro.Policy.SkipVMs = []string{"vm-broken", "vm-locked"}
	ro.Policy.ColdMigrateRunning = true
	plan, err = e.Plan(ctx, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	if got := methods(plan); got["vm-gpu"] != model.MoveCold || got["vm-broken"] != model.MoveStays || len(plan.Blockers()) != 0 {
		t.Fatalf("with the overrides: %v %v", got, plan.Blockers())
	}
	if r := codes(plan.Reasons); r["vm-gpu"] != model.Downtime {
		t.Errorf("the PCI VM's downtime is not in the plan: %v", plan.Reasons)
	}
	rec := &simtest.Recorder{}
	rep, err := e.Run(ctx, plan, ro, rec.Emit)
	if err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	for name, status := range map[string]string{"vm-a": "ACTIVE", "vm-paused": "PAUSED", "vm-off": "SHUTOFF", "vm-gpu": "ACTIVE"} {
		vm, _ := c.World.ServerByName(name)
		if vm.Host == c0 || vm.Status != status || vm.TaskState != "" {
			t.Errorf("%s: on %s, %s/%s; want moved and %s", name, vm.Host, vm.Status, vm.TaskState, status)
		}
	}
	for _, name := range []string{"vm-off", "vm-gpu"} {
		vm, _ := c.World.ServerByName(name)
		st := c.World.MigrationStatuses(vm.ID)
		if len(st) != 1 || st[0][len(st[0])-1] != "confirmed" {
			t.Errorf("%s: migrations %v, want one cold migration, confirmed", name, st)
		}
	}
	for _, name := range []string{"vm-broken", "vm-locked"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c0 {
			t.Errorf("%s was moved", name)
		}
	}
	if len(rep.Left) != 2 || !strings.Contains(strings.Join(rep.Left, ";"), "vm-broken") {
		t.Errorf("report.Left %v", rep.Left)
	}
	methodOf := map[string]model.MoveMethod{}
	for _, v := range rep.VMs {
		methodOf[v.VM] = v.Method
	}
	if methodOf["vm-off"] != model.MoveCold || methodOf["vm-a"] != model.MoveLive || methodOf["vm-broken"] != model.MoveStays {
		t.Errorf("report methods %v", methodOf)
	}
	var verify string
	coldPhases := map[ops.MigState]bool{}
	for _, ev := range rec.Events() {
		switch ev := ev.(type) {
		case ops.StepEvent:
			if ev.Step == model.StepVerify && ev.State == ops.StepDone {
				verify = ev.Detail
			}
		case ops.MigrationEvent:
			if ev.VM == "vm-off" && ev.Method == model.MoveCold {
				coldPhases[ev.State] = true
			}
		}
	}
	if !strings.HasPrefix(verify, "NOT EMPTY: 2 VM(s)") {
		t.Errorf("verify said %q", verify)
	}
	if !coldPhases[ops.MigVerifyResize] || !coldPhases[ops.MigConfirming] || !coldPhases[ops.MigCompleted] {
		t.Errorf("the cold move's events %v", coldPhases)
	}
}

// A kill -9 between a cold migration and its confirm: the rerun finds the VM in
// VERIFY_RESIZE and confirms it (the journal says it is drainctl's), without moving it again.
func TestColdMigrationConfirmedByTheRerun(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.World.AddServer("vm-off", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.Stop("vm-off")
	off, _ := c.World.ServerByName("vm-off")
	// The confirm fails (Nova unreachable for it), so the run is stopped right there.
	c.World.InjectFault(
		sim.Fault{
			Method:  "POST",
			Path:    regexp.MustCompile(`^/servers/[^/]+/action$`),
			Action:  "confirmResize",
			Status:  503,
			Message: "Service Unavailable",
		},
	)
	e := c.Engine("tester@a", nil)
	ro := forced()
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(kubetest.Ctx(t))
	_, err = e.Run(ctx, plan, ro, func(ev ops.Event) {
		if m, ok := ev.(ops.MigrationEvent); ok && m.VM == "vm-off" && strings.Contains(m.Message, "poll failed") {
			cancel() // as a kill would: the VM waits in VERIFY_RESIZE, unconfirmed
		}
	})
	if !errors.As(err, new(*ops.Interrupted)) {
		t.Fatalf("want an interruption, got %v", err)
	}
	if vm, _ := c.World.ServerByName("vm-off"); vm.Status != "VERIFY_RESIZE" || vm.Host == c0 {
		t.Fatalf("vm-off: %s on %s", vm.Status, vm.Host)
	}
	if j, _ := ops.ReadJournal(c.Node(c0)); !slices.ContainsFunc(
		j.ColdMoves,
		func(m ops.ColdMove) bool { return m.VM == off.ID && m.Migration != "" },
	) {
		t.Fatalf("the journal does not record the cold move with its migration: %+v", j)
	}
	c.World.ClearFaults()

	// Another process resumes: the node looks empty of VMs, but the step is not done.
	e2 := c.Engine("tester@b", func(o *ops.EngineOptions) { o.Successor = "tester@" })
	plan, err = e2.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range plan.Steps {
		if s.Kind == model.StepMigrateVMs && (s.Done || !strings.Contains(s.Detail, "confirm 1 cold migration(s)")) {
			t.Errorf("migrate step %+v", s)
		}
	}
	rec := &simtest.Recorder{}
	if _, err := e2.Run(kubetest.Ctx(t), plan, ro, rec.Emit); err != nil {
		t.Fatalf("rerun: %v\n%s", err, rec.Transcript(c.Px))
	}
	vm, _ := c.World.ServerByName("vm-off")
	st := c.World.MigrationStatuses(vm.ID)
	if vm.Status != "SHUTOFF" || vm.Host == c0 || len(st) != 1 || st[0][len(st[0])-1] != "confirmed" {
		t.Errorf("vm-off after the rerun: %s on %s, migrations %v", vm.Status, vm.Host, st)
	}
}

// An abort before the confirm reverts the cold move: the VM is back on its host, as it was.
func TestAbortRevertsAnUnconfirmedColdMigration(t *testing.T) {
	for _, tc := range []struct {
		name string
		poll time.Duration
	}{
		{"each step seen", 0},
		// A poll slower than the whole move first sees VERIFY_RESIZE: the move is still named
		// by its record before it is left, or the abort cannot prove it drainctl's and leaves it.
		{"first seen waiting", 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 100)
			c0 := c.Name("c0")
			c.World.AddServer("vm-off", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
			c.World.Stop("vm-off")
			c.Cfg.Policy.ConfirmCold = false // the operator confirms: the VM waits in VERIFY_RESIZE
			e := c.Engine("tester@a", func(o *ops.EngineOptions) {
				if tc.poll > 0 {
					o.Poll, o.StallAfter = tc.poll, 10*tc.poll
				}
			})
			rec, rep, err := run(t, e, model.OpEvacuate, c0, forced())
			if err != nil {
				t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
			}
			for _, v := range rep.VMs {
				if v.VM == "vm-off" && !strings.Contains(v.Message, "confirm_cold = false") {
					t.Errorf("the report does not say the move waits for the operator: %+v", v)
				}
			}
			if vm, _ := c.World.ServerByName("vm-off"); vm.Status != "VERIFY_RESIZE" {
				t.Fatalf("vm-off: %s", vm.Status)
			}
			rec, _, err = run(t, e, model.OpAbort, c0, ops.RunOptions{})
			if err != nil {
				t.Fatalf("abort: %v\n%s", err, rec.Transcript(c.Px))
			}
			kubetest.Eventually(t, 10*time.Second, "vm-off reverted onto its host", func() bool {
				vm, _ := c.World.ServerByName("vm-off")
				return vm.Host == c0 && vm.Status == "SHUTOFF" && vm.TaskState == ""
			})
			vm, _ := c.World.ServerByName("vm-off")
			if st := c.World.MigrationStatuses(vm.ID); len(st) != 1 || st[0][len(st[0])-1] != "reverted" {
				t.Errorf("migrations %v", st)
			}
		})
	}
}

// A running VM that cannot live-migrate, found only when Nova refuses (its flavor's extra
// specs hidden from this user): without the flag the evacuation fails naming the VM, Nova's
// message and the flag, and the refusal is not retried; with it the VM moves cold.
func TestLiveMigrationRefusedThenCold(t *testing.T) {
	c := simtest.NewClusterWith(t, sim.Options{Scale: 100, Seed: 7, HideExtraSpecs: true})
	c0 := c.Name("c0")
	c.World.AddServer(
		"vm-gpu",
		c0,
		sim.Flavor{Name: "g1", RAMMB: 4096, VCPUs: 2, DiskGB: 20, ExtraSpecs: map[string]string{"resources:VGPU": "1"}},
	)
	gpu, _ := c.World.ServerByName("vm-gpu")
	e := c.Engine("tester@a", nil)
	ro := forced()
	rec, _, err := run(t, e, model.OpEvacuate, c0, ro)
	var notMoved *ops.NotMovedError
	if !errors.As(err, &notMoved) || !strings.Contains(err.Error(), "vm-gpu") || !strings.Contains(err.Error(), "pre-check") ||
		notMoved.VMs[0].Override != model.OverrideColdMigrateRunning {
		t.Fatalf("want a failure naming the VM, Nova's message and the cold override, got %v\n%s", err, rec.Transcript(c.Px))
	}
	if n := len(c.World.MigrationStatuses(gpu.ID)); n != 1 {
		t.Errorf("the refused live migration was retried: %d attempts", n)
	}
	ro.Policy.ColdMigrateRunning = true
	rec, _, err = run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("with --cold-migrate-running: %v\n%s", err, rec.Transcript(c.Px))
	}
	if vm, _ := c.World.ServerByName("vm-gpu"); vm.Host == c0 || vm.Status != "ACTIVE" {
		t.Errorf("vm-gpu: %s on %s", vm.Status, vm.Host)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A hard anti-affinity group whose other members sit on every other host leaves its member
// no legal host: the plan refuses it naming the group, nothing changes, and the ranking
// agrees. With a host free of members, the member goes there and nowhere else.
func TestAntiAffinityLeavesNoLegalHost(t *testing.T) {
	c := newCluster(t, 100)
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	c.World.AddServer("db-1", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.AddServer("db-2", c2, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.AddServerGroup("db", "anti-affinity", "vm-a", "db-1", "db-2")
	e := c.Engine("tester@a", nil)
	ro := forced()
	before, novaBefore := c.Muts.N.Load(), c.World.Stats().Mutations
	rec, _, err := run(t, e, model.OpEvacuate, c0, ro)
	var refused *ops.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("want a refusal, got %v\n%s", err, rec.Transcript(c.Px))
	}
	found := false
	for _, r := range refused.Reasons {
		if r.Code == model.NoLegalHost && r.Object == "vm-a" &&
			strings.Contains(r.Message, "anti-affinity group db: members on 2 of the 2 other hosts") {
			found = true
		}
	}
	if !found {
		t.Errorf("the refusal does not name the group: %v", refused.Reasons)
	}
	if c.Muts.N.Load() != before || c.World.Stats().Mutations != novaBefore {
		t.Fatal("a refused plan changed something")
	}
	victims, _, err := e.Recommend(kubetest.Ctx(t), defaults(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !hasCode(victims, c0, model.NoLegalHost) {
		t.Errorf("the ranking calls %s possible: %+v", c0, victims)
	}

	// A host without a member: the plan goes through, and vm-a lands there.
	spare := c.Name("spare")
	c.World.AddHost(spare, 64, 262144, 2000)
	kubetest.Node(t, c.CS, spare)
	rec, _, err = run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("with a spare host: %v\n%s", err, rec.Transcript(c.Px))
	}
	if vm, _ := c.World.ServerByName("vm-a"); vm.Host != spare {
		t.Errorf("vm-a went to %s, want %s (the only host without a member of db)", vm.Host, spare)
	}
}

// A VM with an SR-IOV port (binding:vnic_type direct, read from Neutron when it is in the
// catalog) cannot live-migrate: the plan says so before anything changes, naming the port,
// and --cold-migrate-running moves it cold.
func TestDirectPortPinsAVM(t *testing.T) {
	c := simtest.NewClusterWith(t, sim.Options{Scale: 100, Seed: 7, Neutron: true})
	c0 := c.Name("c0")
	c.World.AddServer("vm-sriov", c0, sim.Flavor{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40})
	c.World.AddPort("vm-sriov", "normal")
	c.World.AddPort("vm-sriov", "direct")
	c.World.AddPort("vm-a", "normal")
	e := c.Engine("tester@a", nil)
	ro := forced()
	ro.Policy.Force = false
	ro.Policy.DeleteEmptyDirData = true
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	var pinned *model.Reason
	for _, r := range plan.Blockers() {
		if r.Object == "vm-sriov" {
			pinned = &r
		}
		if r.Object == "vm-a" {
			t.Errorf("a normal port pins nothing: %+v", r)
		}
	}
	if pinned == nil || pinned.Code != model.VMPinned || !strings.Contains(pinned.Message, "binding:vnic_type=direct") {
		t.Fatalf("the SR-IOV VM is not a blocker naming its port: %+v", plan.Blockers())
	}
	ro.Policy.ColdMigrateRunning, ro.Policy.Force = true, true // --force: the bare pod
	rec, _, err := run(t, e, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatalf("with --cold-migrate-running: %v\n%s", err, rec.Transcript(c.Px))
	}
	vm, _ := c.World.ServerByName("vm-sriov")
	if st := c.World.MigrationStatuses(vm.ID); vm.Host == c0 || vm.Status != "ACTIVE" || len(st) != 1 ||
		st[0][len(st[0])-1] != "confirmed" {
		t.Errorf("vm-sriov: %s on %s, migrations %v; want one cold move, confirmed", vm.Status, vm.Host, st)
	}
}

// A VM locked by its owner moves as Nova lets an admin move a locked server (live when
// running, cold when stopped), the lock kept and the plan saying so. policy.respect_locks
// keeps it where it is. With credentials of no admin role it stays, and the plan says why:
// Nova refuses such a token (409 "is locked"), as the simulator does.
func TestLockedVMsMoveAsAnAdminMay(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	ctx := kubetest.Ctx(t)
	c.World.Stop("vm-b")
	c.World.Lock("vm-a")
	c.World.Lock("vm-b")
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}

	strict := ro
	strict.Policy.RespectLocks = true
	p, err := c.Engine("t", nil).Plan(ctx, model.OpEvacuate, c0, strict)
	if err != nil {
		t.Fatal(err)
	}
	if b := codes(p.Blockers()); b["vm-a"] != model.VMLocked || b["vm-b"] != model.VMLocked {
		t.Errorf("respect_locks: blockers %v", p.Blockers())
	}

	e := c.Engine("admin@t", nil)
	p, err = e.Plan(ctx, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	if got := methods(p); got["vm-a"] != model.MoveLive || got["vm-b"] != model.MoveCold || len(p.Blockers()) != 0 {
		t.Fatalf("as an admin: %v %v", got, p.Blockers())
	}
	for _, r := range p.Reasons {
		if r.Code == model.VMLocked && !strings.Contains(r.Message, "the lock kept") {
			t.Errorf("the plan's note: %+v", r)
		}
	}
	if _, err := e.Run(ctx, p, ro, func(ops.Event) {}); err != nil {
		t.Fatal(err)
	}
	a, _ := c.World.ServerByName("vm-a")
	b, _ := c.World.ServerByName("vm-b")
	if a.Host == c0 || b.Host == c0 || !a.Locked || !b.Locked || a.Status != "ACTIVE" || b.Status != "SHUTOFF" {
		t.Errorf("vm-a %s on %s locked %v; vm-b %s on %s locked %v", a.Status, a.Host, a.Locked, b.Status, b.Host, b.Locked)
	}

	rules, _ := simtest.DeployRules(t, "../deploy/README.md")
	c.AsOperator("member", rules)
	if err := c.Nova.LiveMigrate(ctx, a.ID, ""); err == nil || !strings.Contains(err.Error(), "is locked") {
		t.Errorf("a member's live migration of a locked server: %v, want Nova's 409", err)
	}
	p, err = c.Engine("member@t", nil).Plan(ctx, model.OpEvacuate, a.Host, ro)
	if err != nil {
		t.Fatal(err)
	}
	if b := p.Blockers(); len(b) == 0 || b[0].Code != model.VMLocked || !strings.Contains(b[0].Message, "no admin role") {
		t.Errorf("without the admin role: blockers %v", b)
	}
}

// Prove before acting, undoing: a cold move drainctl asked for but whose record it never
// read (a run killed between the request and the read) is not reverted by an abort, since
// nothing proves the move waiting is drainctl's; the abort says which VM it left and how to
// revert it by hand.
func TestAbortSaysTheColdMoveItCannotProve(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.World.AddServer("vm-off", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.Stop("vm-off")
	c.Cfg.Policy.ConfirmCold = false
	e := c.Engine("tester@a", nil)
	if rec, _, err := run(t, e, model.OpEvacuate, c0, forced()); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	j, ok := ops.ReadJournal(c.Node(c0))
	if !ok || len(j.ColdMoves) != 1 || j.ColdMoves[0].Migration == "" {
		t.Fatalf("the journal's cold moves: %+v", j.ColdMoves)
	}
	j.ColdMoves[0].Migration = "" // as a run killed before it read the record left it
	raw, _ := json.Marshal(j)
	c.SetAnnotation(c0, ops.JournalAnnotation, string(raw))
	kubetest.Eventually(t, 5*time.Second, "the cache shows the planted journal", func() bool {
		k, _ := c.Kube.Node(c0)
		jj, _ := ops.ReadJournal(k)
		return len(jj.ColdMoves) == 1 && jj.ColdMoves[0].Migration == ""
	})
	rec, _, err := run(t, e, model.OpAbort, c0, ops.RunOptions{})
	if err != nil {
		t.Fatalf("abort: %v\n%s", err, rec.Transcript(c.Px))
	}
	vm, _ := c.World.ServerByName("vm-off")
	said := ""
	for _, ev := range rec.Events() {
		if s, ok := ev.(ops.StepEvent); ok && s.Step == model.StepAbort {
			said += s.Detail
		}
	}
	if !strings.Contains(said, "vm-off left in VERIFY_RESIZE") || !strings.Contains(said, "openstack server migrate revert "+vm.ID) {
		t.Errorf("the abort does not say the VM it left: %q", said)
	}
	time.Sleep(100 * time.Millisecond) // a revert would have ended (1 s simulated)
	if vm, _ := c.World.ServerByName("vm-off"); vm.Status != "VERIFY_RESIZE" || vm.Host == c0 {
		t.Errorf("vm-off %s on %s: an unproven cold move was reverted", vm.Status, vm.Host)
	}
}

// Prove before acting: a cold move is confirmed only once Nova's record of it names it. A
// conductor that never makes the record (the world's records hours late): the VM waits in
// VERIFY_RESIZE, nothing proves that move is drainctl's, so it is left unconfirmed and the
// run fails at timeouts.migration saying so.
func TestAColdMoveWhoseRecordNeverAppearsIsLeftUnconfirmed(t *testing.T) {
	c := simtest.NewClusterWith(t, sim.Options{Scale: 100, Seed: 7, RecordDelay: 24 * time.Hour})
	c0 := c.Name("c0")
	c.World.AddServer("vm-off", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.Stop("vm-off")
	c.Cfg.Timeouts.Migration = model.Duration(2 * time.Second)
	e := c.Engine("tester@a", nil)
	rec, _, err := run(t, e, model.OpEvacuate, c0, forced())
	if err == nil || !strings.Contains(err.Error(), "never showed the migration record") {
		t.Fatalf("want the move failed for want of its record, got %v\n%s", err, rec.Transcript(c.Px))
	}
	vm, _ := c.World.ServerByName("vm-off")
	if vm.Status != "VERIFY_RESIZE" {
		t.Errorf("vm-off: %s; want left in VERIFY_RESIZE, unconfirmed", vm.Status)
	}
	if st := c.World.MigrationStatuses(vm.ID); len(st) != 1 || st[0][len(st[0])-1] != "finished" {
		t.Errorf("vm-off's migration: %v; want finished, never confirmed", st)
	}
}

// Nova makes a live migration's record after its 202: until it does, the VM's newest record
// is an older move's. One that failed before is not this move's failure: drainctl waits for
// the record of the move it asked for (above the newest it saw before asking).
func TestAnOlderMovesRecordIsNotThisMoves(t *testing.T) {
	// The records come 10 minutes late (6 s here): drainctl's first reads see the older only.
	c := simtest.NewClusterWith(t, sim.Options{Scale: 100, Seed: 7, RecordDelay: 10 * time.Minute})
	vmb, _ := c.World.ServerByName("vm-b")
	c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) {
		s[vmb.ID].FailAt, s[vmb.ID].FailOnce = "preparing", true
	})
	ctx := kubetest.Ctx(t)
	if err := c.Nova.LiveMigrate(ctx, vmb.ID, ""); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 20*time.Second, "vm-b's first migration failed", func() bool {
		ms, _ := c.Nova.MigrationsOf(ctx, vmb.ID)
		return len(ms) == 1 && ms[0].Status == model.MigrationFailed
	})
	rec, rep, err := run(t, c.Engine("tester@a", nil), model.OpMigrate, "vm-b", ops.RunOptions{})
	if err != nil || len(rep.VMs) != 1 || rep.VMs[0].Result != ops.MigCompleted {
		t.Fatalf("want vm-b moved, got %v %+v\n%s", err, rep.VMs, rec.Transcript(c.Px))
	}
	if vm, _ := c.World.ServerByName("vm-b"); vm.Host == c.Name("c0") {
		t.Errorf("vm-b still on its host")
	}
	for _, ev := range rec.Events() {
		if m, ok := ev.(ops.MigrationEvent); ok && (m.State == ops.MigFailed || m.State == ops.MigRetrying) {
			t.Errorf("the older move's failure was taken for this one's: %s %s", m.State, m.Message)
		}
	}
}

// Prove before acting, undoing: the journal on the Node is a claim its kubelet can write. One
// that names a colleague's cold move (its migration's UUID, read from Nova) does not make
// abort revert it: a revert asks that the server's newest cold move in Nova's instance
// actions be the request drainctl journaled, which no writer of the Node can read. drainctl's
// own move, journaled with its request, is reverted beside it; the colleague's is left where
// it waits, and the abort says which and why.
func TestAbortLeavesAColleaguesColdMoveAForgedJournalNames(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	small := sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20}
	c.World.AddServer("vm-off", c0, small)
	c.World.Stop("vm-off")
	theirs := c.World.AddServer("vm-theirs", c0, small).ID
	c.World.Stop("vm-theirs")
	c.Cfg.Policy.ConfirmCold = false
	// A colleague's cold move of vm-theirs, left for them to confirm, before the evacuation.
	if err := c.Nova.ColdMigrate(t.Context(), theirs, ""); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "vm-theirs waiting in VERIFY_RESIZE", func() bool {
		vm, _ := c.World.ServerByName("vm-theirs")
		return vm.Status == "VERIFY_RESIZE"
	})
	ms, err := c.Nova.MigrationsOf(t.Context(), theirs)
	if err != nil || len(ms) != 1 || ms[0].UUID == "" {
		t.Fatalf("vm-theirs' records: %+v, %v", ms, err)
	}
	e := c.Engine("tester@a", nil)
	if rec, _, err := run(t, e, model.OpEvacuate, c0, forced()); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	j, ok := ops.ReadJournal(c.Node(c0))
	if !ok || len(j.ColdMoves) != 1 || j.ColdMoves[0].Request == "" || j.ColdMoves[0].Migration == "" {
		t.Fatalf("the journal's cold moves: %+v; want vm-off's, named, with its request", j.ColdMoves)
	}
	// None journaled, one made up, and drainctl's own request of another move (vm-off's).
	for _, request := range []string{"", "req-forged", j.ColdMoves[0].Request} {
		forged := j
		forged.ColdMoves = append(slices.Clone(j.ColdMoves), ops.ColdMove{VM: theirs, Migration: ms[0].UUID,
			Requested: time.Now(), Source: c0, Request: request})
		raw, _ := json.Marshal(forged)
		c.SetAnnotation(c0, ops.JournalAnnotation, string(raw))
		kubetest.Eventually(t, 5*time.Second, "the cache shows the forged journal", func() bool {
			k, _ := c.Kube.Node(c0)
			jj, _ := ops.ReadJournal(k)
			return len(jj.ColdMoves) == 2 && jj.ColdMoves[1].Request == request
		})
		rec, _, err := run(t, e, model.OpAbort, c0, ops.RunOptions{})
		if err != nil {
			t.Fatalf("abort: %v\n%s", err, rec.Transcript(c.Px))
		}
		said := ""
		for _, ev := range rec.Events() {
			if s, ok := ev.(ops.StepEvent); ok && s.Step == model.StepAbort {
				said += s.Detail
			}
		}
		if !strings.Contains(said, "vm-theirs left in VERIFY_RESIZE") || !strings.Contains(said, "openstack server migrate revert "+theirs) {
			t.Errorf("request %q: the abort does not say the VM it left: %q", request, said)
		}
		time.Sleep(100 * time.Millisecond) // a revert would have ended (1 s simulated)
		if vm, _ := c.World.ServerByName("vm-theirs"); vm.Status != "VERIFY_RESIZE" || vm.Host == c0 {
			t.Errorf("request %q: vm-theirs %s on %s: a colleague's cold move was reverted on a forged journal's word",
				request, vm.Status, vm.Host)
		}
	}
	kubetest.Eventually(t, 10*time.Second, "vm-off, drainctl's own, reverted onto "+c0, func() bool {
		vm, _ := c.World.ServerByName("vm-off")
		return vm.Status == "SHUTOFF" && vm.Host == c0
	})
	// A stale record: the journal keeps drainctl's earlier cold move of vm-off, its request
	// genuine; a colleague has cold-moved vm-off since, and the entry is made to name theirs.
	off, _ := c.World.ServerByName("vm-off")
	if err := c.Nova.ColdMigrate(t.Context(), off.ID, ""); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "vm-off waiting in VERIFY_RESIZE again, the colleague's", func() bool {
		vm, _ := c.World.ServerByName("vm-off")
		return vm.Status == "VERIFY_RESIZE"
	})
	again, err := c.Nova.MigrationsOf(t.Context(), off.ID)
	if err != nil || len(again) < 2 {
		t.Fatalf("vm-off's records: %+v, %v", again, err)
	}
	stale := j
	stale.ColdMoves = slices.Clone(j.ColdMoves)
	stale.ColdMoves[0].Migration = again[0].UUID // newest first: the colleague's
	raw, _ := json.Marshal(stale)
	c.SetAnnotation(c0, ops.JournalAnnotation, string(raw))
	kubetest.Eventually(t, 5*time.Second, "the cache shows the stale journal", func() bool {
		k, _ := c.Kube.Node(c0)
		jj, _ := ops.ReadJournal(k)
		return len(jj.ColdMoves) == 1 && jj.ColdMoves[0].Migration == again[0].UUID
	})
	if rec, _, err := run(t, e, model.OpAbort, c0, ops.RunOptions{}); err != nil {
		t.Fatalf("abort: %v\n%s", err, rec.Transcript(c.Px))
	}
	time.Sleep(100 * time.Millisecond)
	if vm, _ := c.World.ServerByName("vm-off"); vm.Status != "VERIFY_RESIZE" || vm.Host == c0 {
		t.Errorf("vm-off %s on %s: a colleague's cold move was reverted on a stale journal's request", vm.Status, vm.Host)
	}
}

// Prove before acting, confirming: a rerun finds the cold move a killed run asked for waiting
// in VERIFY_RESIZE, but the run was killed before it journaled Nova's request ID, so nothing
// proves the move waiting is drainctl's: it is left unconfirmed, said so, never confirmed on
// the journal's word alone.
func TestARerunLeavesUnconfirmedAColdMoveItCannotProve(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	c.World.AddServer("vm-off", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.Stop("vm-off")
	c.Cfg.Policy.ConfirmCold = false // the move waits, as a run killed before its confirm leaves it
	if rec, _, err := run(t, c.Engine("tester@a", nil), model.OpEvacuate, c0, forced()); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	j, _ := ops.ReadJournal(c.Node(c0))
	if len(j.ColdMoves) != 1 || j.ColdMoves[0].Request == "" {
		t.Fatalf("the journal's cold moves: %+v", j.ColdMoves)
	}
	j.ColdMoves[0].Request = "" // killed between Nova's 202 and the journal's write
	raw, _ := json.Marshal(j)
	c.SetAnnotation(c0, ops.JournalAnnotation, string(raw))
	c.Cfg.Policy.ConfirmCold = true
	e := c.Engine("tester@a", nil)
	kubetest.Eventually(t, 5*time.Second, "the cache shows the journal without the request", func() bool {
		k, _ := e.KubeNode(c0)
		jj, _ := ops.ReadJournal(k)
		return len(jj.ColdMoves) == 1 && jj.ColdMoves[0].Request == ""
	})
	rec, rep, err := run(t, e, model.OpEvacuate, c0, forced())
	if err != nil {
		t.Fatalf("the rerun: %v\n%s", err, rec.Transcript(c.Px))
	}
	said := slices.ContainsFunc(rep.VMs, func(v ops.VMReport) bool {
		return v.VM == "vm-off" && strings.Contains(v.Message, "nothing proves drainctl's (drainctl's journal keeps no request ID of it")
	})
	if !said {
		t.Errorf("the rerun does not say why it left vm-off unconfirmed: %+v", rep.VMs)
	}
	time.Sleep(100 * time.Millisecond) // a confirm would have ended (1 s simulated)
	if vm, _ := c.World.ServerByName("vm-off"); vm.Status != "VERIFY_RESIZE" {
		t.Errorf("vm-off %s: a cold move nothing proves drainctl's was confirmed", vm.Status)
	}
}
