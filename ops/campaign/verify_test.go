package campaign_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// A node's way back reads its service once, in the enable step that acts on it: the plan of the
// way back is made on the last read (Nova's answer to the campaign's disable), not on a read of
// its own a moment before the step's. Counted from the disable's answer: a live move's
// destination is not read either.
func TestACampaignsWayBackReadsItsServiceOnce(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0 := c.Name("c0")
	e := c.Engine("tester@a", nil)
	reads, from := -1, 0
	var calls []string
	runToDone(t, e, campaign.Options{Nodes: []string{c0}, Run: vmsOnly()}, func(ev ops.Event) {
		s, ok := ev.(ops.StepEvent)
		switch {
		case ok && s.Step == model.StepDisableCompute && s.State == ops.StepDone:
			c.World.ResetStats() // what follows the disable's answer: the node emptied, then its way back
			reads, from = 0, len(c.Muts.Log.Calls())
		case ok && s.Step == model.StepEnableCompute && s.State == ops.StepDone:
			reads, calls = c.World.Stats().ByRoute["GET /os-services"], c.Muts.Log.Calls()[from:]
		}
	})
	if reads != 1 {
		t.Errorf("the way back read the service %d times up to the enable's answer; want 1 (the enable step's):\n%s",
			reads, strings.Join(calls, "\n"))
	}
	if svc, ok := c.World.Host(c0); !ok || !svc.Enabled {
		t.Errorf("%s's service after the way back: %+v; want enabled", c0, svc)
	}
}

// A node's check that it came back opens on Nova's answer to the way back's enable (the service
// enabled and up, Nova's word then): no read of the service after the enable, where it read it
// once more. A node whose service was not changed by its way back still reads it (below).
func TestACampaignsVerifyOpensOnTheEnablesAnswer(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0 := c.Name("c0")
	e := c.Engine("tester@a", nil)
	enabled := false
	runToDone(t, e, campaign.Options{Nodes: []string{c0}, Run: vmsOnly()}, func(ev ops.Event) {
		if s, ok := ev.(ops.StepEvent); ok && s.Step == model.StepEnableCompute && s.State == ops.StepDone {
			enabled = true
			c.World.ResetStats() // what follows the enable's answer
		}
	})
	if !enabled {
		t.Fatal("the campaign is done, but its way back did not enable the service")
	}
	if n := c.World.Stats().ByRoute["GET /os-services"]; n != 0 {
		t.Errorf("the service read %d times after the enable's answer; want 0", n)
	}
}

// vmsOnly is a campaign's run of the VMs alone (VMsOnly): the pods' replacements are not played.
func vmsOnly() ops.RunOptions {
	return ops.RunOptions{Policy: simtest.Defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
}

// runToDone runs a campaign of e with o, every event to emit, and fails the test unless it ends
// done.
func runToDone(t *testing.T, e *ops.Engine, o campaign.Options, emit func(ops.Event)) *campaign.Campaign {
	t.Helper()
	r, err := campaign.New(kubetest.Ctx(t), e, o, emit)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(kubetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if r.Record().State != model.CampaignDone {
		t.Fatalf("the campaign: %+v", r.Record())
	}
	return r
}

// The phases a resume may repeat are written behind (model.NodePhase.RecordedFirst); returning
// is not: before the way back puts the node in service again, the record on the API server
// says so. Were it still to say step, a campaign resumed after a crash there would run the
// operator's step again on a node back in service. The record's writes are slowed (a large
// record, a loaded API server), so a write behind would not have landed yet.
func TestTheRecordSaysReturningBeforeTheNodeIsBackInService(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0 := c.Name("c0")
	cfg := kubetest.Config(t)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/configmaps/") {
				time.Sleep(300 * time.Millisecond)
			}
			return rt.RoundTrip(r)
		})
	})
	e := ops.NewEngine(c.KubeClientFor(cfg), c.Nova, c.Cfg, ops.EngineOptions{Holder: "tester@a", Poll: 5 * time.Millisecond,
		StallAfter: 300 * time.Millisecond, Backoff: 20 * time.Millisecond})
	ctx := kubetest.Ctx(t)
	var r *campaign.Campaign
	var seen []model.NodePhase
	r, err := campaign.New(ctx, e, campaign.Options{Nodes: []string{c0}, Exec: "true", Run: vmsOnly()}, func(ev ops.Event) {
		if s, ok := ev.(ops.StepEvent); ok && s.Step == model.StepEnableCompute && s.State == ops.StepStarted {
			data, _, err := e.Records().Record(ctx, "campaign-"+r.Record().Name)
			var rec model.Campaign
			if err != nil || json.Unmarshal(data, &rec) != nil {
				t.Errorf("the record: %v", err)
				return
			}
			seen = append(seen, rec.Nodes[0].Phase)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []model.NodePhase{model.PhaseReturning}) {
		t.Errorf("the record said %v as the way back began, want returning", seen)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
