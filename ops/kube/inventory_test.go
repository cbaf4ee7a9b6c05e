package kube_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// requestLog records the requests a client sends.
type requestLog struct {
	mu   sync.Mutex
	reqs []*http.Request
	next http.RoundTripper
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
	return l.next.RoundTrip(r)
}

// lists counts GETs that are not watches: LISTs (and single GETs, which the inventory never makes).
func (l *requestLog) lists() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.reqs {
		if r.Method == "GET" && r.URL.Query().Get("watch") != "true" {
			n++
		}
	}
	return n
}

func (l *requestLog) reset() { l.mu.Lock(); l.reqs = nil; l.mu.Unlock() }

func startInventory(t *testing.T) (*kube.Inventory, *requestLog) {
	t.Helper()
	log := &requestLog{}
	cfg := kube.Tune(kubetest.Config(t), kube.Options{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		log.next = rt
		return log
	}})
	inv := kubetest.KubeClient(t, cfg).Inventory
	return inv, log
}

func nodeByName(s model.KubeSnapshot, name string) (model.KubeNode, bool) {
	for _, n := range s.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return model.KubeNode{}, false
}

func podsOf(s model.KubeSnapshot, node string) map[string]model.Pod {
	out := map[string]model.Pod{}
	for _, run := range s.Pods {
		for _, p := range run {
			if p.NodeName == node {
				out[p.Name] = p
			}
		}
	}
	return out
}

func TestInventoryAgainstAPIServer(t *testing.T) {
	cs := kubetest.Client(t)
	px := kubetest.Prefix(t)
	ns := kubetest.Namespace(t, cs, px)
	cp := px + "-cp"
	w1, w2 := px+"-w1", px+"-w2"
	kubetest.Node(t, cs, cp, kubetest.Role("control-plane"))
	kubetest.Node(t, cs, w1, kubetest.Role("worker"))
	kubetest.Node(t, cs, w2, kubetest.Cordoned())
	rs, rsUID := kubetest.ReplicaSet(t, cs, ns, "web", 2)
	kubetest.Pod(t, cs, ns, "web-1", w1, kubetest.Owned("ReplicaSet", rs, rsUID), kubetest.Labels("app", "web"), kubetest.Requests("500m", "1Gi"))
	kubetest.Pod(t, cs, ns, "web-2", w2, kubetest.Owned("ReplicaSet", rs, rsUID), kubetest.Labels("app", "web"), kubetest.Requests("500m", "1Gi"))
	kubetest.Pod(t, cs, ns, "bare", w1, kubetest.EmptyDir("scratch"))
	kubetest.PDB(t, cs, ns, "web-pdb", "web", 2)
	kubetest.SetPDBStatus(t, cs, ns, "web-pdb", 0, 2, 2, 2)

	inv, log := startInventory(t)
	snap := inv.Snapshot()

	n, ok := nodeByName(snap, cp)
	if !ok || !n.IsControlPlane() || !n.Ready || !n.Schedulable || n.Allocatable.MilliCPU != 16000 {
		t.Errorf("control plane %+v", n)
	}
	if n, _ := nodeByName(snap, w2); n.Schedulable {
		t.Errorf("%s is cordoned", w2)
	}
	pods := podsOf(snap, w1)
	if len(pods) != 2 {
		t.Fatalf("pods on %s: %v", w1, pods)
	}
	web := pods["web-1"]
	if web.OwnerKind != "Deployment" || web.OwnerName != "web" || len(web.PDBs) != 1 || web.PDBs[0] != "web-pdb" ||
		!web.Ready || web.Phase != "Running" || web.Requests.MilliCPU != 500 || web.Requests.MemoryBytes != 1<<30 {
		t.Errorf("web-1 %+v", web)
	}
	if bare := pods["bare"]; bare.OwnerKind != "" || bare.LocalVolume != "scratch" || len(bare.PDBs) != 0 {
		t.Errorf("bare %+v", bare)
	}
	var pdb model.PDB
	for _, p := range snap.PDBs {
		if p.Namespace == ns {
			pdb = p
		}
	}
	if pdb.Name != "web-pdb" || pdb.DisruptionsAllowed != 0 || pdb.ExpectedPods != 2 {
		t.Errorf("pdb %+v", pdb)
	}

	// Updates arrive by watch, with no LIST after the initial sync.
	log.reset()
	changed, cancel := inv.Subscribe()
	defer cancel()
	kubetest.Pod(t, cs, ns, "late", w2)
	cordon(t, cs, w1)
	waitChange(t, inv, changed, func(s model.KubeSnapshot) bool {
		n, _ := nodeByName(s, w1)
		_, late := podsOf(s, w2)["late"]
		return late && !n.Schedulable
	})
	if err := cs.CoreV1().Pods(ns).Delete(kubetest.Ctx(t), "bare", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitChange(t, inv, changed, func(s model.KubeSnapshot) bool { _, still := podsOf(s, w1)["bare"]; return !still })
	if n := log.lists(); n != 0 {
		t.Errorf("%d LIST/GET requests after the initial sync; updates must come from watches", n)
	}
}

func cordon(t *testing.T, cs kubernetes.Interface, node string) {
	t.Helper()
	_, err := cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), node, types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// waitChange waits on the inventory's change notifications until cond holds.
func waitChange(t *testing.T, inv *kube.Inventory, changed <-chan struct{}, cond func(model.KubeSnapshot) bool) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for !cond(inv.Snapshot()) {
		select {
		case <-changed:
		case <-timeout:
			t.Fatal("the inventory never saw the change")
		}
	}
}

