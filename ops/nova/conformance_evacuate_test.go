package nova_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// An evacuation to a named host (2.68: the scheduler checks it, no force): to a disabled one
// it is accepted and then turned down, as the scheduler turns down a live migration there
// (the record in error naming the host, the server ERROR on its dead host with no task, the
// action's error NoValidHost); once the host is enabled the same server, ERROR now, is
// rebuilt there ACTIVE. A recovery's reserved host is enabled before its VMs are sent to it,
// and a turned-down rebuild is asked again elsewhere.
func TestConformanceEvacuationToANamedHost(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("named-1", "compute-1")
		_, err := cl.SetServiceEnabled(ctx, model.ComputeService{Host: "compute-2"}, false, "drainctl conformance")
		must(t, err)
		c.StopCompute("compute-1")
		c.Wait(60*time.Second, "nova-compute on compute-1 down", func() bool {
			svcs, err := cl.ComputeServices(ctx, "compute-1")
			must(t, err)
			return !svcs[0].Up
		})
		_, err = cl.SetForcedDown(ctx, "compute-1", true)
		must(t, err)

		asked := c.Clock()
		must(t, cl.Evacuate(ctx, id, "compute-2")) // accepted: the scheduler answers after
		rec := recordOf(t, c, ctx, cl, id, model.MigrationTypeEvacuation, asked)
		c.Wait(30*time.Second, "the evacuation's record in error", func() bool { return c.MigrationStatus(id, rec.ID) == "error" })
		if ms := c.Migrations(id); ms[0].DestCompute != "compute-2" {
			t.Errorf("the turned-down record names %q; want compute-2", ms[0].DestCompute)
		}
		c.Wait(30*time.Second, "ERROR on compute-1, no task", func() bool {
			vm := serverOf(t, ctx, cl, id)
			return vm.Phase == model.PhaseBroken && vm.Host == "compute-1" && vm.TaskState == ""
		})
		f, err := cl.LastActionError(ctx, id, model.MoveRebuild)
		must(t, err)
		if !strings.Contains(f.Message, "No valid host") || !f.NoValidHost {
			t.Errorf("the action's error: %+v (NoValidHost expected)", f)
		}

		_, err = cl.SetServiceEnabled(ctx, model.ComputeService{Host: "compute-2"}, true, "")
		must(t, err)
		must(t, cl.Evacuate(ctx, id, "compute-2"))
		c.Wait(60*time.Second, "rebuilt ACTIVE on compute-2", func() bool {
			vm := serverOf(t, ctx, cl, id)
			return vm.Phase == model.PhaseRunning && vm.TaskState == "" && vm.Host == "compute-2"
		})
		if err := cl.Evacuate(ctx, id, "compute-9"); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("an evacuation to a host Nova does not know: %v; want 404", err)
		}
	})
}
