package campaign_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// A campaign with [notify] owner_lead tells each node's VMs' owners as its forecast says the
// node starts (#57.3), one node at a time here: c1's and c2's owners are told while c0 still
// waits its own lead, so neither node waits one of its own. Every VM carried drainctl's notice
// at least the lead before its move began, and none after the campaign. Without the campaign
// telling ahead, c1's owners are told when c1 starts, after every move of c0's.
func TestACampaignTellsTheOwnersAheadAsItForecasts(t *testing.T) {
	const lead = 2 * time.Second
	c := simtest.NewCluster(t, 20)
	c.Cfg.Notify.OwnerLead = model.Duration(lead)
	c.Cfg.Campaign.MigrationRateMiB = 1 << 20 // the forecast as fast as the simulator's moves
	nodes := []string{c.Name("c0"), c.Name("c1"), c.Name("c2")}
	f := sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20}
	c.World.AddServer("one-0", nodes[1], f)
	c.World.AddServer("two-0", nodes[2], f)
	heard := make(chan model.Notice, 16)
	e := c.Engine("owners@test", func(o *ops.EngineOptions) { o.OwnerTold = func(n model.Notice) { heard <- n } })
	samples := simtest.SampleNotices(c.World, nil)
	var mu sync.Mutex
	var said []string
	runToDone(t, e, campaign.Options{Nodes: nodes, Order: "given", Parallel: 1, Run: vmsOnly()}, func(ev ops.Event) {
		if ce, ok := ev.(ops.CampaignEvent); ok && strings.Contains(ce.Message, "told ahead") {
			mu.Lock()
			said = append(said, ce.Node+": "+ce.Message)
			mu.Unlock()
		}
	})
	samples.Stop()
	close(heard)
	refs := map[string]bool{}
	for n := range heard { // the campaign by an opaque name, one for all its nodes; never a host
		refs[n.Maintenance] = true
		if !strings.HasPrefix(n.Maintenance, "m-") || n.Campaign != "" || n.Node != "" || n.VM == "" || n.Project == "" ||
			strings.Contains(n.Message, c.Px) {
			t.Errorf("a project's webhook would hear %+v; want the campaign by an opaque name, the VM and its project, no host", n)
		}
	}
	if len(refs) != 1 {
		t.Errorf("the campaign's owners heard it by %d names: %v; want one", len(refs), refs)
	}
	firstMove := time.Time{}
	for _, vm := range []string{"vm-a", "vm-b"} { // c0's
		if m := samples.MovedAt[vm]; firstMove.IsZero() || m.Before(firstMove) {
			firstMove = m
		}
	}
	for _, vm := range []string{"vm-a", "vm-b", "one-0", "two-0"} {
		told, moved := samples.ToldAt[vm], samples.MovedAt[vm]
		if told.IsZero() || moved.IsZero() || moved.Sub(told) < lead {
			t.Errorf("%s: told %v, its move began %v: want the notice at least %v before", vm, told, moved, lead)
		}
		if _, ok := model.ParseOwnerNotice(samples.NoticeWhenMoved[vm]); !ok {
			t.Errorf("%s as its move began: %q; want drainctl's notice", vm, samples.NoticeWhenMoved[vm])
		}
		if s, _ := c.World.ServerByName(vm); s.Metadata[model.NoticeKey] != "" {
			t.Errorf("%s after the campaign: its notice %q is still there", vm, s.Metadata[model.NoticeKey])
		}
	}
	for _, vm := range []string{"one-0", "two-0"} {
		if !samples.ToldAt[vm].Before(firstMove) {
			t.Errorf("%s told %v, c0's first move began %v: want it told while c0 waited its lead", vm, samples.ToldAt[vm], firstMove)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) < 2 || !strings.Contains(strings.Join(said, "\n"), "campaign") && !strings.Contains(strings.Join(said, "\n"), "due at") {
		t.Errorf("what the campaign said: %q", said)
	}
}

