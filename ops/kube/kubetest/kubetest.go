// Package kubetest runs a real kube-apiserver and etcd (controller-runtime's envtest) for
// tests, and plays the parts of a cluster that envtest does not run: the scheduler (pods are
// created bound), the kubelet (pods Running and Ready; graceful deletions finished) and the
// disruption controller (PDB status). Binaries come from hack/envtest-assets.sh through
// KUBEBUILDER_ASSETS; without them tests skip, except under CI=true, where they fail.
package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	once     sync.Once
	env      *envtest.Environment
	cfg      *rest.Config
	startErr error
)

// Main runs a package's tests and stops the shared API server afterwards. Use it as
// func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if env != nil {
		_ = env.Stop()
	}
	return code
}

// Config returns the shared API server's configuration, starting it on first use.
func Config(t testing.TB) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("KUBEBUILDER_ASSETS is not set; run `make test` (it builds kube-apiserver and etcd with hack/envtest-assets.sh)")
		}
		t.Skip("KUBEBUILDER_ASSETS not set: run `make test` or export KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)")
	}
	once.Do(func() {
		env = &envtest.Environment{}
		// As a real cluster's: a node's kubelet may write only its own Node, and only the
		// labels NodeRestriction leaves it (AsNode).
		api := env.ControlPlane.GetAPIServer().Configure()
		api.Set("authorization-mode", "Node,RBAC")
		api.Append("enable-admission-plugins", "NodeRestriction")
		cfg, startErr = env.Start()
	})
	if startErr != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", startErr)
	}
	return rest.CopyConfig(cfg)
}

// Kubeconfig writes a kubeconfig for the shared API server (an admin user) and returns its path.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	Config(t)
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "drainctl-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// AsNode is a clientset with the identity of node's kubelet (system:node:NAME in system:nodes),
// which the Node authorizer and NodeRestriction judge as a real cluster's would.
func AsNode(t testing.TB, node string) kubernetes.Interface {
	t.Helper()
	Config(t)
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "system:node:" + node, Groups: []string{"system:nodes"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(user.Config())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Client returns a clientset for the shared API server.
func Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(Config(t))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Ctx is a context bounded for one test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Prefix makes a name unique to the test, so tests sharing one API server never collide
// (a deleted namespace stays Terminating forever without a namespace controller).
func Prefix(t testing.TB) string {
	name := invalidName.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return strings.Trim(name, "-")
}

var invalidName = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace creates a namespace for the test.
func Namespace(t testing.TB, cs kubernetes.Interface, name string) string {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(Ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// NodeOption changes a node before it is created.
type NodeOption func(*corev1.Node)

// Role adds a node-role label.
func Role(role string) NodeOption {
	return func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/"+role] = "" }
}

// Cordoned creates the node unschedulable.
func Cordoned() NodeOption { return func(n *corev1.Node) { n.Spec.Unschedulable = true } }

// ProviderID sets spec.providerID (the cloud machine under the node).
func ProviderID(id string) NodeOption { return func(n *corev1.Node) { n.Spec.ProviderID = id } }

// Label adds a label.
func Label(k, v string) NodeOption { return func(n *corev1.Node) { n.Labels[k] = v } }

// Node creates a Ready node with 16 CPUs, 64 GiB and room for 110 pods.
func Node(t testing.TB, cs kubernetes.Interface, name string, opts ...NodeOption) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, o := range opts {
		o(n)
	}
	ctx := Ctx(t)
	created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.NodeStatus{
		Capacity: corev1.ResourceList{
			"cpu":    resource.MustParse("16"),
			"memory": resource.MustParse("64Gi"),
			"pods":   resource.MustParse("110"),
		},
		Allocatable: corev1.ResourceList{
			"cpu":    resource.MustParse("16"),
			"memory": resource.MustParse("64Gi"),
			"pods":   resource.MustParse("110"),
		},
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()},
		},
	}
	created, err = cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The TaintNodesByCondition admission plugin taints every new node not-ready:NoSchedule;
	// the node-lifecycle controller lifts it once the node is Ready. Play that controller.
	var kept []corev1.Taint
	for _, taint := range created.Spec.Taints {
		if taint.Key != corev1.TaintNodeNotReady {
			kept = append(kept, taint)
		}
	}
	if len(kept) != len(created.Spec.Taints) {
		created.Spec.Taints = kept
		if created, err = cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return created
}

// SetReady sets the node's Ready condition, changed at since (a machine that died then),
// as the node-lifecycle controller does when its kubelet stops posting.
func SetReady(t testing.TB, cs kubernetes.Interface, name string, ready bool, since time.Time) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(Ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)},
		}
		_, err = cs.CoreV1().Nodes().UpdateStatus(Ctx(t), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// PodOption changes a pod before it is created.
type PodOption func(*corev1.Pod)

// Owned sets the pod's controller.
func Owned(kind, name string, uid string) PodOption {
	return func(p *corev1.Pod) {
		apiVersion := "apps/v1"
		if kind == "Job" {
			apiVersion = "batch/v1"
		}
		p.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)},
		}
	}
}

// Labels sets the pod's labels.
func Labels(kv ...string) PodOption {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// EmptyDir gives the pod an emptyDir volume.
func EmptyDir(name string) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(
			p.Spec.Volumes,
			corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		)
	}
}

// Requests sets the pod's container requests.
func Requests(cpu, mem string) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse(cpu), "memory": resource.MustParse(mem)}
	}
}

// Tolerates gives the pod a toleration of every taint with key (a node agent that stays on
// an out-of-service node).
func Tolerates(key string) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

// Grace sets terminationGracePeriodSeconds.
func Grace(seconds int64) PodOption {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &seconds }
}

// Pod creates a pod bound to node (playing the scheduler) and marks it Running and Ready
// (playing the kubelet), so that PDBs apply to it.
func Pod(t testing.TB, cs kubernetes.Interface, ns, name, node string, opts ...PodOption) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}
	for _, o := range opts {
		o(p)
	}
	ctx := Ctx(t)
	created, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()},
	}
	created, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// ReplicaSet creates a Deployment and its ReplicaSet (no controller does it here) and
// returns the ReplicaSet's UID for the pods' owner references.
func ReplicaSet(t testing.TB, cs kubernetes.Interface, ns, deployment string, replicas int32) (rsName, rsUID string) {
	t.Helper()
	ctx := Ctx(t)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": deployment}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": deployment}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}}}
	d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: deployment},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: deployment + "-5d8f9",
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)},
		}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rs.Name, string(rs.UID)
}

// PDB creates a PodDisruptionBudget selecting app=<app> with minAvailable.
func PDB(t testing.TB, cs kubernetes.Interface, ns, name, app string, minAvailable int) {
	t.Helper()
	_, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(Ctx(t), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(int32(minAvailable))),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// SetPDBStatus plays the disruption controller: it writes the budget's status.
func SetPDBStatus(t testing.TB, cs kubernetes.Interface, ns, name string, allowed, healthy, desired, expected int32) {
	t.Helper()
	ctx := Ctx(t)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
			CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected}
		_, err = cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FinishDeletion plays the kubelet: pods marked for deletion in ns are deleted for good.
func FinishDeletion(t testing.TB, cs kubernetes.Interface, ns string) int {
	t.Helper()
	ctx := Ctx(t)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

// Eventually polls cond every 10 ms until it holds or the timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// InstallCRDs installs the CustomResourceDefinitions in the files (created or updated) and
// waits until the API server serves them.
func InstallCRDs(t testing.TB, paths ...string) {
	t.Helper()
	if _, err := envtest.InstallCRDs(Config(t), envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
}
