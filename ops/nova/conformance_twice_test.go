package nova_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// A VM rebuilt twice: its first host dies (rebuilt on compute-1), then compute-1 dies too
// (rebuilt on compute-2). It holds a share on each dead host; when compute-1's nova-compute
// starts again Nova frees compute-1's share only (compute-0 is still away). Moved on live to
// compute-1, it holds nothing on compute-2 once the move ends, nor on the dead compute-0: the
// move carried all its allocations. A host that took a rebuilt VM and gave it up holds none
// of it, whatever came before.
func TestConformanceAVMRebuiltTwiceFreesEachHostItLeft(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("twice-1", "compute-0")
		holds := func(host string) bool { return slices.Contains(c.Consumers(host), id) }
		die := func(host, to string) {
			t.Helper()
			c.StopCompute(host)
			c.Wait(60*time.Second, "nova-compute on "+host+" down", func() bool {
				svcs, err := cl.ComputeServices(ctx, host)
				must(t, err)
				return !svcs[0].Up
			})
			c.MustAction(id, map[string]any{"evacuate": map[string]any{"host": to}})
			c.WaitServer(id, 60*time.Second, "rebuilt ACTIVE on "+to, func(s novatest.Server) bool {
				return s.Status == "ACTIVE" && s.Task() == "" && s.Host == to
			})
		}
		die("compute-0", "compute-1")
		die("compute-1", "compute-2")
		for _, h := range []string{"compute-0", "compute-1", "compute-2"} {
			if !holds(h) {
				t.Errorf("rebuilt twice, the VM holds nothing on %s: %v", h, c.Consumers(h))
			}
		}
		c.StartCompute("compute-1")
		c.Wait(90*time.Second, "compute-1's share freed once its nova-compute starts", func() bool { return !holds("compute-1") })
		if !holds("compute-0") || !holds("compute-2") {
			t.Errorf("after compute-1's return: compute-0 %v, compute-2 %v; want the VM on both", c.Consumers("compute-0"), c.Consumers("compute-2"))
		}
		c.Wait(60*time.Second, "nova-compute on compute-1 up", func() bool {
			svcs, err := cl.ComputeServices(ctx, "compute-1")
			must(t, err)
			return svcs[0].Up
		})
		must(t, cl.LiveMigrate(ctx, id, "compute-1"))
		c.WaitServer(id, 90*time.Second, "ACTIVE on compute-1", func(s novatest.Server) bool {
			return s.Status == "ACTIVE" && s.Task() == "" && s.Host == "compute-1"
		})
		c.Wait(30*time.Second, "compute-2 holding nothing of the VM it gave up", func() bool { return !holds("compute-2") })
		if !holds("compute-1") || holds("compute-0") {
			t.Errorf("after the live move: compute-1 %v, compute-0 %v; want the VM on compute-1 only", c.Consumers("compute-1"),
				c.Consumers("compute-0"))
		}
	})
}
