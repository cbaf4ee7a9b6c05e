package nova_test

import (
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/sim"
)

// Capacity per host is Placement's arithmetic: (total − reserved) × allocation ratio, used
// the sum of the allocations on the provider.
func TestCapacityFromPlacement(t *testing.T) {
	w := sim.NewWorld(sim.Options{CPUAllocationRatio: 16, RAMAllocationRatio: 1.5, ReservedHostMemoryMB: 4096})
	w.AddHost("compute-0", 32, 131072, 1000)
	w.AddServer("vm-a", "compute-0", sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	w.AddServer("vm-b", "compute-0", sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := connect(t, srv, nova.Options{})
	hvs, err := c.Hypervisors(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := hvs[0].Capacity
	want := model.Capacity{Source: model.CapacityPlacement,
		VCPU:     model.Resource{Total: 32, AllocationRatio: 16, Capacity: 512, Used: 5},
		MemoryMB: model.Resource{Total: 131072, Reserved: 4096, AllocationRatio: 1.5, Capacity: (131072 - 4096) * 1.5, Used: 10240},
		DiskGB:   model.Resource{Total: 1000, AllocationRatio: 1, Capacity: 1000, Used: 100}}
	if got == nil || *got != want {
		t.Fatalf("capacity\n got %+v\nwant %+v", got, want)
	}
	if f := got.MemoryMB.Free(); f != 190464-10240 {
		t.Errorf("free RAM %v", f)
	}
}

// A live migration moves allocations as Nova does: while it runs the destination holds the
// VM too (and the migration the source's share); when it completes the source is freed.
// The ranking follows: a node whose VM fitted nowhere during the migration can go after.
func TestMigrationMovesAllocationsAndTheRanking(t *testing.T) {
	w := sim.NewWorld(sim.Options{Scale: 50, CPUAllocationRatio: 4, RAMAllocationRatio: 1, ReservedHostMemoryMB: 512})
	for _, h := range []string{"c0", "c1", "c2"} {
		w.AddHost(h, 16, 16896, 1000) // 16 GiB after the reserved 512 MiB
	}
	w.AddServer("vm-x", "c0", sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 2, DiskGB: 20})
	big := w.AddServer("vm-big", "c1", sim.Flavor{Name: "m1.xlarge", RAMMB: 10240, VCPUs: 2, DiskGB: 20})
	w.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[big.ID].DirtyBytesPerSec = 0.97 * (1 << 30) })
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := connect(t, srv, nova.Options{})
	rank := func() (map[string]model.Capacity, policy.Victim) {
		snap, err := c.Snapshot(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		kube := model.KubeSnapshot{}
		for _, n := range []string{"c0", "c1", "c2"} {
			kube.Nodes = append(kube.Nodes, model.KubeNode{Name: n, Ready: true, Schedulable: true, Roles: []string{"compute"},
				Allocatable: model.Resources{MilliCPU: 16000, MemoryBytes: 64 << 30, Pods: 110}})
		}
		inv := model.Join(kube, &snap, model.NewHostMapper(model.MappingConfig{}), time.Now())
		caps := map[string]model.Capacity{}
		for _, n := range inv.Nodes {
			caps[n.Name] = *n.Hypervisor.Capacity
		}
		for _, v := range policy.Rank(inv, policy.Options{}, policy.DefaultWeights()) {
			if v.Node == "c0" {
				return caps, v
			}
		}
		t.Fatal("c0 not ranked")
		return nil, policy.Victim{}
	}
	caps, v := rank()
	if !v.Candidate || caps["c2"].MemoryMB.Used != 0 {
		t.Fatalf("before: c0 %+v, c2 %+v", v, caps["c2"])
	}
	if err := c.LiveMigrate(ctx(t), big.ID, "c2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ms, _ := c.ServerMigrations(ctx(t), big.ID); len(ms) > 0 && ms[0].Status == model.MigrationRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the migration never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	caps, v = rank()
	if caps["c1"].MemoryMB.Used != 10240 || caps["c2"].MemoryMB.Used != 10240 {
		t.Errorf("during the migration both hosts hold vm-big: c1 %+v, c2 %+v", caps["c1"].MemoryMB, caps["c2"].MemoryMB)
	}
	if v.Candidate || !hasReason(v, model.NoHostWithRoom) {
		t.Errorf("during the migration vm-x fits nowhere, c0 cannot go: %+v", v)
	}
	w.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[big.ID].DirtyBytesPerSec = 0 })
	for {
		if vm, _ := w.ServerByName("vm-big"); vm.Host == "c2" && vm.TaskState == "" {
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the migration never completed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	caps, v = rank()
	if caps["c1"].MemoryMB.Used != 0 || caps["c2"].MemoryMB.Used != 10240 {
		t.Errorf("after: c1 %+v, c2 %+v", caps["c1"].MemoryMB, caps["c2"].MemoryMB)
	}
	if !v.Candidate {
		t.Errorf("after the migration c1 has room again, c0 can go: %+v", v)
	}
}

func hasReason(v policy.Victim, code model.ReasonCode) bool {
	for _, r := range v.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// Without Placement in the catalog drainctl stays at 2.87 and takes os-hypervisors' figures
// (with the configured vCPU ratio), labelled so.
func TestWithoutPlacementCapacityComesFromHypervisors(t *testing.T) {
	srv, _ := world(t, 2, 1, sim.Options{NoPlacement: true})
	c := connect(t, srv, nova.Options{CPUAllocationRatio: 4})
	if !c.PlacementMissing() || c.Microversion() != nova.LastWithHypervisorCapacity {
		t.Fatalf("placement missing %v, microversion %s", c.PlacementMissing(), c.Microversion())
	}
	hvs, err := c.Hypervisors(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := hvs[0].Capacity
	if got == nil || got.Source != model.CapacityHypervisors || got.VCPU.Capacity != 32*4 || got.MemoryMB.Total != 65536 {
		t.Errorf("capacity %+v", got)
	}
}

// At rest a refresh reads Placement once (the providers' list): a provider's inventories and
// allocations are read again only when its generation moved. A migration moves the
// generations of its two hosts, and only theirs.
func TestPlacementReadsOnlyWhatChanged(t *testing.T) {
	w := sim.NewWorld(sim.Options{Scale: 50})
	hosts := []string{"c0", "c1", "c2", "c3", "c4"}
	for _, h := range hosts {
		w.AddHost(h, 16, 65536, 1000)
	}
	w.AddServer("vm-a", "c0", sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := connect(t, srv, nova.Options{})
	placement := func() (list, perProvider int) {
		for route, n := range w.Stats().ByRoute {
			switch {
			case route == "placement GET /resource_providers":
				list += n
			case len(route) > 10 && route[:10] == "placement ":
				perProvider += n
			}
		}
		return
	}
	read := func() map[string]model.Capacity {
		hvs, err := c.Hypervisors(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]model.Capacity{}
		for _, h := range hvs {
			out[h.Host] = *h.Capacity
		}
		return out
	}
	read()
	list0, per0 := placement()
	if per0 != 2*len(hosts) {
		t.Fatalf("first read: %d per-provider requests, want %d (inventories and allocations of each)", per0, 2*len(hosts))
	}
	read()
	list1, per1 := placement()
	if list1 != list0+1 || per1 != per0 {
		t.Errorf("a read at rest made %d list and %d per-provider requests, want 1 and 0", list1-list0, per1-per0)
	}
	vm, _ := w.ServerByName("vm-a")
	if err := c.LiveMigrate(ctx(t), vm.ID, "c3"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s, _ := w.ServerByName("vm-a"); s.Host == "c3" && s.Status == "ACTIVE" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	caps := read()
	_, per2 := placement()
	if per2-per1 != 4 {
		t.Errorf("after a migration c0 → c3: %d per-provider requests, want 4 (the two hosts' inventories and allocations)", per2-per1)
	}
	if caps["c0"].MemoryMB.Used != 0 || caps["c3"].MemoryMB.Used != 2048 {
		t.Errorf("after the migration: c0 uses %d MB, c3 %d MB; want 0 and 2048", caps["c0"].MemoryMB.Used, caps["c3"].MemoryMB.Used)
	}
}
