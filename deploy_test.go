package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// TestManifestsDryRun sends every manifest in deploy/ to the real API server with
// dryRun=All (what `kubectl apply --dry-run=server` does): schemas, RBAC rules and
// references are validated, nothing is stored.
func TestManifestsDryRun(t *testing.T) {
	files, _ := filepath.Glob("deploy/*.yaml")
	if len(files) < 8 {
		t.Fatalf("manifests: %v", files)
	}
	// The namespace must exist for the namespaced objects' dry run.
	dyn, err := dynamic.NewForConfig(kubetest.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "drainctl"}}}
	dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(kubetest.Ctx(t), ns, metav1.CreateOptions{})
	for _, err := range kubetest.Apply(t, true, files...) {
		t.Error(err)
	}
}

// asServiceAccount is a clientset acting as one of deploy/'s ServiceAccounts (impersonated),
// with the pod-bound token's node name when node is set.
func asServiceAccount(t *testing.T, sa, node string) kubernetes.Interface {
	cfg := kubetest.Config(t)
	cfg.Impersonate.UserName = "system:serviceaccount:drainctl:" + sa
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/node-name": {node}}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// The shipped RBAC keeps every mode to drainctl's own leases (namespace drainctl) and Events
// in default: none of them can take the scheduler's leader lease, or write Events elsewhere.
func TestServiceAccountsCannotTouchOthersLeases(t *testing.T) {
	admin := kubetest.Client(t)
	for _, err := range kubetest.Apply(t, false, "deploy/namespace.yaml", "deploy/leases-role.yaml", "deploy/daemon-rbac.yaml",
		"deploy/daemon-cluster.yaml", "deploy/controller-rbac.yaml", "deploy/proxy-rbac.yaml") {
		t.Fatal(err)
	}
	holder := "kube-scheduler-x"
	sched := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	if _, err := admin.CoordinationV1().Leases("kube-system").Create(kubetest.Ctx(t), sched, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, sa := range []string{"drainctl-daemon", "drainctl-daemon-cluster", "drainctl-controller", "drainctl-proxy"} {
		cs := asServiceAccount(t, sa, "")
		l, err := cs.CoordinationV1().Leases("kube-system").Get(kubetest.Ctx(t), "kube-scheduler", metav1.GetOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s reads the scheduler's lease: %v", sa, err)
		}
		mine := "drainctl/" + sa
		l = sched.DeepCopy()
		l.Spec.HolderIdentity = &mine
		if _, err := cs.CoordinationV1().Leases("kube-system").Update(kubetest.Ctx(t), l, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s may update kube-system/kube-scheduler: %v", sa, err)
		}
		own := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "drainctl-rbac-" + sa, Namespace: "drainctl"}}
		if _, err := cs.CoordinationV1().Leases("drainctl").Create(kubetest.Ctx(t), own, metav1.CreateOptions{}); err != nil {
			t.Errorf("%s cannot create its own lease: %v", sa, err)
		}
		// No workload identity may write a record: a forged fence or a planted campaign.
		rec := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "drainctl-fence-" + sa, Namespace: "drainctl"}}
		if _, err := cs.CoreV1().ConfigMaps("drainctl").Create(kubetest.Ctx(t), rec, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s may create a record in drainctl: %v", sa, err)
		}
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "x.", Namespace: "kube-system"}, InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "x"}}
		if _, err := cs.CoreV1().Events("kube-system").Create(kubetest.Ctx(t), ev, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s may write Events in kube-system: %v", sa, err)
		}
	}
}

// daemon-policy.yaml: the per-node daemon's ServiceAccount may change its own Node only.
func TestDaemonMayChangeOnlyItsOwnNode(t *testing.T) {
	admin := kubetest.Client(t)
	for _, err := range kubetest.Apply(t, false, "deploy/namespace.yaml", "deploy/leases-role.yaml", "deploy/daemon-rbac.yaml", "deploy/daemon-policy.yaml") {
		t.Fatal(err)
	}
	px := kubetest.Prefix(t)
	mine, other := px+"-mine", px+"-other"
	kubetest.Node(t, admin, mine)
	kubetest.Node(t, admin, other)
	daemon := asServiceAccount(t, "drainctl-daemon", mine)
	patch := []byte(`{"metadata":{"annotations":{"drainctl.io/test":"x"}}}`)
	// The policy takes effect once the API server has loaded it.
	kubetest.Eventually(t, 20*time.Second, "the policy denying another node", func() bool {
		_, err := daemon.CoreV1().Nodes().Patch(kubetest.Ctx(t), other, types.MergePatchType, patch, metav1.PatchOptions{})
		return err != nil && strings.Contains(err.Error(), "only the Node its pod runs on")
	})
	if _, err := daemon.CoreV1().Nodes().Patch(kubetest.Ctx(t), mine, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("the daemon cannot patch its own node: %v", err)
	}
	// Without a node in its token (not a pod's token), it may change none.
	if _, err := asServiceAccount(t, "drainctl-daemon", "").CoreV1().Nodes().Patch(kubetest.Ctx(t), mine, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
		t.Error("a token without a node may patch a node")
	}
}

// Every manifest runs the image `make image` builds: the reference in deploy/IMAGE.
func TestManifestsNameTheBuiltImage(t *testing.T) {
	ref, err := os.ReadFile("deploy/IMAGE")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(ref))
	files, _ := filepath.Glob("deploy/*.yaml")
	n := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			if img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
				n++
				if got, _, _ := strings.Cut(img, " "); got != want {
					t.Errorf("%s runs %s, not %s (deploy/IMAGE)", f, got, want)
				}
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d images in deploy/: is the search broken?", n)
	}
}

