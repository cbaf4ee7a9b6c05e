package campaign_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// A campaign's VMs go to hosts it does not empty later: c0's two VMs go to c2, outside the
// campaign, though c1 (emptied next) has more room; each VM moves once. Sent to c1, they
// would move again at c1's turn.
func TestACampaignsVMsSkipItsLaterNodes(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.Cfg.Concurrency.Nodes = 2
	c.Cfg.Concurrency.MigrationsPerSource, c.Cfg.Concurrency.MigrationsPerDestination = 2, 2 // drainctl picks
	laterNodesSkipped(t, c)
}

// laterNodesSkipped runs a campaign over c0 then c1 with c2 outside it (and less room than
// c1): c0's two VMs must go to c2, once each.
func laterNodesSkipped(t *testing.T, c *simtest.Cluster) {
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	c.World.AddServer("filler", c2, sim.Flavor{Name: "m1.xlarge", RAMMB: 16384, VCPUs: 8, DiskGB: 80})
	e := c.Engine("tester@a", nil)
	var mu sync.Mutex
	moves := map[string][]string{}
	runToDone(t, e, campaign.Options{Nodes: []string{c0, c1}, Order: "given", Run: vmsOnly()}, func(ev ops.Event) {
		if m, ok := ev.(ops.MigrationEvent); ok && m.State == ops.MigRequested {
			mu.Lock()
			moves[m.VM] = append(moves[m.VM], m.Dest)
			mu.Unlock()
		}
	})
	mu.Lock()
	defer mu.Unlock()
	for _, vm := range []string{"vm-a", "vm-b"} {
		if got := moves[vm]; len(got) != 1 || got[0] != c2 {
			t.Errorf("%s was sent to %v, want once, to %s (not to %s, emptied after %s)", vm, got, c2, c1, c0)
		}
	}
}

// A record's "done" is a claim: a planted record marking a node done that no campaign
// touched does not skip it. The node is worked (evacuated) and said; once done, the node names
// the campaign, and a later resume of a record saying so takes it as done.
func TestAPlantedDoneNodeIsWorked(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	e := c.Engine("tester@a", nil)
	name := "plant-" + c.Px
	plant := model.Campaign{Name: name, State: model.CampaignInterrupted, Started: e.Now(), Updated: e.Now(), Order: "given",
		Nodes: []model.CampaignNode{{Name: c0, Phase: model.PhaseDone}, {Name: c1, Phase: model.PhasePending}}}
	data, _ := json.Marshal(plant)
	if err := e.Records().SaveRecord(kubetest.Ctx(t), "campaign-"+name, data); err != nil {
		t.Fatal(err)
	}
	var said []string
	var mu sync.Mutex
	var from []string // each move's source
	r, err := campaign.New(kubetest.Ctx(t), e, campaign.Options{Name: name, Nodes: []string{c0, c1}, Order: "given",
		Run: ops.RunOptions{Policy: simtest.Defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}}, func(ev ops.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case ops.CampaignEvent:
			said = append(said, ev.Message)
		case ops.MigrationEvent:
			if ev.State == ops.MigRequested {
				from = append(from, ev.Source)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(kubetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(from, c0) ||
		!slices.ContainsFunc(said, func(m string) bool { return strings.Contains(m, c0+" done, but nothing on the node shows") }) {
		t.Errorf("the planted done node: moves from %v, said %q; want %s evacuated and said", from, said, c0)
	}
	if k := c.Node(c0); k.Annotations[campaign.DoneAnnotation] != name {
		t.Errorf("%s does not name the campaign that finished it: %v", c0, k.Annotations)
	}
}

// A campaign's forecast (what its dry run prints) says every VM's lock and own policy, as the
// node's plan does: a locked VM asking stop-start is noted for both.
func TestACampaignForecastSaysLocksAndPolicies(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
		for _, vm := range vms {
			vm.Locked = vm.Name == "vm-a"
		}
	})
	c.World.SetMetadata("vm-a", "drainctl:maintenance", "stop-start")
	e := c.Engine("tester@a", nil)
	r, err := campaign.New(
		kubetest.Ctx(t),
		e,
		campaign.Options{
			Nodes: []string{c0, c1},
			Order: "given",
			Run:   ops.RunOptions{Policy: simtest.Defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}},
		},
		nil,
	)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, nf := range r.Forecast().Nodes {
		for _, x := range nf.VMNotes {
			notes = append(notes, x.Object+": "+x.Message)
		}
	}
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.HasPrefix(n, "vm-a: stop-start") && strings.Contains(n, "locked by its owner")
	}) {
		t.Errorf("the forecast's notes %q; want vm-a's policy and its lock", notes)
	}
}

