package campaign_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/text"
)

// A rate budget (#57.2, [roll] budget "1 per 2s") holds the campaign's next node until the
// last start leaves its window, beside --parallel 3: the three nodes start at least 2 s apart
// (their record's starts), and the campaign says which budget held a node and when it frees.
func TestARateBudgetSpacesTheNodesStarts(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	nodes := []string{c.Name("c0"), c.Name("c1"), c.Name("c2")}
	e := c.Engine("rate@test", nil)
	b, err := model.ParseRateBudget("1 per 2s")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var said []string
	r := runToDone(t, e, campaign.Options{Nodes: nodes, Order: "given", Parallel: 3, Run: vmsOnly(),
		Gates: campaign.GateOptions{Budgets: []model.RateBudget{b}}}, func(ev ops.Event) {
		if ce, ok := ev.(ops.CampaignEvent); ok {
			mu.Lock()
			said = append(said, ce.Message)
			mu.Unlock()
		}
	})
	if lines := text.ForecastLines(r.Forecast()); !slices.Contains(lines, `rate budget "1 per 2s": the campaign takes at least 4s`) {
		t.Errorf("the forecast says %q", lines)
	}
	rec := r.Record()
	for i := 1; i < len(rec.Nodes); i++ {
		if gap := rec.Nodes[i].Started.Sub(rec.Nodes[i-1].Started); gap < 2*time.Second {
			t.Errorf("%s started %s after %s; want at least 2s (one per 2s)", rec.Nodes[i].Name, gap, rec.Nodes[i-1].Name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, m := range said {
		found = found || (strings.Contains(m, `rate budget "1 per 2s" holds it: 1 of the campaign's nodes started within 2s; it frees at`))
	}
	if !found {
		t.Errorf("the campaign never said the budget held a node: %q", said)
	}
}

// A campaign held by a rate budget starts its next node when the budget frees, not at its next
// look at the gates (every five polls: 20 s here): under "1 per 4s", two at once, the second
// node starts about four seconds after the first. Held to the poll, a budget's pace lost a poll's half each node (a 1,000-node
// campaign under "5% per 30s" started 1.39 nodes a second where the budget let 1.67).
func TestARateBudgetsNodeStartsWhenTheBudgetFrees(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	nodes := []string{c.Name("c0"), c.Name("c1")}
	c.Cfg.Concurrency.Nodes = 2
	e := c.Engine("rate@frees", func(o *ops.EngineOptions) { o.Poll = 4 * time.Second })
	b, err := model.ParseRateBudget("1 per 4s")
	if err != nil {
		t.Fatal(err)
	}
	r := runToDone(t, e, campaign.Options{Nodes: nodes, Order: "given", Parallel: 2, Run: vmsOnly(),
		Gates: campaign.GateOptions{Budgets: []model.RateBudget{b}}}, func(ops.Event) {})
	rec := r.Record()
	for i := 1; i < len(rec.Nodes); i++ {
		if gap := rec.Nodes[i].Started.Sub(rec.Nodes[i-1].Started); gap < 4*time.Second || gap >= 12*time.Second {
			t.Errorf("%s started %s after %s; want when the budget freed (4s), not at the gates' next look (20s)",
				rec.Nodes[i].Name, gap, rec.Nodes[i-1].Name)
		}
	}
}
