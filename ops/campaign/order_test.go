package campaign_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// --order cost puts the ranking's cheapest nodes first: the empty c2, then c1 (one pod), and
// last c0, which the ranking does not call a candidate (its bare pod).
func TestRollOrderByCost(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	r, err := campaign.New(kubetest.Ctx(t), e, campaign.Options{Nodes: []string{c0, c1, c2}, Order: "cost", Run: ops.RunOptions{Policy: simtest.Defaults()}}, func(ops.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range r.Record().Nodes {
		got = append(got, strings.TrimPrefix(n.Name, c.Px+"-"))
	}
	if strings.Join(got, " ") != "c2 c1 c0" {
		t.Errorf("order by cost: %v, want c2 c1 c0", got)
	}
	if _, err := campaign.New(kubetest.Ctx(t), e, campaign.Options{Nodes: []string{c0}, Order: "random"}, func(ops.Event) {}); !errors.As(err, new(*ops.UsageError)) {
		t.Errorf("an unknown order: %v", err)
	}
}
