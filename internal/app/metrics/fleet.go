package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drainctl/drainctl/ops"
)

// The fleet's state, read at each scrape from the engine's last read of the cluster (its
// caches: no request to Kubernetes or Nova): the nodes out of service, those under a
// drainctl operation, and each zone's room for the next host failure ([capacity]).

var (
	nodesOutDesc = prometheus.NewDesc("drainctl_nodes_unschedulable",
		"Nodes out of service (cordoned, by anyone), as the last read of the cluster shows them.", nil, nil)
	inOperationDesc = prometheus.NewDesc("drainctl_nodes_in_operation",
		"Nodes whose journal names a drainctl operation not done (running, interrupted, failed), by its kind.",
		[]string{"op"}, nil)
	roomAskedDesc = prometheus.NewDesc("drainctl_failover_hosts_asked",
		"[capacity]: the deaths of its largest hosts each zone's room must hold.", []string{"zone"}, nil)
	roomHeldDesc = prometheus.NewDesc("drainctl_failover_hosts_tolerated",
		"The deaths of its largest hosts each zone's room holds now (up to what is asked).", []string{"zone"}, nil)
)

// fleet collects the fleet's state from an engine.
type fleet struct{ e *ops.Engine }

// WatchFleet exports the fleet's state from the engine's caches at each scrape.
func (m *Metrics) WatchFleet(e *ops.Engine) { m.reg.MustRegister(fleet{e}) }

func (fleet) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodesOutDesc, inOperationDesc, roomAskedDesc, roomHeldDesc} {
		ch <- d
	}
}

func (f fleet) Collect(ch chan<- prometheus.Metric) {
	inv, _ := f.e.Inventory().Cached()
	out, inOp := 0, map[string]int{}
	for _, n := range inv.Nodes {
		if n.Kube == nil {
			continue
		}
		if !n.Kube.Schedulable {
			out++
		}
		if j, ok := ops.ReadJournal(*n.Kube); ok && j.Phase != ops.PhaseDone {
			inOp[string(j.Op)]++
		}
	}
	ch <- prometheus.MustNewConstMetric(nodesOutDesc, prometheus.GaugeValue, float64(out))
	for op, n := range inOp {
		ch <- prometheus.MustNewConstMetric(inOperationDesc, prometheus.GaugeValue, float64(n), op)
	}
	for _, z := range f.e.FailoverRoom(inv) {
		ch <- prometheus.MustNewConstMetric(roomAskedDesc, prometheus.GaugeValue, float64(z.Tolerate), z.Zone)
		ch <- prometheus.MustNewConstMetric(roomHeldDesc, prometheus.GaugeValue, float64(z.Tolerated), z.Zone)
	}
}
