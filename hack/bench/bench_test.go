// Package bench is drainctl's benchmark runner: `make bench` prints a markdown table of
// figures measured in one run. Nothing here asserts a timing: it only measures and prints.
package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"net/http"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim"
	k8stesting "k8s.io/client-go/testing"
)

func TestMain(m *testing.M) {
	code := kubetest.Main(m)
	if len(rows) > 0 { // the table, once every benchmark has run
		fmt.Printf("\n| benchmark | figure | how |\n|---|---|---|\n%s\n", strings.Join(rows, "\n"))
	}
	os.Exit(code)
}

var rows []string

func row(what, value, note string) {
	rows = append(rows, fmt.Sprintf("| %s | %s | %s |", what, value, note))
}

func skipUnlessAsked(t *testing.T) {
	if os.Getenv("DRAINCTL_BENCH") == "" {
		t.Skip("set DRAINCTL_BENCH=1 (make bench) to measure")
	}
}

type demoCluster struct {
	demo *sim.Demo
	kube *kube.Client
	nova *nova.Client
	inv  *ops.Inventory
	ctr  *countingTransport
}

type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func startDemo(t *testing.T, o sim.DemoOptions) (*demoCluster, time.Duration) {
	t.Helper()
	d, err := sim.StartDemo(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	env := map[string]string{}
	for _, kv := range d.Nova.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	t.Logf("world generated")
	start := time.Now()
	ki := kube.NewInventory(d.Kube.Clientset)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); ki.Shutdown() })
	if err := ki.Start(ctx, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("informers synced after %v", time.Since(start))
	creds, _ := nova.ResolveCredentials(nil, model.OpenStackConfig{}, func(k string) string { return env[k] })
	ctr := &countingTransport{}
	nc, err := nova.Connect(ctx, creds, nova.Options{Transport: ctr})
	if err != nil {
		t.Fatal(err)
	}
	inv := ops.NewInventory(ki, nc, model.MappingConfig{Mode: model.MapByName})
	if _, err := inv.Read(ctx); err != nil {
		t.Fatal(err)
	}
	return &demoCluster{demo: d, kube: kube.NewClient(d.Kube.Clientset, ki), nova: nc, inv: inv, ctr: ctr}, time.Since(start)
}

func heapMB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// Inventory at 5,000 nodes / 150,000 pods / 50,000 VMs, and what a refresh costs.
func TestInventoryAtScale(t *testing.T) {
	skipUnlessAsked(t)
	base := heapMB()
	c, took := startDemo(t, sim.DemoOptions{Nodes: 5000, Seed: 1, PodsPerNode: 30, VMsPerNode: 10})
	snap := c.kube.Snapshot()
	pods := 0
	for _, run := range snap.Pods {
		pods += len(run)
	}
	inv, _ := c.inv.Read(context.Background())
	vms := 0
	for _, n := range inv.Nodes {
		vms += len(n.VMs)
	}
	// The simulator and the fake clientset's own store share this process: measure our
	// caches by what a second inventory adds.
	with := heapMB()
	ki := kube.NewInventory(c.demo.Kube.Clientset)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ki.Shutdown() }()
	ki.Start(ctx, 5*time.Minute)
	again := heapMB() - with
	row("Inventory: start to first full inventory, 5,000 nodes / "+fmt.Sprint(pods)+" pods / "+fmt.Sprint(vms)+" VMs",
		fmt.Sprintf("%.1f s", took.Seconds()), "informers synced + one Nova snapshot, simulator in-process")
	row("Inventory: Kubernetes cache per pod", fmt.Sprintf("%.2f KiB", again*1024/float64(pods)),
		fmt.Sprintf("heap a second informer set adds (%.0f MiB), transform strips managedFields, env, probes", again))
	_ = base
	// One refresh: Nova calls and the Kubernetes requests it makes (none: the cache).
	c.ctr.n.Store(0)
	before := len(c.demo.Kube.Clientset.Actions())
	start := time.Now()
	c.inv.Read(context.Background())
	row("Refresh at 5,000 hosts: Nova requests", fmt.Sprint(c.ctr.n.Load()), fmt.Sprintf("one refresh (%.2f s); Kubernetes requests: %d (watch-fed cache)",
		time.Since(start).Seconds(), countLists(c.demo.Kube.Clientset.Actions()[before:])))
	small, _ := startDemo(t, sim.DemoOptions{Nodes: 50, Seed: 1})
	small.ctr.n.Store(0)
	small.inv.Read(context.Background())
	row("Refresh at 50 hosts: Nova requests", fmt.Sprint(small.ctr.n.Load()), "same calls, fewer pages (1,000 items a page)")
}

func countLists(actions []k8stesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "list" {
			n++
		}
	}
	return n
}
