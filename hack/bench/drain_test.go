package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/drainctl/drainctl/hack/reqkind"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/policy"
)

// scenario builds one node's worth of pods in its own namespace, with the controllers a
// drain depends on played identically for both tools.
type scenario struct {
	name    string
	pods    int
	pdb     bool          // one app under a PDB with maxUnavailable 1
	ready   time.Duration // a replacement is Ready this long after an eviction
	deleteD time.Duration // the kubelet finishes a deletion this long after it is asked
}

func setup(t *testing.T, cs kubernetes.Interface, sc scenario, tool string) (node string) {
	px := kubetest.Prefix(t) + "-" + tool
	ns := kubetest.Namespace(t, cs, px)
	node, spare := px+"-n", px+"-spare"
	kubetest.Node(t, cs, node)
	kubetest.Node(t, cs, spare)
	rs, uid := kubetest.ReplicaSet(t, cs, ns, "app", int32(sc.pods))
	for i := 0; i < sc.pods; i++ {
		kubetest.Pod(t, cs, ns, fmt.Sprintf("app-%03d", i), node, kubetest.Owned("ReplicaSet", rs, uid), kubetest.Labels("app", "app"), kubetest.Grace(1))
	}
	if sc.pdb {
		kubetest.PDB(t, cs, ns, "app-pdb", "app", sc.pods-1) // minAvailable n-1: one at a time
	}
	ctrl := &kubetest.Controllers{DeleteAfter: sc.deleteD}
	if sc.ready > 0 {
		ctrl.ReplaceOn, ctrl.ReadyAfter = spare, sc.ready
	}
	ctrl.Run(t, cs, ns)
	if sc.pdb {
		kubetest.Eventually(t, 10*time.Second, "the PDB status", func() bool {
			p, _ := cs.PolicyV1().PodDisruptionBudgets(ns).Get(kubetest.Ctx(t), "app-pdb", metav1.GetOptions{})
			return p != nil && p.Status.ExpectedPods == int32(sc.pods) && p.Status.DisruptionsAllowed == 1
		})
	}
	return node
}

type counter struct {
	n, tooMany atomic.Int64
	next       http.RoundTripper
	mu         sync.Mutex
	kinds      map[string]int // "POST pods/eviction": how many
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.mu.Lock()
	if c.kinds == nil {
		c.kinds = map[string]int{}
	}
	c.kinds[r.Method+" "+reqkind.Of(r)]++
	c.mu.Unlock()
	resp, err := c.next.RoundTrip(r)
	if err == nil && resp.StatusCode == 429 {
		c.tooMany.Add(1)
	}
	return resp, err
}

// reset starts counting afresh.
func (c *counter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n.Store(0)
	c.tooMany.Store(0)
	c.kinds = nil
}

// top says the counted kinds, most first.
func (c *counter) top() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ks []string
	for k := range c.kinds {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return c.kinds[ks[i]] > c.kinds[ks[j]] })
	var out []string
	for _, k := range ks {
		out = append(out, fmt.Sprintf("%s %d", k, c.kinds[k]))
	}
	return strings.Join(out, ", ")
}

// TestDrainVersusKubectl drains the same kind of node with drainctl's engine (Kubernetes
// alone) and with the real kubectl of the API server's version, and reports wall time,
// requests and 429s of each.
func TestDrainVersusKubectl(t *testing.T) {
	skipUnlessAsked(t)
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Skip("no kubectl beside kube-apiserver: run WITH_KUBECTL=1 hack/envtest-assets.sh (make bench does)")
	}
	cs := kubetest.Client(t)
	kubeconfig := kubetest.Kubeconfig(t)
	for _, sc := range []scenario{
		{name: "110 ReplicaSet pods, no PDB", pods: 110, deleteD: time.Second},
		{name: "10 pods under a PDB (maxUnavailable 1), replacement Ready 2 s after each eviction", pods: 10, pdb: true, ready: 2 * time.Second, deleteD: time.Second},
	} {
		t.Run(sc.name, func(t *testing.T) {
			// drainctl
			node := setup(t, cs, sc, "d")
			c := &counter{}
			cfg := kube.Tune(kubetest.Config(t), kube.Options{QPS: 50, Burst: 100, WrapTransport: func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c }})
			dcs, _ := kube.NewClientset(cfg)
			inv := kube.NewInventory(dcs)
			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); inv.Shutdown() }()
			inv.Start(ctx, time.Minute)
			eng := ops.NewEngine(kube.NewClient(dcs, inv), nil, model.DefaultConfig(), ops.EngineOptions{Holder: "bench"})
			ro := ops.RunOptions{Policy: policy.Options{IgnoreDaemonSets: true, DeleteEmptyDirData: true, Force: true}}
			c.n.Store(0)
			start := time.Now()
			plan, err := eng.Plan(ctx, model.OpEvacuate, node, ro)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Run(ctx, plan, ro, func(ops.Event) {}); err != nil {
				t.Fatal(err)
			}
			dWall, dReqs, d429 := time.Since(start), c.n.Load(), c.tooMany.Load()

			// kubectl drain, as an operator runs it.
			node = setup(t, cs, sc, "k")
			var stderr bytes.Buffer
			cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "-v=6")
			cmd.Stderr, cmd.Stdout = &stderr, &bytes.Buffer{}
			start = time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("kubectl drain: %v\n%s", err, tail(stderr.String()))
			}
			kWall := time.Since(start)
			kReqs, k429 := 0, 0
			for _, l := range strings.Split(stderr.String(), "\n") {
				if strings.Contains(l, `"Response"`) {
					kReqs++
					if strings.Contains(l, `status="429`) {
						k429++
					}
				}
			}
			row("Drain "+sc.name+": drainctl vs kubectl drain",
				fmt.Sprintf("%.1f s vs %.1f s (%.2f×)", dWall.Seconds(), kWall.Seconds(), kWall.Seconds()/dWall.Seconds()),
				fmt.Sprintf("requests %d vs %d; 429s %d vs %d; real kube-apiserver, same kubelet/controllers played for both", dReqs, kReqs, d429, k429))
		})
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
