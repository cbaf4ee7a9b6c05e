package campaign_test

import (
	"testing"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// A node's check that it came back opens on Nova's answer to the way back's enable (the service
// enabled and up, Nova's word then): no read of the service after the enable, where it read it
// once more. A node whose service was not changed by its way back still reads it (below).
func TestACampaignsVerifyOpensOnTheEnablesAnswer(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0 := c.Name("c0")
	e := c.Engine("tester@a", nil)
	enabled := false
	r, err := campaign.New(
		kubetest.Ctx(t),
		e,
		campaign.Options{Nodes: []string{c0}, Run: ops.RunOptions{Policy: simtest.Defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}},
		func(ev ops.Event) {
			if s, ok := ev.(ops.StepEvent); ok && s.Step == model.StepEnableCompute && s.State == ops.StepDone {
				enabled = true
				c.World.ResetStats() // what follows the enable's answer
			}
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(kubetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if r.Record().State != model.CampaignDone || !enabled {
		t.Fatalf("the campaign: %+v (enabled %v)", r.Record(), enabled)
	}
	if n := c.World.Stats().ByRoute["GET /os-services"]; n != 0 {
		t.Errorf("the service read %d times after the enable's answer; want 0", n)
	}
}