// TakeChanged names the nodes a change touched, as the watch delivers them: a pod names its
// node, a Node names itself, a PDB's status names none, a PDB's selector may touch any node.
func TestTakeChanged(t *testing.T) {
	cs := kubetest.Client(t)
	px := kubetest.Prefix(t)
	ns := kubetest.Namespace(t, cs, px)
	a, b := px+"-a", px+"-b"
	kubetest.Node(t, cs, a)
	kubetest.Node(t, cs, b)
	kubetest.PDB(t, cs, ns, "web-pdb", "web", 1)
	inv, _ := startInventory(t)
	if _, all := inv.TakeChanged(); !all {
		t.Error("the first call must say: anything may have changed")
	}
	time.Sleep(500 * time.Millisecond) // the informers' initial adds are handled after the sync returns
	inv.TakeChanged()
	// Changes since the first call, taken until they show up (the watch is asynchronous).
	take := func(what string, want func(map[string]bool, bool) bool) {
		t.Helper()
		got, gotAll := map[string]bool{}, false
		kubetest.Eventually(t, 10*time.Second, what, func() bool {
			nodes, all := inv.TakeChanged()
			for n := range nodes {
				if strings.HasPrefix(n, px) {
					got[n] = true
				}
			}
			gotAll = gotAll || all
			return want(got, gotAll)
		})
	}
	kubetest.Pod(t, cs, ns, "p", a)
	take("pod p on a", func(got map[string]bool, all bool) bool { return got[a] && !got[b] && !all })
	cordon(t, cs, b)
	// (a may show again: the pod's status update can arrive after its creation was taken)
	take("b cordoned", func(got map[string]bool, all bool) bool { return got[b] && !all })
	time.Sleep(300 * time.Millisecond) // let any trailing event of the steps above arrive
	inv.TakeChanged()
	kubetest.SetPDBStatus(t, cs, ns, "web-pdb", 0, 1, 1, 1)
	time.Sleep(300 * time.Millisecond) // let the status update arrive
	if nodes, all := inv.TakeChanged(); all || nodes[a] || nodes[b] {
		t.Errorf("a PDB's status touched nodes: %v, all %v", nodes, all)
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(kubetest.Ctx(t), "web-pdb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.Selector.MatchLabels = map[string]string{"app": "api"}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Update(kubetest.Ctx(t), pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	take("all, after the PDB selects other pods", func(_ map[string]bool, all bool) bool { return all })
}

// gatedPods holds every request for pods until open is closed: the pods' first read takes
// as long as the test wants, as 150,000 pods take 10–20 s.
type gatedPods struct {
	open chan struct{}
	next http.RoundTripper
}

func (g *gatedPods) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/pods") {
		select {
		case <-g.open:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return g.next.RoundTrip(r)
}

// gatedInventory is an inventory whose pod requests wait for the gate (not started).
func gatedInventory(t *testing.T) (*gatedPods, kubernetes.Interface, *kube.Inventory, context.Context) {
	gate := &gatedPods{open: make(chan struct{})}
	cfg := kube.Tune(kubetest.Config(t), kube.Options{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		gate.next = rt
		return gate
	}})
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inv := kube.NewInventory(kc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); inv.Shutdown() })
	return gate, kc, inv, ctx
}

