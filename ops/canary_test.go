package ops_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

const (
	canaryImage   = "5b1e0f3c-7d0a-4c44-9f5e-2f8e8b0c1a01"
	canaryFlavor  = "c1.tiny"
	canaryNetwork = "b1b2c3d4-0000-4000-8000-00000000000a"
)

// canaryCluster is the test cluster with [return] canary on, and the image, flavor and
// network it boots with known to the simulated Nova.
func canaryCluster(t *testing.T, timeout time.Duration) *simtest.Cluster {
	c := newCluster(t, 100)
	c.World.AddImage(canaryImage)
	c.World.AddFlavor(canaryFlavor, sim.Flavor{Name: canaryFlavor, RAMMB: 256, VCPUs: 1, DiskGB: 1})
	c.World.AddNetwork(canaryNetwork)
	c.Cfg.Return = model.ReturnConfig{Canary: true, CanaryTimeout: model.Duration(timeout), Image: canaryImage, Flavor: canaryFlavor, Network: canaryNetwork}
	return c
}

// evacuated empties node (its pods forced) so its nova-compute is disabled by drainctl.
func evacuated(t *testing.T, c *simtest.Cluster, e *ops.Engine, node string) {
	t.Helper()
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	if rec, _, err := run(t, e, model.OpEvacuate, node, ro); err != nil {
		t.Fatalf("evacuate %s: %v\n%s", node, err, rec.Transcript(c.Px))
	}
	if h, _ := c.World.Host(node); h.Enabled {
		t.Fatalf("%s's nova-compute still enabled after its evacuation", node)
	}
}

// canariesOn are the servers booted through the API on host.
func canariesOn(c *simtest.Cluster, host string) []sim.VM {
	var out []sim.VM
	for _, s := range c.World.Booted() {
		if s.Host == host {
			out = append(out, s)
		}
	}
	return out
}

// A returning host's service is enabled for a canary (Nova boots nothing on a disabled one),
// which must be ACTIVE with a console log and is deleted before the node goes on.
func TestAHostReturnsOnlyOnceProven(t *testing.T) {
	c := canaryCluster(t, 20*time.Second)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	evacuated(t, c, e, c0)

	p, err := e.Plan(t.Context(), model.OpUncordon, c0, ops.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range p.Steps {
		kinds = append(kinds, string(s.Kind))
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "canary enable-compute uncordon") {
		t.Fatalf("uncordon's steps are %s: the canary must come right before nova-compute is enabled", got)
	}

	rec, _, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{})
	if err != nil {
		t.Fatalf("uncordon: %v\n%s", err, rec.Transcript(c.Px))
	}
	booted := canariesOn(c, c0)
	if len(booted) != 1 || booted[0].Name != ops.CanaryName(c0) || booted[0].Status != "DELETED" || booted[0].Image != canaryImage {
		t.Fatalf("want one canary booted on %s from the image and deleted, got %+v", c0, booted)
	}
	if h, _ := c.World.Host(c0); !h.Enabled {
		t.Errorf("nova-compute not enabled after the canary passed: %+v", h)
	}
	var changes []string
	for _, ev := range rec.Events() {
		if nc, ok := ev.(ops.NodeChanged); ok {
			changes = append(changes, nc.What)
		}
	}
	tr := strings.Join(changes, "\n")
	enabled, booting, deleted := strings.Index(tr, "nova-compute enabled for the canary"), strings.Index(tr, "canary "+ops.CanaryName(c0)+" booting"), strings.Index(tr, "deleted")
	if enabled < 0 || booting < enabled || deleted < booting {
		t.Errorf("want the service enabled for the canary, then the canary booted, then deleted:\n%s", tr)
	}

	// Uncordon again: the service is enabled, so nothing is booted.
	if _, _, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(c.World.Booted()); n != 1 {
		t.Errorf("a rerun booted another canary: %d booted", n)
	}
}

