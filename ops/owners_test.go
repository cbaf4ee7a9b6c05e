package ops_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// The owner told ahead (#57.3): with [notify] owner_lead, each VM an evacuation moves carries
// drainctl's notice in its metadata at least the lead before its move begins, and not after
// it ends. web-0 (live) and batch-0 (stopped: cold) are told by the run; early-0's owner was
// told ten minutes ago by a campaign (its notice, due, is taken as it is: no second wait);
// forged-0's notice says it was told an hour from now (a forgery, or a clock gone wrong: told
// again, and the lead counted from then); removed-0's owner removes the notice each time it
// appears (written again for them to read, the lead counted from drainctl's record of the first
// telling: never restarted, so the owner cannot hold the move off); restart-0 (its owner's
// restart-in-place) is stopped only once its lead is up, and keeps its notice until the node's
// uncordon starts it again (stopper-0, whose owner stops it during its lead, is left as its
// owner left it); hasty-0's owner answers the notice with drainctl:move-now, and it
// is moved without waiting out the lead. The test samples the simulator every 2 ms: when
// each notice appeared and each move began. The run's report says each VM's lead.
func TestAnOwnerIsToldAheadOfTheirVMsMove(t *testing.T) {
	const lead = 1500 * time.Millisecond
	c := newCluster(t, 20)
	c.Cfg.Notify.OwnerLead = model.Duration(lead)
	c.Cfg.Concurrency.MigrationsPerSource = 4
	c0 := c.Name("c0")
	f := sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20}
	for _, name := range []string{"web-0", "batch-0", "early-0", "forged-0", "removed-0", "hasty-0"} {
		c.World.AddServer(name, c0, f)
	}
	c.World.Stop("batch-0")
	c.World.AddServer("restart-0", c0, f)
	c.World.SetMetadata("restart-0", model.VMPolicyKey, string(model.PolicyRestartInPlace))
	c.World.AddServer("stopper-0", c0, f)
	c.World.SetMetadata("stopper-0", model.VMPolicyKey, string(model.PolicyRestartInPlace))
	early := model.OwnerNotice{What: "live-migration", By: "campaign roll-1", Told: time.Now().Add(-10 * time.Minute)}
	early.At = early.Told.Add(lead)
	c.World.SetMetadata("early-0", model.NoticeKey, early.String())
	forged := model.OwnerNotice{What: "live-migration", By: "campaign roll-1", Told: time.Now().Add(time.Hour)}
	forged.At = forged.Told.Add(lead)
	c.World.SetMetadata("forged-0", model.NoticeKey, forged.String())

	var firstSeen, lastRemoved time.Time // removed-0's notice: first seen, last removed by its owner
	samples := simtest.SampleNotices(c.World, func(vm *sim.VM, now time.Time) bool {
		if vm.Name == "stopper-0" && vm.Metadata[model.NoticeKey] != "" && vm.Status == "ACTIVE" {
			vm.Status, vm.VMState, vm.Updated = "SHUTOFF", "stopped", now // its owner stops it during the lead
		}
		if vm.Name == "hasty-0" && vm.Metadata[model.NoticeKey] != "" && vm.Metadata[model.MoveNowKey] == "" {
			vm.Metadata[model.MoveNowKey], vm.Updated = "true", now // its owner's answer
		}
		if vm.Name == "removed-0" && vm.Metadata[model.NoticeKey] != "" {
			switch {
			case firstSeen.IsZero():
				firstSeen = now // sampled as it first appears
			case now.Sub(lastRemoved) >= 400*time.Millisecond && now.Sub(firstSeen) < 2500*time.Millisecond:
				delete(vm.Metadata, model.NoticeKey) // its owner, every 400 ms for longer than the lead
				vm.Updated, lastRemoved = now, now
				return true
			}
		}
		return false
	})
	var heardMu sync.Mutex
	heard := map[string]model.Notice{} // what the project's webhook would be told, by VM
	e := c.Engine("tester@a", func(o *ops.EngineOptions) {
		o.OwnerTold = func(n model.Notice) {
			heardMu.Lock()
			heard[n.VM] = n
			heardMu.Unlock()
		}
	})
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	ctx := kubetest.Ctx(t)
	plan, err := e.Plan(ctx, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	rep, err := e.Run(ctx, plan, ro, func(ev ops.Event) {
		if m, ok := ev.(ops.MigrationEvent); ok && m.State == ops.MigWaiting {
			said = append(said, m.VM+": "+m.Message)
		}
	})
	samples.Stop()
	if err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("evacuate: %v %s", err, rep.Result)
	}
	toldAt, movedAt, toldWhenMoved := samples.ToldAt, samples.MovedAt, samples.NoticeWhenMoved
	toldAt["removed-0"] = firstSeen // the sampler's follows each notice its owner removed and drainctl wrote again
	for _, name := range []string{"web-0", "batch-0", "forged-0", "removed-0", "restart-0"} {
		if movedAt[name].IsZero() || toldAt[name].IsZero() || movedAt[name].Sub(toldAt[name]) < lead {
			t.Errorf("%s: told %v, its move began %v: want the notice at least %v before", name, toldAt[name], movedAt[name], lead)
		}
		if _, ok := model.ParseOwnerNotice(toldWhenMoved[name]); !ok && name != "removed-0" { // its owner's to remove
			t.Errorf("%s: its metadata as its move began: %q; want drainctl's notice", name, toldWhenMoved[name])
		}
	}
	if toldWhenMoved["early-0"] != early.String() {
		t.Errorf("early-0 as its move began: %q; want the campaign's notice as it was", toldWhenMoved["early-0"])
	}
	if hasty := samples.MovedAt["hasty-0"]; hasty.IsZero() || !hasty.Before(toldAt["hasty-0"].Add(lead)) {
		t.Errorf("hasty-0 told %v, its move began %v: want it moved before its lead was up (its owner said now)", toldAt["hasty-0"], hasty)
	}
	for _, r := range rep.VMs {
		if r.VM == "restart-0" || r.VM == "hasty-0" || r.VM == "stopper-0" {
			continue // below
		}
		want := lead
		if r.VM == "early-0" {
			want = 10 * time.Minute
		}
		if d := r.Told.Sub(toldAt[r.VM]); r.VM == "removed-0" && (d >= time.Second || d <= -time.Second) { // its times are whole seconds
			t.Errorf("removed-0: its lead counted from %v; want from its first notice, seen %v", r.Told, toldAt[r.VM])
		}
		if r.Result != ops.MigCompleted || r.Lead < want || r.Told.IsZero() || !strings.HasPrefix(r.RequestID, "req-") {
			t.Errorf("%s: %s, told %v, lead %v, Nova's request %q; want completed with a lead of at least %v, its request named",
				r.VM, r.Result, r.Told, r.Lead, r.RequestID, want)
		}
		if vm, _ := c.World.ServerByName(r.VM); vm.Metadata[model.NoticeKey] != "" {
			t.Errorf("%s after its move: its notice %q is still there", r.VM, vm.Metadata[model.NoticeKey])
		}
	}
	heardMu.Lock()
	for _, name := range []string{"web-0", "batch-0", "forged-0", "removed-0", "restart-0"} {
		vm, _ := c.World.ServerByName(name)
		// What and when, by an opaque name: never the host nor the campaign (tenants are not told hosts).
		if n := heard[name]; n.Kind != model.NoticeMaintenanceEvent || n.Project != vm.ProjectID || n.Node != "" || n.Message == "" ||
			!strings.HasPrefix(n.Maintenance, "m-") || strings.Contains(n.Message, c0) {
			t.Errorf("%s: its project's webhook heard %+v; want its notice, its project %s, no host", name, n, vm.ProjectID)
		}
	}
	if _, ok := heard["early-0"]; ok {
		t.Errorf("early-0's project heard again: %+v", heard["early-0"])
	}
	heardMu.Unlock()
	// The cluster's own vm-a and vm-b are told too; early-0 is not told again.
	// restart-0 keeps its notice, stopped, until the node's uncordon starts it again.
	restarted, _ := c.World.ServerByName("restart-0")
	if n, ok := model.ParseOwnerNotice(restarted.Metadata[model.NoticeKey]); !ok || n.What != "restart-in-place" || restarted.Status != "SHUTOFF" {
		t.Errorf("restart-0 after the evacuation: %s, its notice %q; want stopped, told of its restart-in-place",
			restarted.Status, restarted.Metadata[model.NoticeKey])
	}
	if _, rep, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{Policy: defaults()}); err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("uncordon: %v %s", err, rep.Result)
	}
	// stopper-0's owner stopped it during its lead: drainctl neither stopped it nor starts it,
	// and its notice is gone.
	if s, _ := c.World.ServerByName("stopper-0"); s.Status != "SHUTOFF" || s.Host != c0 || s.Metadata[model.NoticeKey] != "" {
		t.Errorf("stopper-0 after the uncordon: %s on %s, its notice %q; want left stopped by its owner, no notice",
			s.Status, s.Host, s.Metadata[model.NoticeKey])
	}
	if restarted, _ = c.World.ServerByName("restart-0"); restarted.Status != "ACTIVE" || restarted.Metadata[model.NoticeKey] != "" {
		t.Errorf("restart-0 after the uncordon: %s, its notice %q; want started again, the notice cleared",
			restarted.Status, restarted.Metadata[model.NoticeKey])
	}
	if len(rep.VMs) != 10 || len(said) != 9 || strings.Contains(strings.Join(said, "\n"), "early-0") ||
		!strings.Contains(strings.Join(said, "\n"), "its owner told: due at") {
		t.Errorf("%d VMs reported; the run said:\n%s", len(rep.VMs), strings.Join(said, "\n"))
	}
}

