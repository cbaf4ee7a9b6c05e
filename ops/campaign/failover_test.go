package campaign_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	"github.com/drainctl/drainctl/text"
)

// [capacity] tolerate = 1, four hosts, a campaign over c0 and c1 two at once. Its forecast
// allows both out at once; then c2 and c3, outside it, come to run 180 GiB of VMs each: with
// both out, c2's death would find no room on c3, with one out it finds the other. c1 waits for
// c0 to return (said), then goes; the campaign ends done, the two never out at once.
func TestACampaignWaitsForTheFailoverRoom(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0, c1, c2, c3 := c.Name("c0"), c.Name("c1"), c.Name("c2"), c.Name("c3")
	kubetest.Node(t, c.CS, c3)
	c.World.AddHost(c3, 64, 262144, 2000)
	c.Cfg.Capacity.Tolerate = 1
	c.Cfg.Concurrency.Nodes = 2
	e := c.Engine("room@test", nil)
	var mu sync.Mutex
	var said []string
	ctx := kubetest.Ctx(t)
	r, err := campaign.New(ctx, e, campaign.Options{Nodes: []string{c0, c1}, Order: "given", Parallel: 2, Run: vmsOnly()}, func(ev ops.Event) {
		if ce, ok := ev.(ops.CampaignEvent); ok && ce.Node == c1 {
			mu.Lock()
			said = append(said, ce.Message)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Forecast(); f.RoomOutAtOnce == nil || *f.RoomOutAtOnce != 2 || f.Parallel != 2 {
		t.Fatalf("the forecast before c2's and c3's VMs came: %+v, want both out at once", f)
	}
	for _, h := range []string{c2, c3} {
		for i := range 6 {
			c.World.AddServer(fmt.Sprintf("filler-%s-%d", h, i), h, sim.Flavor{Name: "f30", RAMMB: 30 << 10, VCPUs: 1, DiskGB: 10})
		}
	}
	if err := r.Run(ctx); err != nil || r.Record().State != model.CampaignDone {
		t.Fatalf("the campaign: %v, %+v", err, r.Record())
	}
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

// Three hosts, c2 running 120 GiB of VMs: with c0 and c1 both out, c2 alone is left and its
// death would find no room; with one out, the other takes it. The forecast says one node out at
// once keeps the room and the campaign runs one at once, not --parallel's two; no node waits.
func TestACampaignRunsAsManyAtOnceAsTheFailoverRoomAllows(t *testing.T) {
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
		if ce, ok := ev.(ops.CampaignEvent); ok {
			mu.Lock()
			said = append(said, ce.Message)
			mu.Unlock()
		}
	})
	f := r.Forecast()
	if f.RoomOutAtOnce == nil || *f.RoomOutAtOnce != 1 || f.Parallel != 1 {
		t.Fatalf("the forecast: %+v, want one node out at once", f)
	}
	if lines := text.ForecastLines(f); !slices.Contains(lines, "the room for the next host failure holds with 1 node(s) out at once: it runs no more") {
		t.Errorf("the forecast says %q", lines)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.ContainsFunc(said, func(m string) bool { return strings.HasPrefix(m, "waiting for room") }) {
		t.Errorf("a node waited for room the forecast's pace keeps: %q", said)
	}
	rec := r.Record()
	if rec.Parallel != 1 {
		t.Errorf("the record says %d nodes at a time; want 1, as it ran (its view and its ETA read it)", rec.Parallel)
	}
	if first, second := rec.Nodes[0], rec.Nodes[1]; second.Started.Before(first.Finished) {
		t.Errorf("%s started at %s, before %s returned at %s", second.Name, second.Started, first.Name, first.Finished)
	}
}

// A record from an earlier run says c1 is in flight (stale: nothing works it now), and c0,
// first in the order, would lack the failover room with c1 out. c0 is not left waiting for c1
// to return (nothing here would finish it: the wait would never end); it is refused, naming
// the room, within moments.
func TestAStaleInFlightNodeIsNotWaitedOn(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	for i := range 4 {
		c.World.AddServer(fmt.Sprintf("filler-%d", i), c2, sim.Flavor{Name: "f30", RAMMB: 30 << 10, VCPUs: 1, DiskGB: 10})
	}
	c.Cfg.Capacity.Tolerate = 1
	c.Cfg.Concurrency.Nodes = 2
	e := c.Engine("room@test", nil)
	name := "stale-" + c.Px
	stale := model.Campaign{Name: name, State: model.CampaignInterrupted, Started: e.Now(), Updated: e.Now(), Order: "given", Parallel: 2,
		Nodes: []model.CampaignNode{{Name: c0, Phase: model.PhasePending}, {Name: c1, Phase: model.PhaseEvacuating, Started: e.Now()}}}
	data, _ := json.Marshal(stale)
	if err := e.Records().SaveRecord(kubetest.Ctx(t), "campaign-"+name, data); err != nil {
		t.Fatal(err)
	}
	r, err := campaign.New(kubetest.Ctx(t), e, campaign.Options{Name: name, Nodes: []string{c0, c1}, Order: "given", Parallel: 2,
		Run: vmsOnly()}, func(ops.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(kubetest.Ctx(t), 30*time.Second)
	defer cancel()
	err = r.Run(ctx)
	var refused *ops.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "would leave room for 0 of 1 host failures") {
		t.Errorf("the campaign: %v, want refused for the failover room (not a wait on a node nothing works)", err)
	}
}