// A canary that goes to ERROR leaves the service disabled with the reason, fails the
// uncordon with what Nova said, and is deleted; once the host is mended, uncordon passes.
// A rollback does not enable a host its canary failed.
func TestAFailedCanaryLeavesTheServiceDisabled(t *testing.T) {
	c := canaryCluster(t, 20*time.Second)
	e := c.Engine("tester@a", nil)
	c1 := c.Name("c1")
	evacuated(t, c, e, c1)
	if err := c.World.ApplyFaultSpec("boot-error=" + c1); err != nil {
		t.Fatal(err)
	}

	rec, _, err := run(t, e, model.OpUncordon, c1, ops.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "not proven healthy") || !strings.Contains(err.Error(), "Failed to allocate the network(s)") {
		t.Fatalf("want the uncordon failed with Nova's fault, got %v\n%s", err, rec.Transcript(c.Px))
	}
	h, _ := c.World.Host(c1)
	if h.Enabled || !strings.HasPrefix(h.DisabledReason, ops.CanaryFailedPrefix) || !strings.Contains(h.DisabledReason, "ERROR") {
		t.Errorf("want nova-compute left disabled with the canary's reason, got enabled=%v %q", h.Enabled, h.DisabledReason)
	}
	if n := c.Node(c1); n.Schedulable {
		t.Error("the node was uncordoned after its canary failed")
	}
	if b := canariesOn(c, c1); len(b) != 1 || b[0].Status != "DELETED" {
		t.Errorf("the failed canary was not deleted: %+v", b)
	}

	// A rollback puts the node back but leaves a host its canary failed disabled.
	if rec, _, err := run(t, e, model.OpRollback, c1, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatalf("rollback: %v\n%s", err, rec.Transcript(c.Px))
	}
	if h, _ := c.World.Host(c1); h.Enabled {
		t.Error("a rollback enabled a host whose canary failed")
	}

	// Mended: uncordon proves it and enables it.
	c.World.Update(func(hosts map[string]*sim.Host, _ map[string]*sim.VM) { hosts[c1].BootError = "" })
	if rec, _, err := run(t, e, model.OpUncordon, c1, ops.RunOptions{}); err != nil {
		t.Fatalf("uncordon of the mended host: %v\n%s", err, rec.Transcript(c.Px))
	}
	if h, _ := c.World.Host(c1); !h.Enabled {
		t.Errorf("the mended host's canary passed but its service is %+v", h)
	}
}

// A canary that never becomes ACTIVE, or whose console stays empty, fails within
// canary_timeout; it is deleted either way.
func TestACanaryThatNeverBootsTimesOut(t *testing.T) {
	for _, fault := range []string{"boot-hang", "console-silent"} {
		t.Run(fault, func(t *testing.T) {
			c := canaryCluster(t, 1500*time.Millisecond)
			e := c.Engine("tester@a", nil)
			c2 := c.Name("c2")
			evacuated(t, c, e, c2)
			if err := c.World.ApplyFaultSpec(fault + "=" + c2); err != nil {
				t.Fatal(err)
			}
			_, _, err := run(t, e, model.OpUncordon, c2, ops.RunOptions{})
			want := map[string]string{"boot-hang": "still BUILD", "console-silent": "console log is empty"}[fault]
			if err == nil || !strings.Contains(err.Error(), "return.canary_timeout (1.5s)") || !strings.Contains(err.Error(), want) {
				t.Fatalf("want a timeout saying %q, got %v", want, err)
			}
			if h, _ := c.World.Host(c2); h.Enabled || !strings.HasPrefix(h.DisabledReason, ops.CanaryFailedPrefix) {
				t.Errorf("nova-compute after a timed-out canary: %+v", h)
			}
			if b := canariesOn(c, c2); len(b) != 1 || b[0].Status != "DELETED" {
				t.Errorf("the canary was not deleted: %+v", b)
			}
		})
	}
}

// Nova's own refusal of the canary's request (an image that does not exist) fails the
// node and says so; nothing is booted.
func TestACanaryNovaRefusesSaysWhy(t *testing.T) {
	c := canaryCluster(t, 20*time.Second)
	c.Cfg.Return.Image = "no-such-image"
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	evacuated(t, c, e, c0)
	_, _, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "Image no-such-image could not be found") {
		t.Fatalf("want Nova's refusal named, got %v", err)
	}
	if len(c.World.Booted()) != 0 {
		t.Error("something was booted")
	}
	if h, _ := c.World.Host(c0); h.Enabled {
		t.Error("enabled without a canary")
	}
}

