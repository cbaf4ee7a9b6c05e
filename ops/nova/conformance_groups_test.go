package nova_test

import (
	"context"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// A VM group's budget is its owners' metadata (drainctl:group, drainctl:max-disrupted), as
// drainctl reads the servers on both Novas: two servers naming group db, one of them its
// budget, make one group of two, one at a time.
func TestConformanceAGroupsBudgetIsItsOwnersMetadata(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		a, b := c.Boot("db-0", "compute-0"), c.Boot("db-1", "compute-1")
		c.API.Must("POST", "compute", "/servers/"+a+"/metadata",
			map[string]any{"metadata": map[string]string{model.GroupKey: "db", model.MaxDisruptedKey: "1"}}, nil, 200)
		c.API.Must("POST", "compute", "/servers/"+b+"/metadata", map[string]any{"metadata": map[string]string{model.GroupKey: "db"}}, nil, 200)
		va, vb := serverOf(t, ctx, cl, a), serverOf(t, ctx, cl, b)
		if va.GroupAsked != "db" || va.MaxDisruptedAsked != "1" || vb.GroupAsked != "db" || vb.MaxDisruptedAsked != "" {
			t.Fatalf("drainctl reads %q/%q and %q/%q; want db/1 and db/none", va.GroupAsked, va.MaxDisruptedAsked, vb.GroupAsked,
				vb.MaxDisruptedAsked)
		}
		snap, err := cl.Snapshot(ctx)
		must(t, err)
		var g *model.GroupBudget
		for name, b := range model.GroupBudgets(snap.VMs, snap.ServerGroups, model.GroupRules{}) {
			if strings.HasPrefix(name, "group db") { // "group db (project …)": the project's
				g = b
			}
		}
		if g == nil || g.Max != 1 || len(g.Members) != 2 || !g.Members[a] || !g.Members[b] {
			t.Errorf("group db from the cloud's read: %+v; want both, one at a time", g)
		}
	})
}
