package campaign_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/sim"
)

// [capacity] tolerate = 1, a campaign over c0 and c1 two at once, c2 outside it running
// 120 GiB of VMs: with both out, c2's death would find no room, with one out it finds the
// other. c1 waits for c0 to return (said), then goes; the campaign ends done, the two never
// out at once.
func TestACampaignWaitsForTheFailoverRoom(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	for i := range 4 {
		c.World.AddServer(fmt.Sprintf("filler-%d", i), c2, sim.Flavor{Name: "f30", RAMMB: 30 << 10, VCPUs: 1, DiskGB: 10})
	}
	c.Cfg.Capacity.Tolerate = 1
	c.Cfg.Concurrency.Nodes = 2
	e := c.Engine("room@test", nil)
	var mu sync.Mutex
	var said []string
	r := runToDone(t, e, campaign.Options{Nodes: []string{c0, c1}, Order: "given", Parallel: 2, Run: vmsOnly()}, func(ev ops.Event) {
		if ce, ok := ev.(ops.CampaignEvent); ok && ce.Node == c1 {
			mu.Lock()
			said = append(said, ce.Message)
			mu.Unlock()
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(said, func(m string) bool {
		return strings.HasPrefix(m, "waiting for room: would leave room for 0 of 1 host failures: short ")
	}) {
		t.Errorf("%s never said it waited for the failover room: %q", c1, said)
	}
	rec := r.Record()
	if first, second := rec.Nodes[0], rec.Nodes[1]; second.Started.Before(first.Finished) {
		t.Errorf("%s started at %s, before %s returned at %s", second.Name, second.Started, first.Name, first.Finished)
	}
}