// While the service is enabled for the canary, the scheduler may send a tenant's VM to the
// unproven host: a failed canary disables the service again and names what landed.
func TestAFailedCanaryNamesTheVMsThatLandedMeanwhile(t *testing.T) {
	c := canaryCluster(t, 1500*time.Millisecond)
	e := c.Engine("tester@a", nil)
	c2 := c.Name("c2")
	evacuated(t, c, e, c2)
	if err := c.World.ApplyFaultSpec("boot-hang=" + c2); err != nil {
		t.Fatal(err)
	}
	c.World.AddFlavor("t1", sim.Flavor{Name: "t1", RAMMB: 512, VCPUs: 1, DiskGB: 1})
	landed := make(chan string, 1)
	go func() { // a tenant's boot, scheduled while the canary runs
		for h, _ := c.World.Host(c2); !h.Enabled; h, _ = c.World.Host(c2) {
			time.Sleep(5 * time.Millisecond)
		}
		id, err := c.Nova.BootOn(t.Context(), c2, "", ops.BootSpec{Name: "tenant-vm", Image: canaryImage, Flavor: "t1", Network: canaryNetwork})
		if err != nil {
			t.Error(err)
		}
		landed <- id
	}()
	_, _, err := run(t, e, model.OpUncordon, c2, ops.RunOptions{})
	id := <-landed
	if err == nil || !strings.Contains(err.Error(), "landed on it while it was enabled for the canary: tenant-vm ("+id+")") {
		t.Fatalf("want the failure to name the tenant's VM, got %v", err)
	}
	if h, _ := c.World.Host(c2); h.Enabled || !strings.HasPrefix(h.DisabledReason, ops.CanaryFailedPrefix) {
		t.Errorf("nova-compute after the failed canary: %+v", h)
	}
}

// Emptiness before the step is proven twice: Nova lists no server on the host, and no
// consumer but the VMs left on purpose holds an allocation on its Placement provider.
func TestEmptinessIsProvenInPlacementToo(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	const orphan = "0b7d4c1e-5a55-4e3e-9e0c-orphaned0001"
	c.World.LeakAllocation(c0, orphan, sim.Flavor{RAMMB: 4096, VCPUs: 2, DiskGB: 40})
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	rec, _, err := run(t, e, model.OpEvacuate, c0, ro)
	if err == nil || !strings.Contains(err.Error(), "an allocation in Placement of consumer "+orphan) {
		t.Fatalf("want the evacuation's verify to name the orphaned allocation, got %v\n%s", err, rec.Transcript(c.Px))
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host == c0 {
			t.Errorf("%s was not moved", name)
		}
	}
}

// A canary left by a run killed before it deleted it is named by the server ID drainctl
// journaled on the node, with the command to delete it; a tenant's server named like a canary
// is no leftover (and no delete command is handed for it), nor is a server a forged journal
// names. A tenant's server named like the canary that lands meanwhile is named as landed.
func TestALeftoverCanaryIsNamedByItsJournaledID(t *testing.T) {
	c := canaryCluster(t, 20*time.Second)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	evacuated(t, c, e, c0)
	tiny := sim.Flavor{Name: canaryFlavor, RAMMB: 256, VCPUs: 1, DiskGB: 1}
	earlier := c.World.AddServer(ops.CanaryName(c0), c0, tiny)
	tenant := c.World.AddServer(ops.CanaryName(c0), c0, tiny) // a tenant's, named like one
	c.SetAnnotation(c0, ops.CanaryAnnotation, earlier.ID)
	rec, _, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{})
	if err != nil {
		t.Fatalf("uncordon: %v\n%s", err, rec.Transcript(c.Px))
	}
	tr := said(rec)
	if !strings.Contains(tr, "openstack server delete "+earlier.ID) || strings.Contains(tr, tenant.ID) {
		t.Errorf("want the journaled canary %s named with its delete, the tenant's %s never:\n%s", earlier.ID, tenant.ID, tr)
	}
	if k := c.Node(c0); k.Annotations[ops.CanaryAnnotation] != "" {
		t.Errorf("the canary's ID stays journaled after it was deleted: %q", k.Annotations[ops.CanaryAnnotation])
	}

	// A forged journal naming a tenant's server (not named as the canary) names nothing.
	c2 := c.Name("c2")
	evacuated(t, c, e, c2)
	victim := c.World.AddServer("tenant-db", c2, tiny)
	c.SetAnnotation(c2, ops.CanaryAnnotation, victim.ID)
	rec, _, err = run(t, e, model.OpUncordon, c2, ops.RunOptions{})
	if err != nil {
		t.Fatalf("uncordon: %v\n%s", err, rec.Transcript(c.Px))
	}
	if tr := said(rec); strings.Contains(tr, victim.ID) {
		t.Errorf("a forged journal named the tenant's server %s:\n%s", victim.ID, tr)
	}
}

// said is every step's detail and every node change a run reported, a line each.
func said(rec *simtest.Recorder) string {
	var lines []string
	for _, ev := range rec.Events() {
		switch ev := ev.(type) {
		case ops.StepEvent:
			lines = append(lines, ev.Detail)
		case ops.NodeChanged:
			lines = append(lines, ev.What)
		}
	}
	return strings.Join(lines, "\n")
}

