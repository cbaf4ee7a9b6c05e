package nova_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// [proactive]'s Nova signals, as drainctl reads the service (the read its controller makes as
// it acts): a service another tool disabled, with its own reason, is nova:disabled, one
// drainctl disabled is not; a nova-compute that stopped reporting is nova:down while its node
// is Ready. One body, the simulator and the real Nova.
func TestConformanceANovaSignalOfADegradingHost(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		cl := drainctlClient(t, c)
		ready := &model.KubeNode{Name: "compute-1", Ready: true}
		check := func(what string, want ...string) {
			t.Helper()
			svcs, err := cl.ComputeServices(context.Background(), "compute-1")
			must(t, err)
			if len(svcs) != 1 {
				t.Fatalf("%s: %d services on compute-1", what, len(svcs))
			}
			n := model.Node{Name: "compute-1", Kube: ready, Compute: &svcs[0]}
			if got := ops.ProactiveTriggers(n, []string{model.NovaDisabled, model.NovaDown}); !slices.Equal(got, want) {
				t.Errorf("%s: the service %+v reads as %v, want %v", what, svcs[0], got, want)
			}
		}
		update := func(body map[string]any) {
			t.Helper()
			if code, words := c.UpdateService("compute-1", body); code != 200 {
				t.Fatalf("updating compute-1's service with %v: %d %s", body, code, words)
			}
		}
		check("at rest")
		update(map[string]any{"status": "disabled", "disabled_reason": "hw-health: ECC errors on DIMM 3"})
		check("disabled by another tool", model.NovaDisabled)
		update(map[string]any{"status": "disabled", "disabled_reason": ops.ReasonPrefix + "evacuate by conformance"})
		check("disabled by drainctl")
		update(map[string]any{"status": "enabled"})
		c.StopCompute("compute-1")
		c.Wait(60*time.Second, "nova-compute on compute-1 down", func() bool { return c.Service("compute-1").State == "down" })
		check("nova-compute dead, its node Ready", model.NovaDown)
	})
}