// The TUI starts on the nodes alone; the pods arrive after, and nothing reads the
// inventory for a judgement (Read, Rejoin) before they have.
func TestNodesFirstThenPods(t *testing.T) {
	cs := kubetest.Client(t)
	px := kubetest.Prefix(t)
	ns := kubetest.Namespace(t, cs, px)
	w1 := px + "-w1"
	kubetest.Node(t, cs, w1)
	kubetest.Pod(t, cs, ns, "p1", w1)

	gate, kc, inv, ctx := gatedInventory(t)
	if err := inv.StartNodes(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := nodeByName(inv.Snapshot(), w1); !ok {
		t.Fatalf("%s not read by StartNodes", w1)
	}
	if !inv.Syncing() {
		t.Fatal("Syncing() = false while the pods are held back")
	}
	waited := make(chan error, 1)
	go func() { waited <- inv.WaitSynced(ctx) }()
	select {
	case err := <-waited:
		t.Fatalf("WaitSynced returned (%v) before the pods were read", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(gate.open)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if inv.Syncing() {
		t.Fatal("still syncing after WaitSynced")
	}
	if _, ok := podsOf(inv.Snapshot(), w1)["p1"]; !ok {
		t.Fatal("p1 not in the cache after WaitSynced")
	}
	if uid, ok := kube.NewClient(kc, inv).PodUID(w1, ns, "p1"); !ok || uid == "" {
		t.Fatalf("PodUID(p1) = %q, %v", uid, ok)
	}
}

// WaitSynced gives up at the deadline StartNodes set, saying what it was reading.
func TestWaitSyncedGivesUp(t *testing.T) {
	_, _, inv, ctx := gatedInventory(t)
	if err := inv.StartNodes(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	err := inv.WaitSynced(ctx)
	if err == nil || !strings.Contains(err.Error(), "pods") {
		t.Fatalf("WaitSynced = %v, want an error naming the pods", err)
	}
}

// Losing the leadership while running (the lease taken over) ends RunAsLeader with an error:
// the process exits non-zero and restarts, instead of idling as a follower that still thinks
// it leads.
func TestLosingTheLeadershipIsAnError(t *testing.T) {
	cs := kubetest.Client(t)
	kubetest.Namespace(t, cs, kube.LeaseNamespace)
	name := kubetest.Prefix(t) + "-leader"
	leading, errc := make(chan struct{}), make(chan error, 1)
	go func() {
		errc <- kube.NewClient(cs, nil).RunAsLeader(context.Background(), name, "me", nil, func(ctx context.Context) error {
			close(leading)
			<-ctx.Done()
			return nil
		})
	}()
	select {
	case <-leading:
	case <-time.After(30 * time.Second):
		t.Fatal("never became the leader")
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the leader renews meanwhile
		l, err := cs.CoordinationV1().Leases(kube.LeaseNamespace).Get(kubetest.Ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		other, now := "another-instance", metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.RenewTime = &other, &now
		_, err = cs.CoordinationV1().Leases(kube.LeaseNamespace).Update(kubetest.Ctx(t), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "lost the leadership") {
			t.Errorf("want the lost leadership as an error, got %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("still running after losing the leadership")
	}
}

// A replica that may not write the leader lease (no RBAC, no namespace) says why, once,
// instead of waiting in silence for a leadership it can never get.
func TestALeaseThatCannotBeWrittenIsSaid(t *testing.T) {
	cs := kubetest.Client(t)
	kubetest.Namespace(t, cs, kube.LeaseNamespace)
	cfg := kubetest.Config(t)
	cfg.Impersonate.UserName = "nobody@test" // no Role: every write is forbidden
	nobody := kubernetes.NewForConfigOrDie(cfg)
	said := make(chan string, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	err := kube.NewClient(nobody, nil).RunAsLeader(ctx, kubetest.Prefix(t)+"-leader", "me", func(l string) { said <- l }, func(context.Context) error {
		t.Error("led without a lease")
		return nil
	})
	if err == nil {
		t.Errorf("RunAsLeader returned nil, never having led")
	}
	close(said)
	var lines []string
	for l := range said {
		lines = append(lines, l)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "cannot hold the leader lease "+kube.LeaseNamespace+"/") || !strings.Contains(lines[0], "forbidden") {
		t.Errorf("said %q: want once, why", lines)
	}
}

func runOf(s model.KubeSnapshot, node string) []model.Pod {
	for _, run := range s.Pods {
		if len(run) > 0 && run[0].NodeName == node {
			return run
		}
	}
	return nil
}

// A snapshot shares the runs of pods of the nodes that did not change with the one before
// (a re-join copies no pod of theirs), and reads again the runs a change touched: a pod of
// the node, a new PDB's selector (it completes pods differently).
func TestSnapshotsShareUnchangedRuns(t *testing.T) {
	cs := kubetest.Client(t)
	px := kubetest.Prefix(t)
	ns := kubetest.Namespace(t, cs, px)
	w1, w2 := px+"-w1", px+"-w2"
	kubetest.Node(t, cs, w1)
	kubetest.Node(t, cs, w2)
	kubetest.Pod(t, cs, ns, "a", w1, kubetest.Labels("app", "a"))
	kubetest.Pod(t, cs, ns, "b", w2, kubetest.Labels("app", "b"))
	inv, _ := startInventory(t)
	changed, cancel := inv.Subscribe()
	defer cancel()
	s1 := inv.Snapshot()
	if len(runOf(s1, w1)) != 1 || len(runOf(s1, w2)) != 1 {
		t.Fatalf("runs %v", s1.Pods)
	}

	kubetest.Pod(t, cs, ns, "c", w1)
	waitChange(t, inv, changed, func(s model.KubeSnapshot) bool { _, ok := podsOf(s, w1)["c"]; return ok })
	s2 := inv.Snapshot()
	if &runOf(s2, w2)[0] != &runOf(s1, w2)[0] {
		t.Errorf("%s's pods did not change, yet its run was copied", w2)
	}
	if got := runOf(s2, w1); len(got) != 2 || got[0].Name != "a" || got[1].Name != "c" {
		t.Errorf("%s's run after a pod came: %v", w1, got)
	}

	kubetest.PDB(t, cs, ns, "b-pdb", "b", 1)
	waitChange(t, inv, changed, func(s model.KubeSnapshot) bool { return len(podsOf(s, w2)["b"].PDBs) == 1 })
	if pods := podsOf(inv.Snapshot(), w1); len(pods["a"].PDBs) != 0 {
		t.Errorf("a is selected by no PDB: %+v", pods["a"])
	}

	// A pod read before its ReplicaSet names the Deployment once the ReplicaSet comes, and
	// again after its node's pods changed meanwhile.
	kubetest.Pod(t, cs, ns, "d", w1, kubetest.Owned("ReplicaSet", "web-5d8f9", "4a1b0c52-0000-4000-8000-000000000001"))
	waitChange(t, inv, changed, func(s model.KubeSnapshot) bool { return podsOf(s, w1)["d"].OwnerName == "web-5d8f9" })
	kubetest.ReplicaSet(t, cs, ns, "web", 1)
	waitChange(t, inv, changed, func(s model.KubeSnapshot) bool { return podsOf(s, w1)["d"].OwnerKind == "Deployment" })
	if err := cs.CoreV1().Pods(ns).Delete(kubetest.Ctx(t), "c", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitChange(t, inv, changed, func(s model.KubeSnapshot) bool { _, still := podsOf(s, w1)["c"]; return !still })
	if d := podsOf(inv.Snapshot(), w1)["d"]; d.OwnerKind != "Deployment" || d.OwnerName != "web" {
		t.Errorf("d after c went: owner %s/%s, want Deployment/web", d.OwnerKind, d.OwnerName)
	}
	if uid, ok := inv.PodUID(w1, ns, "c"); ok {
		t.Errorf("c is gone, yet PodUID finds %q", uid)
	}
}

// A holder reads its own leases with one LIST, by the label it wrote on them: a lease taken
// over by hand (the label kept) shows its new holder; one expired shows nobody; one released,
// or taken over by another drainctl (relabelled), is absent. Another holder's are never listed.
func TestAHolderListsItsOwnLeases(t *testing.T) {
	cs := kubetest.Client(t)
	c := kubetest.KubeClient(t, kubetest.Config(t))
	ctx := kubetest.Ctx(t)
	px := kubetest.Prefix(t)
	me, other := px+"-me@host:1", px+"-other@host:2"
	n := func(i int) string { return fmt.Sprintf("%s-n%d", px, i) }
	for i := range 5 {
		if err := c.AcquireLease(ctx, n(i), me, time.Minute, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AcquireLease(ctx, n(9), other, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	edit := func(i int, change func(*coordinationv1.Lease)) {
		leases := cs.CoordinationV1().Leases(kube.LeaseNamespace)
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			l, err := leases.Get(ctx, "drainctl-"+n(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(l)
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	edit(1, func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("a colleague by hand") })
	if err := c.ReleaseLease(ctx, n(2), me); err != nil {
		t.Fatal(err)
	}
	if err := c.AcquireLease(ctx, n(3), other, time.Minute, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	edit(4, func(l *coordinationv1.Lease) {
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-2 * time.Minute)}
	})
	held, err := c.LeasesHeldBy(ctx, me)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{n(0): me, n(1): "a colleague by hand", n(4): ""}
	if !reflect.DeepEqual(held, want) {
		t.Errorf("%s's leases: %q, want %q", me, held, want)
	}
	if theirs, err := c.LeasesHeldBy(ctx, other); err != nil || !reflect.DeepEqual(theirs, map[string]string{n(3): other, n(9): other}) {
		t.Errorf("%s's leases: %q (%v)", other, theirs, err)
	}
}