// One tenant's metadata does not hold the fleet: a node whose only blockers are its VMs'
// owners asking them to stay is skipped (said, with the VMs and their projects), and the
// campaign goes on with the next node; it ends naming the node not worked.
func TestANodeHeldOnlyByOwnersIsSkipped(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	c.World.SetMetadata("vm-a", "drainctl:maintenance", "stays")
	e := c.Engine("tester@a", nil)
	heard := &campaignSaid{phase: model.PhaseSkipped}
	r, err := campaign.New(
		kubetest.Ctx(t),
		e,
		campaign.Options{
			Nodes: []string{c0, c1},
			Order: "given",
			Run:   ops.RunOptions{Policy: simtest.Defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}},
		},
		heard.emit,
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Refusal(kubetest.Ctx(t)); err != nil {
		t.Fatalf("the campaign is refused for one tenant's stays: %v", err)
	}
	if s := r.Skipped(); len(s) != 1 || s[0].Node != c0 || len(s[0].HeldByOwners) != 1 ||
		!strings.HasPrefix(s[0].HeldByOwners[0], "vm-a (project ") {
		t.Errorf("the forecast's skipped nodes: %+v", s)
	}
	err = r.Run(kubetest.Ctx(t))
	var se *campaign.SkippedError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), c0) {
		t.Errorf("the campaign ended %v; want it to name %s not worked", err, c0)
	}
	rec := r.Record()
	skipped := heard.all()
	if rec.Nodes[0].Phase != model.PhaseSkipped || rec.Nodes[1].Phase != model.PhaseDone || len(skipped) != 1 ||
		!strings.HasPrefix(skipped[0], model.HeldByOwners+": vm-a (project ") {
		t.Errorf("nodes %+v, said %q", rec.Nodes, skipped)
	}
	if vm, _ := c.World.ServerByName("vm-a"); vm.Host != c0 {
		t.Errorf("vm-a was moved to %s though its owner asked it to stay", vm.Host)
	}
}

// With the default caps (where drainctl used to leave every choice to Nova's scheduler, which
// knows nothing of the campaign), a campaign's VMs still go to hosts it does not empty later:
// c0's VMs to c2, outside it, though c1 (emptied next) has more room.
func TestACampaignsVMsSkipItsLaterNodesUnderTheDefaultCaps(t *testing.T) {
	laterNodesSkipped(t, simtest.NewCluster(t, 100))
}

// A node worked with a VM left on it as asked (--skip-vm) is said not empty: at its
// evacuation, at its step, and in the campaign's end, never a bare "done" or "nothing to do
// while empty".
func TestACampaignSaysWhichNodesAreNotEmpty(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0 := c.Name("c0")
	e := c.Engine("tester@a", nil)
	pol := simtest.Defaults()
	pol.SkipVMs = []string{"vm-a"}
	heard := &campaignSaid{}
	r, err := campaign.New(
		kubetest.Ctx(t),
		e,
		campaign.Options{Nodes: []string{c0}, Run: ops.RunOptions{Policy: pol, EvacuateParams: ops.EvacuateParams{VMsOnly: true}}},
		heard.emit,
	)
	if err != nil {
		t.Fatal(err)
	}
	// Done as asked, not empty: its own error, as an evacuation's (exit 6 headless).
	if err := r.Run(kubetest.Ctx(t)); !errors.As(err, new(*ops.NotEmptyError)) {
		t.Fatalf("the campaign ended %v; want NotEmptyError", err)
	}
	all := strings.Join(heard.all(), "\n")
	if rec := r.Record(); rec.State != model.CampaignDone || !strings.Contains(rec.Message, "1 node(s) NOT EMPTY") ||
		!strings.Contains(rec.Message, "vm-a") ||
		strings.Contains(all, "nothing to do while empty") ||
		!strings.Contains(all, "the node is not empty") {
		t.Errorf("the campaign: %s %q; said:\n%s", rec.State, rec.Message, all)
	}
}

// A VM stopped for restart-in-place is in the campaign's own log when its node returns (it
// was in the node's lines only), and the campaign's end says it was started again, not that
// it "is started when the node returns" of a node that has.
func TestACampaignSaysItsRestartsInPlace(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0 := c.Name("c0")
	c.World.SetMetadata("vm-a", model.VMPolicyKey, "restart-in-place")
	e := c.Engine("tester@a", nil)
	heard := &campaignSaid{}
	r, err := campaign.New(
		kubetest.Ctx(t),
		e,
		campaign.Options{
			Nodes: []string{c0},
			Run:   ops.RunOptions{Policy: simtest.Defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}},
		},
		heard.emit,
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(kubetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(heard.all(), "\n")
	rec := r.Record()
	if !strings.Contains(all, "restart-in-place: 1 VM(s) started again: vm-a (in place)") {
		t.Errorf("the campaign's log does not say vm-a was started again:\n%s", all)
	}
	if rec.State != model.CampaignDone || !strings.Contains(rec.Message, "restart-in-place: 1 VM(s) started again: vm-a") ||
		strings.Contains(rec.Message, "when it returns") {
		t.Errorf("the campaign's end: %s %q", rec.State, rec.Message)
	}
	if a, _ := c.World.ServerByName("vm-a"); a.Status != "ACTIVE" || a.Host != c0 {
		t.Errorf("vm-a after the campaign: %s on %s", a.Status, a.Host)
	}
}

// campaignSaid keeps what a campaign says (its events' messages), of one phase when set.
type campaignSaid struct {
	phase model.NodePhase
	mu    sync.Mutex
	msgs  []string
}

func (h *campaignSaid) emit(ev ops.Event) {
	if ce, ok := ev.(ops.CampaignEvent); ok && (h.phase == "" || ce.Phase == h.phase) {
		h.mu.Lock()
		h.msgs = append(h.msgs, ce.Message)
		h.mu.Unlock()
	}
}

func (h *campaignSaid) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}