// Every in-cluster identity deploy/ grants is granted exactly the writes its code uses
// (create, update, patch, delete), each said why; a new grant or a dropped use fails here.
// Reads are broad on purpose (deploy/README.md says why).
func TestInClusterIdentitiesWriteOnlyWhatTheyUse(t *testing.T) {
	uses := map[string][]string{
		"drainctl-daemon": { // journal on its node; its leases; Events on Nodes
			"|nodes|patch", "drainctl|coordination.k8s.io/leases|create", "drainctl|coordination.k8s.io/leases|update",
			"drainctl|coordination.k8s.io/leases|delete", "default|events|create"},
		"drainctl-daemon-cluster": { // as the daemon, and forgets the fence of a node seen Ready
			"|nodes|patch", "drainctl|coordination.k8s.io/leases|create", "drainctl|coordination.k8s.io/leases|update",
			"drainctl|coordination.k8s.io/leases|delete", "default|events|create", "drainctl|configmaps|delete"},
		"drainctl-controller": { // cordons, evicts, its resource and status; forgets fences
			"|nodes|update", "|nodes|patch", "|pods/eviction|create", "|maintenance.drainctl.io/nodemaintenances|patch",
			"|maintenance.drainctl.io/nodemaintenances/status|patch", "drainctl|coordination.k8s.io/leases|create",
			"drainctl|coordination.k8s.io/leases|update", "drainctl|coordination.k8s.io/leases|delete", "default|events|create",
			"drainctl|configmaps|delete"},
		"drainctl-proxy": { // as the controller, plus deleting the Node it terminates
			"|nodes|update", "|nodes|patch", "|nodes|delete", "|pods/eviction|create", "drainctl|coordination.k8s.io/leases|create",
			"drainctl|coordination.k8s.io/leases|update", "drainctl|coordination.k8s.io/leases|delete", "default|events|create"},
	}
	files, _ := filepath.Glob("deploy/*.yaml")
	// recovery-rbac.yaml is applied by those who opt in to automatic recovery: it is
	// accounted for by itself, below, and the rest must hold without it.
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "recovery-rbac.yaml" })
	granted := rbacWrites(t, files)
	recovery := rbacWrites(t, []string{"deploy/recovery-rbac.yaml"})
	// The controller fences a dead node itself and records the proof, and its ledger; it
	// force-deletes the pods a fenced node still shows.
	if want := []string{"drainctl|configmaps|create", "drainctl|configmaps|update", "|pods|delete"}; !slices.Equal(recovery["drainctl-controller"], sorted(want)) || len(recovery) != 1 {
		t.Errorf("recovery-rbac.yaml grants %v, want the controller's %v", recovery, sorted(want))
	}
	for sa, want := range uses {
		got := granted[sa]
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s writes\n got %v\nwant %v", sa, got, want)
		}
		for _, g := range got {
			if strings.Contains(g, "|configmaps|") && !strings.HasSuffix(g, "|delete") {
				t.Errorf("%s may write drainctl's records: %s", sa, g)
			}
		}
	}
	for sa := range granted {
		if _, ok := uses[sa]; !ok {
			t.Errorf("ServiceAccount %s has writes no test accounts for: %v", sa, granted[sa])
		}
	}
}

// rbacWrites reads the manifests' Roles, ClusterRoles and bindings, and returns each
// ServiceAccount's write grants as "namespace|group/resource|verb" (namespace empty: cluster-wide).
func rbacWrites(t *testing.T, files []string) map[string][]string {
	type role struct{ rules []rbacv1.PolicyRule }
	roles := map[string]role{} // "Kind/namespace/name"
	var bindings []rbacv1.RoleBinding
	for _, obj := range kubetest.Manifests(t, files...) {
		switch obj.GetKind() {
		case "Role", "ClusterRole":
			var r rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &r); err != nil {
				t.Fatal(err)
			}
			roles[obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName()] = role{r.Rules}
		case "RoleBinding", "ClusterRoleBinding":
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &b); err != nil {
				t.Fatal(err)
			}
			b.Kind = obj.GetKind()
			bindings = append(bindings, b)
		}
	}
	writes := map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true, "*": true,
		"escalate": true, "bind": true, "impersonate": true}
	out := map[string][]string{}
	for _, b := range bindings {
		ns := b.Namespace // a RoleBinding's grants hold in its namespace, a ClusterRoleBinding's everywhere
		key := b.RoleRef.Kind + "/" + ns + "/" + b.RoleRef.Name
		if b.RoleRef.Kind == "ClusterRole" {
			key = "ClusterRole//" + b.RoleRef.Name
		}
		r, ok := roles[key]
		if !ok {
			t.Errorf("%s %s binds %s, which no manifest defines", b.Kind, b.Name, key)
			continue
		}
		for _, s := range b.Subjects {
			if s.Kind != "ServiceAccount" {
				continue
			}
			for _, rule := range r.rules {
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							if !writes[v] {
								continue
							}
							gr := res
							if g != "" {
								gr = g + "/" + res
							}
							w := ns + "|" + gr + "|" + v
							if !slices.Contains(out[s.Name], w) {
								out[s.Name] = append(out[s.Name], w)
							}
						}
					}
				}
			}
		}
	}
	for sa := range out {
		slices.Sort(out[sa])
	}
	return out
}

func sorted(s []string) []string { slices.Sort(s); return s }
