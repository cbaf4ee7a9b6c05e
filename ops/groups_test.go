package ops_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// A VM group's disruption budget holds across processes (#57.1): db-0 and db-1 on c0, db-2
// on c1, each naming group db with max-disrupted 1 in its metadata. Two engines (two
// processes' worth: each its own holder and ledger) empty c0 and c1 at once, two moves a
// source allowed; the test samples the simulator every few milliseconds: never two members
// migrating at once. Every member ends elsewhere, and a held member is said with its group.
func TestAVMGroupsBudgetHoldsAcrossProcesses(t *testing.T) {
	c := newCluster(t, 20)
	c.Cfg.Concurrency.MigrationsPerSource, c.Cfg.Concurrency.MigrationsPerCluster = 2, 10
	c0, c1 := c.Name("c0"), c.Name("c1")
	f := sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80}
	for name, host := range map[string]string{"db-0": c0, "db-1": c0, "db-2": c1} {
		c.World.AddServer(name, host, f)
		c.World.SetMetadata(name, model.GroupKey, "db")
		c.World.SetMetadata(name, model.MaxDisruptedKey, "1")
	}
	ctx := kubetest.Ctx(t)
	var mu sync.Mutex
	most, said, onRow := 0, []string{}, []string{}
	sampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			n := 0
			c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
				for _, vm := range vms {
					if strings.HasPrefix(vm.Name, "db-") && vm.Status == "MIGRATING" {
						n++
					}
				}
			})
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
			select {
			case <-sampling:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for i, node := range []string{c0, c1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := c.Engine([]string{"alice@a", "bob@b"}[i], nil)
			ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
			plan, err := e.Plan(ctx, model.OpEvacuate, node, ro)
			if err != nil {
				t.Error(err)
				return
			}
			_, err = e.Run(ctx, plan, ro, func(ev ops.Event) {
				if n, ok := ev.(ops.NodeChanged); ok && strings.Contains(n.What, "disruption budget") {
					mu.Lock()
					said = append(said, n.What)
					mu.Unlock()
				}
				if m, ok := ev.(ops.MigrationEvent); ok && m.State == ops.MigWaiting && strings.Contains(m.Message, "disruption budget") {
					mu.Lock()
					onRow = append(onRow, m.VM+": "+m.Message) // the held VM's own row says why it waits
					mu.Unlock()
				}
			})
			if err != nil {
				t.Errorf("evacuate %s: %v", node, err)
			}
		}()
	}
	wg.Wait()
	close(sampling)
	<-sampled
	mu.Lock()
	defer mu.Unlock()
	if most != 1 {
		t.Errorf("at most %d members of group db migrating at once; want 1", most)
	}
	if len(said) == 0 || !strings.Contains(said[0], "group db is at its disruption budget (1 at once") {
		t.Errorf("what the runs said of the group: %q", said)
	}
	if len(onRow) != len(said) || !strings.HasPrefix(onRow[0], "db-") || !strings.Contains(onRow[0], "waits for one to end") {
		t.Errorf("the held VMs' rows said %q; want each held VM's own reason", onRow)
	}
	for _, name := range []string{"db-0", "db-1", "db-2"} {
		if vm, _ := c.World.ServerByName(name); vm.Host == c0 || vm.Host == c1 || vm.Status != "ACTIVE" {
			t.Errorf("%s: %s on %s", name, vm.Status, vm.Host)
		}
	}
}

// A dead host's members are rebuilt whatever their group's budget: db-0 and db-1 (group db,
// one at a time) die with c0; the recovery rebuilds both, the second while the first is, and
// says the group is over its budget.
func TestADeadHostsGroupMembersAreRebuiltOverTheBudget(t *testing.T) {
	c := newCluster(t, 20)
	c.Cfg.Concurrency.MigrationsPerSource = 2
	c0 := c.Name("c0")
	for _, name := range []string{"db-0", "db-1"} {
		c.World.AddServer(name, c0, sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
		c.World.SetMetadata(name, model.GroupKey, "db")
		c.World.SetMetadata(name, model.MaxDisruptedKey, "1")
	}
	e := c.Engine("tester@a", nil)
	dies(t, c, e, c0)
	ro := ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	rec, rep, err := run(t, e, model.OpRecover, c0, ro)
	if err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("recover: %v %s\n%s", err, rep.Result, rec.Transcript(c.Px))
	}
	for _, name := range []string{"db-0", "db-1"} {
		if vm, _ := c.World.ServerByName(name); vm.Host == c0 || vm.Status != "ACTIVE" {
			t.Errorf("%s: %s on %s; want rebuilt elsewhere", name, vm.Status, vm.Host)
		}
	}
	said := false
	for _, ev := range rec.Events() {
		if n, ok := ev.(ops.NodeChanged); ok && strings.Contains(n.What, "group db is at its disruption budget") &&
			strings.Contains(n.What, "over its budget") {
			said = true
		}
	}
	if !said {
		t.Errorf("the recovery did not say the group over its budget:\n%s", rec.Transcript(c.Px))
	}
}

