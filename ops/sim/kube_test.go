package sim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

func demo(t *testing.T, scale float64) *Demo {
	t.Helper()
	d, err := StartDemo(DemoOptions{Seed: 1, Scale: scale})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func evict(d *Demo, ns, name string) error {
	return d.Kube.Clientset.PolicyV1().Evictions(ns).Evict(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
}

func podsOn(t *testing.T, d *Demo, node string) []corev1.Pod {
	t.Helper()
	list, err := d.Kube.Clientset.CoreV1().Pods("").List(context.Background(),
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func pdb(t *testing.T, d *Demo, name string) policyv1.PodDisruptionBudgetStatus {
	t.Helper()
	p, err := d.Kube.Clientset.PolicyV1().PodDisruptionBudgets("shop").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Status
}

func TestFieldSelectorIsApplied(t *testing.T) {
	d := demo(t, 1)
	for _, p := range podsOn(t, d, d.Computes[0]) {
		if p.Spec.NodeName != d.Computes[0] {
			t.Fatalf("pod %s of %s listed for %s", p.Name, p.Spec.NodeName, d.Computes[0])
		}
	}
	if len(podsOn(t, d, d.Computes[0])) < 5 {
		t.Error("too few pods on a compute node")
	}
}

// The web PDB (minAvailable = replicas-1) allows one disruption: the first eviction
// passes and marks the pod terminating, the second gets the API server's 429; once the
// pod is gone and its replacement is Ready, the budget allows again.
func TestEvictionHonoursPDBAndRecovers(t *testing.T) {
	d := demo(t, 50) // 5 s grace, 2 s to Ready: ~150 ms real
	var web []corev1.Pod
	for _, node := range d.Computes[:2] {
		for _, p := range podsOn(t, d, node) {
			if p.Labels["app"] == "web" {
				web = append(web, p)
			}
		}
	}
	if len(web) != 2 || pdb(t, d, "web-pdb").DisruptionsAllowed != 1 {
		t.Fatalf("web pods %d, pdb %+v", len(web), pdb(t, d, "web-pdb"))
	}
	if err := evict(d, "shop", web[0].Name); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	p, _ := d.Kube.Clientset.CoreV1().Pods("shop").Get(context.Background(), web[0].Name, metav1.GetOptions{})
	if p.DeletionTimestamp == nil {
		t.Error("evicted pod is not terminating")
	}
	err := evict(d, "shop", web[1].Name)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: %v, want 429", err)
	}
	if st, ok := err.(apierrors.APIStatus); !ok || len(st.Status().Details.Causes) == 0 || st.Status().Details.Causes[0].Type != policyv1.DisruptionBudgetCause {
		t.Errorf("429 without the DisruptionBudget cause: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for pdb(t, d, "web-pdb").DisruptionsAllowed < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("budget never recovered: %+v", pdb(t, d, "web-pdb"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := d.Kube.Clientset.CoreV1().Pods("shop").Get(context.Background(), web[0].Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("evicted pod still there after its grace period: %v", err)
	}
	replaced := 0
	for _, node := range append(append(append([]string{}, d.Computes...), d.Storage...), d.ControlPlane...) {
		for _, p := range podsOn(t, d, node) {
			if p.Labels["app"] == "web" && node != web[0].Spec.NodeName {
				replaced++
			}
		}
	}
	if replaced != len(d.Computes) { // every replica; the replacement on another node (not the tainted control plane)
		t.Errorf("web replicas off %s: %d, want %d", web[0].Spec.NodeName, replaced, len(d.Computes))
	}
	if err := evict(d, "shop", web[1].Name); err != nil {
		t.Errorf("after recovery: %v", err)
	}
}

func TestBarePodIsNotRecreated(t *testing.T) {
	d := demo(t, 1000)
	if err := evict(d, "shop", "debug-shell"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := d.Kube.Clientset.CoreV1().Pods("shop").Get(context.Background(), "debug-shell", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bare pod not deleted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	for _, node := range d.Computes {
		for _, p := range podsOn(t, d, node) {
			if p.Labels["run"] == "debug-shell" {
				t.Errorf("a bare pod came back on %s", node)
			}
		}
	}
}

func TestDefaultDemoWorld(t *testing.T) {
	d := demo(t, 1)
	if len(d.ControlPlane) != 3 || len(d.Storage) != 1 || len(d.Computes) != 8 {
		t.Fatalf("nodes: %v %v %v", d.ControlPlane, d.Storage, d.Computes)
	}
	if h, _ := d.World.Host(d.Computes[5]); h.Enabled || h.DisabledReason == "" {
		t.Errorf("compute-5 should be disabled by someone else: %+v", h)
	}
	if s, ok := d.World.ServerByName("analytics-big"); !ok || s.DirtyBytesPerSec == 0 {
		t.Error("no slowly converging VM")
	}
	if s, ok := d.World.ServerByName("legacy-erp"); !ok || s.FailAt != "running" {
		t.Error("no VM whose first migration fails")
	}
}

func TestFaultSpec(t *testing.T) {
	d := demo(t, 1)
	for _, ok := range []string{"latency=5ms,migrate-500", "no-valid-host", "compute-down=" + d.Computes[0], "never-converge=vm-0000", "fail-migration=vm-0001@preparing"} {
		if err := d.World.ApplyFaultSpec(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"explode", "latency=soon", "compute-down=nowhere", "fail-migration=vm-0001@later"} {
		if err := d.World.ApplyFaultSpec(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// A recovery in the demo keeps the cluster consistent: a dead node's pods, swept by two
// triggers (a sweep and a force-delete after it), are replaced once each, never twice; its
// DaemonSet pods come back once it is Ready and the out-of-service taint is gone, as the
// DaemonSet controller puts them back.
func TestOutOfServiceReplacesOnceAndDaemonSetsReturn(t *testing.T) {
	d := demo(t, 1000)
	node := d.Computes[0]
	taint := corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	// replicas counts the pods of each ReplicaSet and StatefulSet; daemons the DaemonSet pods on the node.
	replicas := func() (map[string]int, int) {
		list, err := d.Kube.Clientset.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, daemons := map[string]int{}, 0
		for _, p := range list.Items {
			ref := metav1.GetControllerOf(&p)
			switch {
			case ref == nil || p.DeletionTimestamp != nil:
			case ref.Kind == "ReplicaSet" || ref.Kind == "StatefulSet":
				out[p.Namespace+"/"+ref.Name]++
			case ref.Kind == "DaemonSet" && p.Spec.NodeName == node:
				daemons++
			}
		}
		return out, daemons
	}
	var listed []corev1.Pod
	swept := 0
	for _, p := range podsOn(t, d, node) {
		if corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, &taint, false) {
			continue
		}
		listed = append(listed, p)
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "DaemonSet" {
			swept++
		}
	}
	before, ds := replicas()
	if swept == 0 {
		t.Fatal("the node runs no DaemonSet pod the taint sweeps: the test needs one")
	}
	n, err := d.Kube.Clientset.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, taint)
	if _, err := d.Kube.Clientset.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Kube.SetNodeReady(node, false); err != nil {
		t.Fatal(err)
	}
	d.Kube.sweepOutOfService(node)
	for i := range listed { // a second trigger that had listed the same pods
		if err := d.Kube.remove(&listed[i]); err != nil {
			t.Fatal(err)
		}
	}
	// The node's own writes trigger sweeps of their own, concurrently: the counts settle.
	settled := time.Now().Add(3 * time.Second)
	for {
		after, dsAfter := replicas()
		same := dsAfter == ds-swept
		for owner, n := range before {
			if after[owner] > n {
				t.Fatalf("%s: %d pods after the sweeps, %d before: a pod replaced twice", owner, after[owner], n)
			}
			same = same && after[owner] == n
		}
		if same {
			break
		}
		if time.Now().After(settled) {
			t.Fatalf("after the sweeps: %v, before %v; %d DaemonSet pods left on %s, want %d", after, before, dsAfter, node, ds-swept)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Back: Ready, the taint gone.
	n, _ = d.Kube.Clientset.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	n.Spec.Taints = nil
	if _, err := d.Kube.Clientset.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Kube.SetNodeReady(node, true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, back := replicas(); back == ds {
			break
		}
		if time.Now().After(deadline) {
			_, back := replicas()
			t.Fatalf("%d of %d DaemonSet pods back on %s", back, ds, node)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
