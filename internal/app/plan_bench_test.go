package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/policy"
)

// demoCluster connects to the embedded demo of the given size, with the default config; it
// stops with the benchmark.
func demoCluster(b *testing.B, nodes int) (context.Context, *Cluster) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	cl, err := Connect(ctx, ConnectOptions{Demo: true, Sim: SimFlags{Nodes: nodes, Seed: 1, Scale: 1}}, model.DefaultConfig(), nil, io.Discard, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	return ctx, cl
}

// BenchmarkPlanToggle is what one override toggle in the TUI's plan costs: a plan of one
// node from a fresh read of the simulated cluster (Kubernetes from the informers, Nova over
// HTTP), at 12, 500 and 5,000 nodes (#53.11: under 1 s at 5,000).
func BenchmarkPlanToggle(b *testing.B) {
	for _, nodes := range []int{12, 500, 5000} {
		b.Run(fmt.Sprintf("%d-nodes", nodes), func(b *testing.B) {
			ctx, cl := demoCluster(b, nodes)
			pol, _ := policy.FromConfig(model.DefaultConfig())
			node := ""
			for _, n := range cl.Engine.KubeNodeNames() {
				if node == "" && strings.HasPrefix(n, "compute-") {
					node = n
				}
			}
			if _, err := cl.Engine.Inventory().Read(ctx); err != nil { // the view's last whole read
				b.Fatal(err)
			}
			// fresh-read: the whole cloud read again (a proposal before #53.11); by-host: the
			// node's host afresh on the view's last whole read (a proposal now); from-cache:
			// a toggle.
			for _, read := range []string{"fresh-read", "by-host", "from-cache"} {
				b.Run(read, func(b *testing.B) {
					ro := ops.RunOptions{Policy: pol, FromCache: read == "from-cache", ByHost: read == "by-host"}
					for i := 0; i < b.N; i++ {
						ro.Policy.Force = !ro.Policy.Force
						if _, err := cl.Engine.PlanBatch(ctx, model.OpEvacuate, []string{node}, ro); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkFleetCheck is what a campaign's fleet gate reads each time it looks (four times a
// second while it waits), on the 5,000-node demo: the cache's nodes and budgets alone, beside
// the whole snapshot (every pod copied) it read before.
func BenchmarkFleetCheck(b *testing.B) {
	_, cl := demoCluster(b, 5000)
	b.Run("nodes-and-pdbs", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_, _ = cl.Kube.Nodes(), cl.Kube.PDBs()
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = cl.Kube.Snapshot()
		}
	})
}

// BenchmarkRejoin is what a view's re-join costs when a Kubernetes change arrives (one pod
// of one node changed, or nothing), on the 5,000-node demo: the snapshot of every node's pods
// and the join with the last Nova read, the ranking aside.
func BenchmarkRejoin(b *testing.B) {
	ctx, cl := demoCluster(b, 5000)
	inv := cl.Engine.Inventory()
	first, err := inv.Read(ctx)
	if err != nil {
		b.Fatal(err)
	}
	pods := 0
	for _, n := range first.Nodes {
		pods += len(n.Pods)
	}
	b.ReportMetric(float64(pods), "pods")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := inv.Rejoin(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCampaignProposal is what the TUI's C costs before it shows the proposal (the
// record, the forecast, the node's own plan), for one node of the 5,000-node demo, with
// the view's whole read of Nova made (#53.11: under 1 s).
func BenchmarkCampaignProposal(b *testing.B) {
	ctx, cl := demoCluster(b, 5000)
	pol, _ := policy.FromConfig(model.DefaultConfig())
	if _, err := cl.Engine.Inventory().Read(ctx); err != nil {
		b.Fatal(err)
	}
	node := ""
	for _, n := range cl.Engine.KubeNodeNames() {
		if node == "" && strings.HasPrefix(n, "compute-") {
			node = n
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := campaign.New(ctx, cl.Engine, campaign.Options{Nodes: []string{node}, Run: ops.RunOptions{Policy: pol}}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCampaignStart is what a campaign costs before its first node (NewCampaign: the record,
// the forecast and each node's own plan), for 100 nodes of the 1,000-node demo.
func BenchmarkCampaignStart(b *testing.B) {
	ctx, cl := demoCluster(b, 1000)
	pol, _ := policy.FromConfig(model.DefaultConfig())
	var nodes []string
	for _, n := range cl.Engine.KubeNodeNames() {
		if strings.HasPrefix(n, "compute-") && len(nodes) < 100 {
			nodes = append(nodes, n)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := campaign.New(ctx, cl.Engine, campaign.Options{Nodes: nodes, OnFailure: "skip", Run: ops.RunOptions{Policy: pol}}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
