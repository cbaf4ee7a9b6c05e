package ops_test

import (
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// What a VM's move request costs, measured on the wire: from the first request to the
// second, every API call is one the named checks before a request read (prerequest.go), the
// request itself, or the wait for Nova to show it under way before the migration lock goes.
// An unnamed check that reads something new fails here; the figure is in the log.
func TestAVMRequestCostsItsNamedChecks(t *testing.T) {
	c := simtest.NewClusterWith(t, sim.Options{Scale: 100, Seed: 7, MaxConcurrentLiveMigrations: 2})
	c.Cfg.Concurrency.MigrationsPerSource = 2      // both requests before any poll: the window holds checks alone
	c.Cfg.Concurrency.MigrationsPerDestination = 1 // drainctl picks the destinations (a live move's: not read again)
	e := c.Engine("test@checks", nil)
	ctx := kubetest.Ctx(t)
	ro := ops.RunOptions{EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	plan, err := e.Plan(ctx, model.OpEvacuate, c.Name("c0"), ro)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx, plan, ro, func(ops.Event) {}); err != nil {
		t.Fatal(err)
	}
	calls := c.Muts.Log.Calls()
	request := regexp.MustCompile(`^nova POST .*/servers/[^/]+/action$`)
	var at []int
	for i, call := range calls {
		if request.MatchString(call) {
			at = append(at, i)
		}
	}
	if len(at) != 2 {
		t.Fatalf("%d move requests, want 2 (vm-a, vm-b):\n%s", len(at), strings.Join(calls, "\n"))
	}
	window := calls[at[0]+1 : at[1]+1]
	named := []*regexp.Regexp{
		regexp.MustCompile(`^nova GET .*/servers/[^/]+$`), // moved meanwhile
		regexp.MustCompile(
			`^kube GET /apis/coordination.k8s.io/v1/namespaces/[^/]+/leases$`,
		), // still the holder (every node's lease, one read)
		regexp.MustCompile(`^kube GET /apis/coordination.k8s.io/v1/namespaces/[^/]+/leases/[^/]+$`), // the migration lock
		regexp.MustCompile(
			`^kube (PUT|DELETE) /apis/coordination.k8s.io/v1/namespaces/[^/]+/leases/[^/]+$`,
		), // the migration lock, taken and given back
		regexp.MustCompile(`^kube POST /apis/coordination.k8s.io/v1/namespaces/[^/]+/leases$`), // the migration lock, created
		regexp.MustCompile(`^nova GET .*/os-migrations$`),                                      // cluster room
		regexp.MustCompile(
			`^nova GET .*/servers/[^/]+/migrations$`,
		), // the previous request shows under way
		request,
	}
	for _, call := range window {
		ok := false
		for _, re := range named {
			ok = ok || re.MatchString(call)
		}
		if !ok {
			t.Errorf("a VM request made a call no named check reads: %s", call)
		}
	}
	t.Logf("a VM's move request costs %d API calls:\n  %s", len(window), strings.Join(window, "\n  "))
}

// The per-source cap holds across runs: two one-VM migrates off one host at once (as two
// nodes' returns are, each its own run) take turns under migrations_per_source = 1. Counted
// from the events of both runs in the order they happen (a move counts from its request to
// the poll that sees it end: never less than Nova's own count).
func TestTheSourceCapHoldsAcrossRuns(t *testing.T) {
	c := simtest.NewClusterWith(t, sim.Options{Scale: 20, Seed: 7})
	c.Cfg.Concurrency.MigrationsPerSource = 1
	e := c.Engine("test@returns", nil)
	ctx := kubetest.Ctx(t)
	var mu sync.Mutex
	inFlight, most := 0, 0
	emit := func(ev ops.Event) {
		m, ok := ev.(ops.MigrationEvent)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch m.State {
		case ops.MigRequested:
			inFlight++
		case ops.MigCompleted, ops.MigFailed, ops.MigAborted:
			inFlight--
		}
		most = max(most, inFlight)
	}
	var wg sync.WaitGroup
	for _, vm := range []string{"vm-a", "vm-b"} {
		plan, err := e.Plan(ctx, model.OpMigrate, vm, ops.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Run(ctx, plan, ops.RunOptions{}, emit); err != nil {
				t.Errorf("%s: %v", vm, err)
			}
		}()
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d moves off %s at once under migrations_per_source = 1", most, c.Name("c0"))
	}
	for _, vm := range []string{"vm-a", "vm-b"} {
		if s, _ := c.World.ServerByName(vm); s.Host == c.Name("c0") {
			t.Errorf("%s did not move", vm)
		}
	}
}