// An owner's answer (#57.3): eager-0's owner answers its notice with drainctl:move-now, and
// its project's word is taken ([policy.maintenance] honour): the campaign moves it before its
// node's turn, under the same caps, and clears the answer and the notice. shy-0's owner
// answers too, but their project's word is not taken: it goes with its node.
func TestAnOwnersMoveNowIsMovedBeforeItsNodesTurn(t *testing.T) {
	const lead = 2 * time.Second
	c := simtest.NewCluster(t, 20)
	c.Cfg.Notify.OwnerLead = model.Duration(lead)
	c.Cfg.Campaign.MigrationRateMiB = 1 << 20
	nodes := []string{c.Name("c0"), c.Name("c1")}
	f := sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20}
	c.World.AddServer("eager-0", nodes[1], f)
	c.World.AddServer("shy-0", nodes[1], f)
	c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
		for _, vm := range vms {
			if vm.Name == "eager-0" {
				vm.ProjectID = "proj-eager"
			}
		}
	})
	answered, answeredAt := map[string]bool{}, time.Time{}
	samples := simtest.SampleNotices(c.World, func(vm *sim.VM, now time.Time) bool {
		if (vm.Name == "eager-0" || vm.Name == "shy-0") && vm.Metadata[model.NoticeKey] != "" && !answered[vm.Name] {
			vm.Metadata[model.MoveNowKey], vm.Updated, answered[vm.Name] = "true", now, true // its owner, on reading the notice
			if vm.Name == "eager-0" {
				answeredAt = now
			}
		}
		return false
	})
	ro := vmsOnly()
	ro.Policy.Maintenance.Honour = model.Honour{Projects: []string{"proj-eager"}}
	e := c.Engine("owners@test", nil)
	r := runToDone(t, e, campaign.Options{Nodes: nodes, Order: "given", Parallel: 1, Run: ro}, func(ops.Event) {})
	samples.Stop()
	c1Started := r.Record().Nodes[1].Started
	t.Logf("eager-0 answered move-now at %v; its move began %v later", answeredAt, samples.MovedAt["eager-0"].Sub(answeredAt))
	if moved := samples.MovedAt["eager-0"]; moved.IsZero() || !moved.Before(c1Started) {
		t.Errorf("eager-0's move began %v, its node started %v: want it moved before its node's turn", moved, c1Started)
	}
	if moved := samples.MovedAt["shy-0"]; moved.IsZero() || moved.Before(c1Started) {
		t.Errorf("shy-0's move began %v, its node started %v: want it moved with its node (its project's word is not taken)", moved, c1Started)
	}
	for _, name := range []string{"eager-0", "shy-0"} {
		vm, _ := c.World.ServerByName(name)
		if vm.Host == nodes[1] || vm.Metadata[model.NoticeKey] != "" {
			t.Errorf("%s after the campaign: on %s, its notice %q", name, vm.Host, vm.Metadata[model.NoticeKey])
		}
	}
	if vm, _ := c.World.ServerByName("eager-0"); vm.Metadata[model.MoveNowKey] != "" {
		t.Errorf("eager-0's answer is still there after it was moved: %q", vm.Metadata[model.MoveNowKey])
	}
}

