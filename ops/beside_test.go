package ops_test

import (
	"testing"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/sim"
)

// A campaign's node evicts its pods while its VMs move (#41.1): the pods' step ends while a
// slow VM still migrates, and the hypervisor's carriers still go after the VMs. A person's
// evacuation keeps its steps one after the other.
func TestACampaignsNodeEvictsItsPodsWhileItsVMsMove(t *testing.T) {
	for _, campaign := range []string{"", "rack-1"} {
		t.Run("campaign="+campaign, func(t *testing.T) {
			c := newCluster(t, 20)
			e := c.Engine("tester@a", nil)
			c0 := c.Name("c0")
			a, _ := c.World.ServerByName("vm-a")
			c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[a.ID].DirtyBytesPerSec = 0.8 * (1 << 30) }) // converges, slowly
			ro := ops.RunOptions{Policy: defaults(), Campaign: campaign}
			ro.Policy.Force = true
			rec, _, err := run(t, e, model.OpEvacuate, c0, ro)
			if err != nil {
				t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
			}
			order := map[string]int{}
			for i, ev := range rec.Events() {
				if s, ok := ev.(ops.StepEvent); ok {
					order[string(s.Step)+" "+string(s.State)] = i
				}
			}
			migStart, migDone := order["migrate-vms started"], order["migrate-vms done"]
			evStart, evDone := order["evict-pods started"], order["evict-pods done"]
			carriers, ok := order["evict-carriers started"]
			if !ok {
				carriers, ok = order["evict-carriers skipped"] // none here: its turn still comes after the VMs
			}
			if !ok {
				t.Fatalf("no evict-carriers step event: %v", order)
			}
			if campaign == "" && evStart < migDone {
				t.Errorf("a person's evacuation evicted its pods (event %d) before its VMs were gone (%d)", evStart, migDone)
			}
			if campaign != "" && (evStart > migDone || evDone > migDone || evStart < migStart) {
				t.Errorf("in a campaign, want evict-pods started (%d) and done (%d) while migrate-vms runs (%d to %d)", evStart, evDone, migStart, migDone)
			}
			if carriers < migDone {
				t.Errorf("the carriers' step (%d) began before the VMs were gone (%d)", carriers, migDone)
			}
		})
	}
}
