package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// [capacity] tolerate = 1 and a campaign over ten of twelve hosts, --parallel 4, each host
// running 160 GiB of VMs of its 256: with four out the others could not take a full host's
// VMs, with three they can. The test reads Placement every second while the campaign runs:
// the room for one host's death is never gone. Then c11, outside the campaign, dies:
// automatic recovery rebuilds its VMs into that room, every one ACTIVE elsewhere.
func TestACampaignKeepsTheRoomAHostsDeathIsRecoveredInto(t *testing.T) {
	c := newCluster(t, 100)
	var hosts []string
	for i := range 12 {
		name := c.Name(fmt.Sprintf("c%d", i))
		hosts = append(hosts, name)
		if i >= 3 { // c0 to c2 are the cluster's own
			kubetest.Node(t, c.CS, name)
			c.World.AddHost(name, 64, 262144, 2000)
		}
		for k := range 4 {
			c.World.AddServer(fmt.Sprintf("big-%d-%d", i, k), name, sim.Flavor{Name: "f40", RAMMB: 40 << 10, VCPUs: 1, DiskGB: 10})
		}
	}
	dead := hosts[11]
	c.Cfg.Capacity.Tolerate = 1
	c.Cfg.Concurrency.Nodes = 4
	e := c.Engine("campaign@test", nil)
	ctx := kubetest.Ctx(t)
	r, err := campaign.New(ctx, e, campaign.Options{Nodes: hosts[:10], Order: "given", Parallel: 4,
		Run: ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}}, func(ops.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Forecast(); f.RoomOutAtOnce == nil || *f.RoomOutAtOnce != 3 || f.Parallel != 3 {
		t.Fatalf("the forecast: %+v, want three out at once", f)
	}

	// The sampler: the room as Placement has it, each second, until the host dies.
	var mu sync.Mutex
	var samples []string
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for tick := time.NewTicker(time.Second); ; {
			inv, err := e.Inventory().Read(sampling)
			if sampling.Err() != nil {
				return
			}
			mu.Lock()
			switch rooms := e.FailoverRoom(inv); {
			case err != nil:
				samples = append(samples, "unread: "+err.Error())
			case len(rooms) != 1 || rooms[0].Tolerated < 1:
				samples = append(samples, fmt.Sprintf("SHORT: %+v", rooms))
			default:
				samples = append(samples, "held")
			}
			mu.Unlock()
			select {
			case <-sampling.Done():
				return
			case <-tick.C:
			}
		}
	}()
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	kubetest.Eventually(t, 60*time.Second, "six nodes of the campaign done", func() bool {
		done := 0
		for _, n := range r.Record().Nodes {
			if n.Phase == model.PhaseDone {
				done++
			}
		}
		return done >= 6
	})
	stopSampling()
	<-sampled
	mu.Lock()
	if len(samples) < 3 || strings.Contains(strings.Join(samples, "\n"), "SHORT") || strings.Contains(strings.Join(samples, "\n"), "unread") {
		t.Errorf("the room for one host's death, each second of the campaign:\n%s", strings.Join(samples, "\n"))
	}
	mu.Unlock()

	c.die(dead)
	c.forgetRecoveryAtEnd(dead)
	t.Cleanup(c.startRecoverer("true {node}"))
	c.waitRecovered(dead)
	for k := range 4 {
		vm, _ := c.World.ServerByName(fmt.Sprintf("big-11-%d", k))
		if vm.Status != "ACTIVE" || vm.Host == dead || vm.Host == "" {
			t.Errorf("%s after the recovery: %s on %q", vm.Name, vm.Status, vm.Host)
		}
	}
	// What is left of the campaign goes on within the room that is left: done, or refused
	// for the room, never anything else.
	select {
	case err := <-ran:
		var refused *ops.RefusedError
		if err != nil && (!errors.As(err, &refused) || !strings.Contains(err.Error(), "host failures")) {
			t.Errorf("the campaign after the death: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the campaign did not end: %+v", r.Record())
	}
}