// A stop in place is a disruption of the VM's group (#57.1): db-0 and db-1 (restart-in-place)
// and db-2 (live) form group db, one at a time. Once c0's evacuation has stopped db-0, c1's
// evacuation holds db-1's stop and another process's evacuation of c2 holds db-2's move, each
// saying so, until c0's uncordon starts db-0 again; then each goes, one at a time (db-1 stays
// stopped until c1's uncordon). The test samples the simulator every 2 ms: never two members
// stopped or migrating at once.
func TestAStopInPlaceIsADisruptionOfItsGroup(t *testing.T) {
	c := newCluster(t, 20)
	c.Cfg.Concurrency.Nodes = 3 // the three nodes emptied at once: only the group holds them
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	for _, spare := range []string{c.Name("c3"), c.Name("c4")} { // room for all three nodes' VMs
		kubetest.Node(t, c.CS, spare)
		c.World.AddHost(spare, 64, 262144, 2000)
	}
	f := sim.Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80}
	for name, host := range map[string]string{"db-0": c0, "db-1": c1, "db-2": c2} {
		c.World.AddServer(name, host, f)
		c.World.SetMetadata(name, model.GroupKey, "db")
		c.World.SetMetadata(name, model.MaxDisruptedKey, "1")
	}
	for _, name := range []string{"db-0", "db-1"} {
		c.World.SetMetadata(name, model.VMPolicyKey, string(model.PolicyRestartInPlace))
	}
	ctx := kubetest.Ctx(t)
	var mu sync.Mutex
	most, held := 0, map[string]bool{}
	sampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			n := 0
			c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
				for _, vm := range vms {
					if strings.HasPrefix(vm.Name, "db-") && (vm.Status == "MIGRATING" || vm.Status == "SHUTOFF") {
						n++
					}
				}
			})
			mu.Lock()
			most = max(most, n)
			mu.Unlock()
			select {
			case <-sampling:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	evacuate := func(e *ops.Engine, node string) error {
		plan, err := e.Plan(ctx, model.OpEvacuate, node, ro)
		if err != nil {
			return err
		}
		_, err = e.Run(ctx, plan, ro, func(ev ops.Event) {
			if n, ok := ev.(ops.NodeChanged); ok && strings.Contains(n.What, "group db is at its disruption budget") {
				mu.Lock()
				held[node] = true
				mu.Unlock()
			}
		})
		return err
	}
	alice, bob := c.Engine("alice@a", nil), c.Engine("bob@b", nil)
	if err := evacuate(alice, c0); err != nil {
		t.Fatalf("evacuate %s: %v", c0, err)
	}
	if vm, _ := c.World.ServerByName("db-0"); vm.Status != "SHUTOFF" {
		t.Fatalf("db-0 after its node's evacuation: %s; want stopped in place", vm.Status)
	}
	// Side by side: c1's stop and c2's move are both held by db-0's stop, and one uncordon
	// releases both at once; the stop and the move pass the same checks under the start lock,
	// so only one of them goes.
	done := map[string]chan error{c1: make(chan error, 1), c2: make(chan error, 1)}
	go func() { done[c1] <- evacuate(alice, c1) }()
	go func() { done[c2] <- evacuate(bob, c2) }() // another process
	kubetest.Eventually(t, 20*time.Second, "c1's stop and c2's move held by group db", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return held[c1] && held[c2]
	})
	if vm, _ := c.World.ServerByName("db-1"); vm.Status != "ACTIVE" {
		t.Errorf("db-1 while db-0 is stopped: %s; want left running", vm.Status)
	}
	if _, rep, err := run(t, alice, model.OpUncordon, c0, ops.RunOptions{Policy: defaults()}); err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("uncordon %s: %v %s", c0, err, rep.Result)
	}
	if err := <-done[c1]; err != nil { // db-1 stopped, before or after db-2's move
		t.Fatalf("evacuate %s: %v", c1, err)
	}
	if _, rep, err := run(t, alice, model.OpUncordon, c1, ops.RunOptions{Policy: defaults()}); err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("uncordon %s: %v %s", c1, err, rep.Result)
	}
	if err := <-done[c2]; err != nil {
		t.Fatalf("evacuate %s: %v", c2, err)
	}
	close(sampling)
	<-sampled
	mu.Lock()
	defer mu.Unlock()
	if most != 1 {
		t.Errorf("at most %d members of group db stopped or migrating at once; want 1", most)
	}
	for _, name := range []string{"db-0", "db-1"} {
		if vm, _ := c.World.ServerByName(name); vm.Status != "ACTIVE" {
			t.Errorf("%s after its node's uncordon: %s; want started again", name, vm.Status)
		}
	}
	if vm, _ := c.World.ServerByName("db-2"); vm.Host == c2 || vm.Status != "ACTIVE" {
		t.Errorf("db-2: %s on %s; want moved", vm.Status, vm.Host)
	}
}