// A failed canary stops the return before its restart-vms step: the VM drainctl stopped for
// restart-in-place stays stopped, and the failure says so (it was left unmentioned).
func TestAFailedCanarySaysTheVMsItLeavesStopped(t *testing.T) {
	c := canaryCluster(t, 20*time.Second)
	e := c.Engine("tester@a", nil)
	c0 := c.Name("c0")
	c.World.SetMetadata("vm-a", model.VMPolicyKey, "restart-in-place")
	evacuated(t, c, e, c0)
	if a, _ := c.World.ServerByName("vm-a"); a.Status != "SHUTOFF" {
		t.Fatalf("vm-a after the evacuation: %s, want stopped in place", a.Status)
	}
	// A forged journal entry (one Node patch writes it) names a tenant's server its owner
	// stopped: Nova's newest stop is not drainctl's, so it is not said to be drainctl's.
	c.World.AddServer("vm-t", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.World.Stop("vm-t")
	tenant, _ := c.World.ServerByName("vm-t")
	var j map[string]any
	if err := json.Unmarshal([]byte(c.Node(c0).Annotations[ops.JournalAnnotation]), &j); err != nil {
		t.Fatal(err)
	}
	j["restart"] = append(j["restart"].([]any), tenant.ID)
	j["stopped"].(map[string]any)[tenant.ID] = "req-forged"
	forged, _ := json.Marshal(j)
	c.SetAnnotation(c0, ops.JournalAnnotation, string(forged))
	if err := c.World.ApplyFaultSpec("boot-error=" + c0); err != nil {
		t.Fatal(err)
	}
	rec, rep, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{})
	// Neither vm-a (stopped in place) nor vm-t was sent there while the service was enabled
	// for the canary: they were on the host before (it named both as landed meanwhile).
	if err != nil && (strings.Contains(err.Error(), "vm-t") || strings.Contains(err.Error(), "landed on it")) {
		t.Errorf("a forged journal entry is said stopped by drainctl, or a VM there before said landed: %v", err)
	}
	want := "1 VM(s) drainctl stopped for restart-in-place stay stopped until the node's return completes: vm-a"
	if err == nil || !strings.Contains(err.Error(), "not proven healthy") || !strings.Contains(err.Error(), want) || !strings.Contains(rep.Error, want) {
		t.Fatalf("want the failed return to say vm-a stays stopped, got %v\n%s", err, rec.Transcript(c.Px))
	}
	// Mended, the return starts it, and its failure no longer says it.
	c.World.Update(func(hosts map[string]*sim.Host, _ map[string]*sim.VM) { hosts[c0].BootError = "" })
	if rec, _, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{}); err != nil {
		t.Fatalf("uncordon of the mended host: %v\n%s", err, rec.Transcript(c.Px))
	}
	if a, _ := c.World.ServerByName("vm-a"); a.Status != "ACTIVE" || a.Host != c0 {
		t.Errorf("vm-a after the return: %s on %s", a.Status, a.Host)
	}
}

// A returning host's Placement provider is proved on every way back, not only the first: an
// allocation Nova did not free refuses the uncordon, and the second uncordon (the service
// forced up by the first, so nothing left to force) refuses it too rather than taking it.
// Freed, the third goes through.
func TestTheWayBackProvesTheProviderEveryTime(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c1 := c.Name("c1")
	dies(t, c, e, c1)
	rro := ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	if rec, rep, err := run(t, e, model.OpRecover, c1, rro); err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("recover c1: %v %s\n%s", err, rep.Result, rec.Transcript(c.Px))
	}
	const phantom = "0b7d4c1e-5a55-4e3e-9e0c-phantom00001"
	c.World.LeakAllocation(c1, phantom, sim.Flavor{RAMMB: 4096, VCPUs: 2, DiskGB: 40})
	c.World.ReviveHost(c1)
	kubetest.SetReady(t, c.CS, c1, true, time.Now())
	kubetest.Eventually(t, 10*time.Second, "the cache seeing c1 Ready", func() bool { k, _ := e.KubeNode(c1); return k.Ready })
	for i := range 2 {
		rec, _, err := run(t, e, model.OpUncordon, c1, ops.RunOptions{Policy: defaults()})
		if err == nil || !strings.Contains(err.Error(), "has not freed its provider") || !strings.Contains(err.Error(), phantom) {
			t.Fatalf("uncordon %d with an allocation left on c1: %v\n%s", i+1, err, rec.Transcript(c.Px))
		}
	}
	if k, _ := e.KubeNode(c1); k.Schedulable {
		t.Error("c1 schedulable while its provider holds an allocation nothing explains")
	}
	c.World.FreeLeaked(c1, phantom)
	if rec, _, err := run(t, e, model.OpUncordon, c1, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatalf("uncordon once freed: %v\n%s", err, rec.Transcript(c.Px))
	}
}