// An owner's window (#57.3, drainctl:maintenance-window): the campaign's window is open now
// (from an hour ago to four hours on); later-0's owner asks for one two to three hours on,
// which meets the campaign's: its node waits, and says until when. never-0's owner asks for one
// the campaign's never meets: its node is not held, and the campaign says why. The test stops
// the campaign once c0 waits (its window is hours away). open-0's owner asks for one open now:
// it is moved in it, with its node.
func TestAnOwnersWindowHoldsItsNodeWhereTheCampaignsMeetsIt(t *testing.T) {
	c := simtest.NewCluster(t, 20)
	nodes := []string{c.Name("c1"), c.Name("c0")} // never-0's node first
	f := sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20}
	now := time.Now().UTC()
	hhmm := func(h int) string { return now.Add(time.Duration(h) * time.Hour).Format("15:04") }
	window := func(from, to int) string { return "daily " + hhmm(from) + "-" + hhmm(to) + " UTC" }
	c.World.AddServer("later-0", nodes[1], f)
	c.World.SetMetadata("later-0", model.WindowKey, window(2, 3))
	c.World.AddServer("never-0", nodes[0], f)
	c.World.SetMetadata("never-0", model.WindowKey, window(5, 6))
	c.World.AddServer("open-0", nodes[0], f) // its owner's window is open now, and so is the campaign's: moved in it
	c.World.SetMetadata("open-0", model.WindowKey, window(-2, 2))
	ours, err := campaign.ParseWindow(window(-1, 4))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(kubetest.Ctx(t))
	defer stop()
	var mu sync.Mutex
	var said []string
	r, err := campaign.New(ctx, c.Engine("owners@test", nil), campaign.Options{Nodes: nodes, Order: "given", Parallel: 1, Run: vmsOnly(),
		Gates: campaign.GateOptions{Window: ours}}, func(ev ops.Event) {
		if ce, ok := ev.(ops.CampaignEvent); ok && strings.Contains(ce.Message, "owner asks for the window") {
			mu.Lock()
			said = append(said, ce.Message)
			mu.Unlock()
			if strings.Contains(ce.Message, "later-0") {
				stop() // c0 waits for hours: enough seen
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Run(ctx)
	rec := r.Record()
	if rec.Nodes[0].Phase != model.PhaseDone || rec.Nodes[1].Phase.Started() {
		t.Errorf("c1 %s, c0 %s; want c1 done (never-0's window holds nothing), c0 not started", rec.Nodes[0].Phase, rec.Nodes[1].Phase)
	}
	if vm, _ := c.World.ServerByName("open-0"); vm.Host == nodes[0] {
		t.Errorf("open-0 on %s after its node was done; want moved in its owner's window", vm.Host)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(said, "\n")
	if strings.Contains(all, "open-0") {
		t.Errorf("the campaign held or spoke of open-0, whose window is open:\n%s", all)
	}
	if !strings.Contains(all, "never-0's owner asks for the window") || !strings.Contains(all, "never overlaps the campaign's window") ||
		!strings.Contains(all, "waiting: VM later-0's owner asks for the window") || !strings.Contains(all, "both open") {
		t.Errorf("what the campaign said:\n%s", all)
	}
}

// One owner's window holds no other node: c0 comes first, but later-0's owner asks for a
// window two hours on; the campaign puts c0 after its other nodes (said), works c1, and only
// then waits for c0's window. The forecast (the dry run's) says c0 is held and until when.
// With [roll] owners_window_max under two hours the window is set aside, said, and c0 is
// worked in the campaign's own window.
func TestAnOwnersWindowHoldsNoOtherNode(t *testing.T) {
	for _, capped := range []bool{false, true} {
		t.Run(map[bool]string{false: "put last", true: "capped"}[capped], func(t *testing.T) {
			c := simtest.NewCluster(t, 20)
			if capped {
				c.Cfg.Campaign.OwnersWindowMax = model.Duration(time.Hour)
			}
			nodes := []string{c.Name("c0"), c.Name("c1")}
			now := time.Now().UTC()
			hhmm := func(h int) string { return now.Add(time.Duration(h) * time.Hour).Format("15:04") }
			c.World.AddServer("later-0", nodes[0], sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
			c.World.SetMetadata("later-0", model.WindowKey, "daily "+hhmm(2)+"-"+hhmm(3)+" UTC")
			ours, err := campaign.ParseWindow("daily " + hhmm(-1) + "-" + hhmm(4) + " UTC")
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(kubetest.Ctx(t))
			defer stop()
			var mu sync.Mutex
			var said []string
			r, err := campaign.New(ctx, c.Engine("owners@test", nil), campaign.Options{Nodes: nodes, Order: "given", Parallel: 1,
				Run: vmsOnly(), Gates: campaign.GateOptions{Window: ours}}, func(ev ops.Event) {
				if ce, ok := ev.(ops.CampaignEvent); ok && ce.Message != "" {
					mu.Lock()
					said = append(said, ce.Node+": "+ce.Message)
					mu.Unlock()
					if strings.HasPrefix(ce.Message, "waiting: VM later-0's owner") {
						stop() // c0 waits for hours, after c1: enough seen
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			fc := r.Forecast()
			if held := fc.Nodes[0].OwnersWindow != ""; held == capped || (!capped && fc.Nodes[0].OwnersWindowUntil.Before(now.Add(time.Hour))) {
				t.Errorf("the forecast of c0: held %q until %v", fc.Nodes[0].OwnersWindow, fc.Nodes[0].OwnersWindowUntil)
			}
			_ = r.Run(ctx)
			rec := r.Record()
			mu.Lock()
			all := strings.Join(said, "\n")
			mu.Unlock()
			if capped {
				if rec.Nodes[0].Phase != model.PhaseDone || !strings.Contains(all, "later than [roll] owners_window_max") {
					t.Errorf("capped: c0 %s; said:\n%s", rec.Nodes[0].Phase, all)
				}
				return
			}
			if rec.Nodes[1].Phase != model.PhaseDone || rec.Nodes[0].Phase.Started() {
				t.Errorf("c0 %s, c1 %s; want c1 done while c0 waits for its owner's window", rec.Nodes[0].Phase, rec.Nodes[1].Phase)
			}
			if !strings.Contains(all, nodes[0]+": put after the campaign's other nodes: VM later-0's owner asks for the window") {
				t.Errorf("c0 put last is not said:\n%s", all)
			}
		})
	}
}

// An owner's move-now moves their VM sooner, never past the operator's bounds: the campaign's
// window is closed (it opens in two hours), so hasty-0, whose owner answered its notice with
// move-now, stays where it is, and the campaign says what holds it.
func TestAnOwnersMoveNowKeepsTheCampaignsGates(t *testing.T) {
	c := simtest.NewCluster(t, 20)
	c.Cfg.Notify.OwnerLead = model.Duration(time.Second)
	node := c.Name("c0")
	c.World.AddServer("hasty-0", node, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.SetMetadata("hasty-0", model.MoveNowKey, "true")
	now := time.Now().UTC()
	hhmm := func(h int) string { return now.Add(time.Duration(h) * time.Hour).Format("15:04") }
	ours, err := campaign.ParseWindow("daily " + hhmm(2) + "-" + hhmm(3) + " UTC")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithTimeout(kubetest.Ctx(t), 20*time.Second)
	defer stop()
	held := false
	r, err := campaign.New(ctx, c.Engine("owners@test", nil), campaign.Options{Nodes: []string{node}, Order: "given", Parallel: 1,
		Run: vmsOnly(), Gates: campaign.GateOptions{Window: ours}}, func(ev ops.Event) {
		if ce, ok := ev.(ops.CampaignEvent); ok && strings.Contains(ce.Message, "hasty-0's owner asked it be moved now") &&
			strings.Contains(ce.Message, "held by the campaign's gates: outside the window") {
			held = true
			stop()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Run(ctx)
	if vm, _ := c.World.ServerByName("hasty-0"); vm.Host != node || len(c.World.MigrationStatuses(vm.ID)) != 0 {
		t.Errorf("hasty-0 moved to %s while the campaign's window was closed", vm.Host)
	}
	if !held {
		t.Errorf("the campaign did not say what holds hasty-0's move-now")
	}
}