// A run may waive the owners' lead (--owner-lead 0, an emergency; a degrading host's
// evacuation): with [notify] owner_lead an hour, the VMs are moved at once, each owner still
// told in its metadata before its move begins.
func TestAnEmergencyWaivesTheOwnersLead(t *testing.T) {
	c := newCluster(t, 20)
	c.Cfg.Notify.OwnerLead = model.Duration(time.Hour)
	c0 := c.Name("c0")
	samples := simtest.SampleNotices(c.World, nil)
	e := c.Engine("tester@a", nil)
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true, OwnerLead: new(time.Duration)}}
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(stepDetails(plan), " "), "the lead waived for this run") {
		t.Errorf("the plan does not say the lead is waived: %q", stepDetails(plan))
	}
	rep, err := e.Run(kubetest.Ctx(t), plan, ro, func(ops.Event) {})
	samples.Stop()
	if err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("evacuate with the lead waived: %v %s", err, rep.Result)
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if _, ok := model.ParseOwnerNotice(samples.NoticeWhenMoved[name]); !ok {
			t.Errorf("%s moved with %q in its metadata; want its owner told", name, samples.NoticeWhenMoved[name])
		}
	}
}

func stepDetails(p model.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Detail)
	}
	return out
}

// A VM whose owner was told ahead (a campaign's herald, TellOwners) and whose node starts
// before the lead is up says on its own row why it waits, and until when, as one told at its
// node's start does.
func TestAVMToldAheadSaysWhyItWaitsOnItsRow(t *testing.T) {
	c := newCluster(t, 20)
	c.Cfg.Notify.OwnerLead = model.Duration(1500 * time.Millisecond)
	c0 := c.Name("c0")
	e := c.Engine("tester@a", nil)
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	ctx := kubetest.Ctx(t)
	if n, err := e.TellOwners(ctx, c0, e.MaintenanceRef("campaign x"), time.Now(), ro); err != nil || n != 2 {
		t.Fatalf("told ahead: %d, %v", n, err)
	}
	rows := map[string]string{}
	plan, err := e.Plan(ctx, model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	if _, err := e.Run(ctx, plan, ro, func(ev ops.Event) {
		if m, ok := ev.(ops.MigrationEvent); ok && m.State == ops.MigWaiting {
			mu.Lock()
			rows[m.VM] = m.Message
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, vm := range []string{"vm-a", "vm-b"} {
		if !strings.HasPrefix(rows[vm], "its owner told at ") || !strings.Contains(rows[vm], ": due at ") {
			t.Errorf("%s's row said %q while it waited; want its owner told, and when it is due", vm, rows[vm])
		}
	}
}

// A VM that waits behind the caps says why on its row before its request: its host's
// migrations_per_source (1 here), never a bare "pending" while another one moves.
func TestAVMWaitingForItsTurnSaysWhy(t *testing.T) {
	c := newCluster(t, 20)
	c.Cfg.Concurrency.MigrationsPerSource = 1
	c0 := c.Name("c0")
	e := c.Engine("tester@a", nil)
	rec, _, err := run(t, e, model.OpEvacuate, c0, ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	requested, waited := map[string]bool{}, map[string]string{}
	second := ""
	for _, ev := range rec.Events() {
		m, ok := ev.(ops.MigrationEvent)
		switch {
		case !ok:
		case m.State == ops.MigWaiting && !requested[m.VM]:
			waited[m.VM] = m.Message
		case m.State == ops.MigRequested && !requested[m.VM]:
			requested[m.VM] = true
			if len(requested) == 2 {
				second = m.VM
			}
		}
	}
	if second == "" || !strings.Contains(waited[second], "for its turn: 1 move(s) at once a host (concurrency.migrations_per_source)") {
		t.Errorf("the VM requested second (%q) said %q while it waited\n%s", second, waited[second], rec.Transcript(c.Px))
	}
}
