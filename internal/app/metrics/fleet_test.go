package metrics

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// The fleet's gauges are the engine's last read of the cluster at each scrape: the nodes
// cordoned, those whose journal names an operation not done (by its kind), and each zone's
// room for the next failure against what [capacity] asks. The dashboard's nodes out and
// failover room read these.
func TestTheFleetIsReadAtEachScrape(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.Cfg.Capacity.Tolerate = 1
	e := c.Engine("metrics@test", nil)
	if _, err := e.Inventory().Read(kubetest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	m := New()
	m.WatchFleet(e)
	gauge := func(body, name string) string {
		v := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
		if v == nil {
			return "none"
		}
		return v[1]
	}
	body := scrape(t, m)
	if got := gauge(body, "drainctl_nodes_unschedulable"); got != "0" {
		t.Errorf("drainctl_nodes_unschedulable %s before any cordon; want 0\n%s", got, body)
	}
	if !regexp.MustCompile(`drainctl_failover_hosts_asked\{zone="[^"]+"\} 1`).MatchString(body) ||
		!regexp.MustCompile(`drainctl_failover_hosts_tolerated\{zone="[^"]+"\} 1`).MatchString(body) {
		t.Errorf("no failover room of one host asked and held in\n%s", body)
	}
	c.SetUnschedulable(c.Name("c1"), true)
	c.SetAnnotation(c.Name("c2"), ops.JournalAnnotation,
		`{"op":"evacuate","phase":"migrate-vms","holder":"alice","started":"2026-12-07T10:00:00Z"}`)
	kubetest.Eventually(t, 10*time.Second, "the cordon and the journal in the gauges", func() bool {
		body = scrape(t, m)
		return gauge(body, "drainctl_nodes_unschedulable") == "1" &&
			gauge(body, `drainctl_nodes_in_operation{op="evacuate"}`) == "1"
	})
	if strings.Contains(body, `op="uncordon"`) {
		t.Errorf("an operation no journal names:\n%s", body)
	}
}
