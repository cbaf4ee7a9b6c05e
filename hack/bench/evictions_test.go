package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/policy"
)

// Evictions at fleet scale: 100 nodes × 40 pods (4,000) under 20 PodDisruptionBudgets
// (maxUnavailable 10 % each), every node emptied by one batch of evacuations (Kubernetes
// alone) with concurrency.nodes = 20, on the real kube-apiserver; the kubelet, the
// ReplicaSet controller (replacements Ready 1 s later, on a spare node) and the disruption
// controller played. Evictions a second, 429s, and the least healthy any budget ever was
// against what it desired. Run with client-go's limits as drainctl sets them, beside the
// commit before's (50/100).
func TestFleetEvictions(t *testing.T) {
	skipUnlessAsked(t)
	for _, limits := range []struct {
		qps   float32
		burst int
		what  string
	}{{50, 100, "the commit before's client limits (50/100)"}, {200, 400, "drainctl's (200/400)"}} {
		t.Run(fmt.Sprintf("%.0f-%d", limits.qps, limits.burst), func(t *testing.T) { fleetEvictions(t, limits.qps, limits.burst, limits.what) })
	}
}

func fleetEvictions(t *testing.T, qps float32, burst int, what string) {
	const nodes, podsPerNode, apps = 100, 40, 20
	cs := kubetest.Client(t)
	px := kubetest.Prefix(t) + fmt.Sprintf("-%d", int(qps))
	spare := px + "-spare"
	kubetest.Node(t, cs, spare)
	var names []string
	for i := range nodes {
		names = append(names, fmt.Sprintf("%s-n%03d", px, i))
		kubetest.Node(t, cs, names[i])
	}
	perApp := nodes * podsPerNode / apps // 200 pods an app, 2 on each node
	var nss []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for a := range apps {
		ns := kubetest.Namespace(t, cs, fmt.Sprintf("%s-a%02d", px, a))
		nss = append(nss, ns)
		rs, uid := kubetest.ReplicaSet(t, cs, ns, "app", int32(perApp))
		for i := range perApp {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				kubetest.Pod(t, cs, ns, fmt.Sprintf("app-%03d", i), names[i%nodes], kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels("app", "app"), kubetest.Grace(1))
			}()
		}
	}
	wg.Wait()
	// Registered before the played controllers start, so it runs once they have stopped:
	// the next run starts on an API server without this one's 8,000 pods and 101 nodes.
	t.Cleanup(func() {
		ctx := context.Background()
		grace := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
		for _, ns := range nss {
			_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, grace, metav1.ListOptions{})
		}
		for _, n := range append(names, spare) {
			_ = cs.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
		}
	})
	for _, ns := range nss {
		kubetest.PDB(t, cs, ns, "app-pdb", "app", perApp*9/10) // 10 % may be unavailable
		(&kubetest.Controllers{DeleteAfter: 200 * time.Millisecond, ReplaceOn: spare, ReadyAfter: time.Second}).Run(t, cs, ns)
	}
	for _, ns := range nss {
		kubetest.Eventually(t, 60*time.Second, "the budget's status", func() bool {
			p, _ := cs.PolicyV1().PodDisruptionBudgets(ns).Get(kubetest.Ctx(t), "app-pdb", metav1.GetOptions{})
			return p != nil && p.Status.ExpectedPods == int32(perApp) && p.Status.DisruptionsAllowed == int32(perApp/10)
		})
	}
	worst := watchBudgets(t, cs, nss)

	c := &counter{}
	cfg := kube.Tune(kubetest.Config(t), kube.Options{QPS: qps, Burst: burst, WrapTransport: func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c }})
	dcs, _ := kube.NewClientset(cfg)
	inv := kube.NewInventory(dcs)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); inv.Shutdown() }()
	if err := inv.Start(ctx, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	conf := model.DefaultConfig()
	conf.Concurrency.Nodes = 20
	eng := ops.NewEngine(kube.NewClient(dcs, inv), nil, conf, ops.EngineOptions{Holder: "bench"})
	ro := ops.RunOptions{Policy: policy.Options{IgnoreDaemonSets: true, AllowLastNode: true}}
	b, err := eng.PlanBatch(ctx, model.OpEvacuate, names, ro)
	if err != nil {
		t.Fatal(err)
	}
	var evicted atomic.Int64
	c.reset()
	start := time.Now()
	reports, err := eng.RunBatch(ctx, b, func(model.Plan) func(ops.Event) {
		return func(ev ops.Event) {
			if p, ok := ev.(ops.PodEvent); ok && p.State == ops.PodEvicted {
				evicted.Add(1)
			}
		}
	})
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if r.Result != ops.ResultDone {
			t.Fatalf("%s: %s %s", r.Node, r.Result, r.Error)
		}
	}
	low, desired := worst()
	row(fmt.Sprintf("Fleet evictions: 100 nodes × 40 pods under 20 PDBs, 20 nodes at once, %s", what),
		fmt.Sprintf("%.0f evictions/s (%d in %.1f s); 429s %d; requests %d", float64(evicted.Load())/wall.Seconds(), evicted.Load(), wall.Seconds(), c.tooMany.Load(), c.n.Load()),
		fmt.Sprintf("real kube-apiserver; the least healthy a budget was: %d, desired %d (never below: no budget broken); drainctl's requests: %s", low, desired, c.top()))
	if low < desired {
		t.Errorf("a budget was broken: %d healthy, %d desired", low, desired)
	}
}

// watchBudgets follows every status the budgets are given (an informer, as the disruption
// controller's own readers would); the func returns the least healthy any was and what it
// desired.
func watchBudgets(t *testing.T, cs kubernetes.Interface, nss []string) func() (low, desired int32) {
	var mu sync.Mutex
	low, desired := int32(1<<30), int32(0)
	seen := func(obj any) {
		p, ok := obj.(*policyv1.PodDisruptionBudget)
		if !ok || !slices.Contains(nss, p.Namespace) || p.Status.ObservedGeneration == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if p.Status.CurrentHealthy < low {
			low, desired = p.Status.CurrentHealthy, p.Status.DesiredHealthy
		}
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	_, _ = f.Policy().V1().PodDisruptionBudgets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }})
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); f.Shutdown() })
	f.Start(stop)
	f.WaitForCacheSync(stop)
	return func() (int32, int32) {
		mu.Lock()
		defer mu.Unlock()
		return low, desired
	}
}
