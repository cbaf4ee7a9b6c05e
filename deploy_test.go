package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	authenticationv1 "k8s.io/api/authentication/v1"
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
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
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

// asServiceAccount is a clientset holding one of deploy/'s ServiceAccounts' own tokens, as
// the API server issues them (TokenRequest): with node set, a pod's token for a pod on that
// node, which carries the node's name as the kubelet's projected token does.
func asServiceAccount(t *testing.T, sa, node string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(tokenConfig(t, sa, node))
}

func tokenConfig(t *testing.T, sa, node string) *rest.Config {
	t.Helper()
	admin := kubetest.Client(t)
	ctx := kubetest.Ctx(t)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if node != "" {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: sa + "-", Namespace: "drainctl"},
			Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: sa, AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{Name: "drainctl", Image: "drainctl"}}}}
		pod, err := admin.CoreV1().Pods("drainctl").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tok, err := admin.CoreV1().ServiceAccounts("drainctl").CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for %s: %v", sa, err)
	}
	admincfg := kubetest.Config(t)
	return &rest.Config{Host: admincfg.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admincfg.CAData}}
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

// records-policy.yaml, held to the code with each ServiceAccount's own token: every identity
// writes the leases and records its code writes (as drainctl's own client writes them, its
// name in the writer annotation) and nothing else: the per-node daemon no lease but its
// node's, the slots and the migrations lock; a leader lease only its role; a record deleted
// in-cluster only when it is a fence; a record written in-cluster only by the controller, and
// only a recovery's; and no record, by anyone, naming another writer.
func TestRecordsAndLeasesOnlyTheirWritersWrite(t *testing.T) {
	admin := kubetest.Client(t)
	ctx := kubetest.Ctx(t)
	for _, err := range kubetest.Apply(t, false, "deploy/namespace.yaml", "deploy/leases-role.yaml", "deploy/daemon-rbac.yaml",
		"deploy/daemon-cluster.yaml", "deploy/controller-rbac.yaml", "deploy/proxy-rbac.yaml", "deploy/recovery-rbac.yaml",
		"deploy/records-policy.yaml") {
		t.Fatal(err)
	}
	// The API server is the package's: the policies go with the test, and the next test writes
	// as it did before they came.
	t.Cleanup(func() { unapply(t, "deploy/records-policy.yaml") })
	px := kubetest.Prefix(t)
	mine := px + "-mine"
	kubetest.Node(t, admin, mine)
	// A write of the lease as the identity: created and deleted again, or (a leader lease
	// another test's process holds) updated as it is, left in place.
	lease := func(cs kubernetes.Interface, name string) error {
		leases := cs.CoordinationV1().Leases("drainctl")
		_, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "drainctl"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			l, gerr := admin.CoordinationV1().Leases("drainctl").Get(ctx, name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			return err
		}
		if err == nil {
			err = leases.Delete(ctx, name, metav1.DeleteOptions{})
		}
		return err
	}
	// The policies take effect once the API server has loaded them.
	daemon := asServiceAccount(t, "drainctl-daemon", mine)
	kubetest.Eventually(t, 20*time.Second, "the policy refusing the per-node daemon the recovery lease", func() bool {
		return apierrors.IsForbidden(lease(daemon, "drainctl-recovery"))
	})
	leases := []struct {
		sa, node string
		ok, no   []string
	}{
		{"drainctl-daemon", mine, []string{"drainctl-" + mine}, // the slots and the lock: below, by holder
			[]string{"drainctl-" + px + "-other", "drainctl-recovery", "drainctl-controller", "drainctl-daemon", "drainctl-campaign-" + px,
				"drainctl-node-slot.0", "drainctl-migrations.lock"}},
		{"drainctl-daemon-cluster", "", []string{"drainctl-daemon", "drainctl-" + mine, "drainctl-node-slot.0"},
			[]string{"drainctl-recovery", "drainctl-controller", "drainctl-proxy"}},
		{"drainctl-controller", "", []string{"drainctl-controller", "drainctl-recovery", "drainctl-" + mine},
			[]string{"drainctl-daemon", "drainctl-proxy"}},
		{"drainctl-proxy", "", []string{"drainctl-proxy", "drainctl-" + mine}, []string{"drainctl-recovery", "drainctl-controller"}},
	}
	for _, l := range leases {
		cs := asServiceAccount(t, l.sa, l.node)
		for _, name := range l.ok {
			if err := lease(cs, name); err != nil {
				t.Errorf("%s cannot hold lease %s: %v", l.sa, name, err)
			}
		}
		for _, name := range l.no {
			if err := lease(cs, name); !apierrors.IsForbidden(err) {
				t.Errorf("%s may hold lease %s: %v", l.sa, name, err)
			}
		}
	}

	// The caps' leases, as the per-node daemon's code writes them (kube.Client, its holder
	// ops.NodeDaemonRole): only in its own node's name, a slot only for its node, a renewal
	// with its first acquireTime, and only its own given back. One node's daemon so cannot hold
	// the others' moves in a name not its own, nor make a stuck hold look young.
	dk := kubetest.KubeClient(t, tokenConfig(t, "drainctl-daemon", mine))
	me := ops.NodeDaemonRole(mine) + "/1-abcdef"
	for _, l := range []struct{ name, holder string }{{"migrations.lock", me}, {"node-slot.0", me + "#" + mine}} {
		if err := dk.AcquireLease(ctx, l.name, l.holder, 15*time.Second, nil); err != nil {
			t.Errorf("the daemon cannot take %s as %s: %v", l.name, l.holder, err)
		}
		if err := dk.AcquireLease(ctx, l.name, l.holder, 15*time.Second, nil); err != nil {
			t.Errorf("the daemon cannot renew %s: %v", l.name, err)
		}
		old, err := admin.CoordinationV1().Leases("drainctl").Get(ctx, "drainctl-"+l.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old.Spec.AcquireTime = &metav1.MicroTime{Time: time.Now()}
		if _, err := asServiceAccount(t, "drainctl-daemon", mine).CoordinationV1().Leases("drainctl").Update(ctx, old,
			metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the daemon renewed %s with a new acquireTime: %v", l.name, err)
		}
		if err := dk.ReleaseLease(ctx, l.name, l.holder); err != nil {
			t.Errorf("the daemon cannot give back %s: %v", l.name, err)
		}
	}
	for _, l := range []struct{ name, holder string }{
		{"migrations.lock", ops.NodeDaemonRole(px+"-other") + "/1-abcdef"},
		{"migrations.lock", "drainctl/root@x/1-abcdef/space"},
		{"node-slot.0", me + "#" + px + "-other"},
		{"node-slot.0", ops.NodeDaemonRole(px+"-other") + "/1-abcdef#" + mine},
	} {
		if err := dk.AcquireLease(ctx, l.name, l.holder, 15*time.Second, nil); !apierrors.IsForbidden(errors.Unwrap(err)) &&
			!apierrors.IsForbidden(err) {
			t.Errorf("the daemon of %s took %s as %s: %v", mine, l.name, l.holder, err)
		}
	}
	theirs := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "drainctl-migrations.lock", Namespace: "drainctl"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("drainctl/alice@laptop/1-abcdef/space")}}
	if _, err := admin.CoordinationV1().Leases("drainctl").Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := asServiceAccount(t, "drainctl-daemon", mine).CoordinationV1().Leases("drainctl").Delete(ctx, "drainctl-migrations.lock",
		metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the daemon gave back another's migrations lock: %v", err)
	}
	_ = admin.CoordinationV1().Leases("drainctl").Delete(ctx, "drainctl-migrations.lock", metav1.DeleteOptions{})

	// Records, through drainctl's own client (which names its writer) and by hand.
	controller := kubetest.KubeClient(t, tokenConfig(t, "drainctl-controller", ""))
	person := kubetest.KubeClient(t, kubetest.Config(t))
	if u := controller.User(ctx); u != "system:serviceaccount:drainctl:drainctl-controller" {
		t.Fatalf("the controller is %q to the API server", u)
	}
	// The records are the API server's for every later test: a pause or a storm left here would
	// hold their automatic recoveries. Each goes with the test.
	t.Cleanup(func() {
		for _, name := range []string{"fence-" + mine, "recovery-" + mine, "proactive-" + mine, "machine-" + mine, "storm", "pause-recovery",
			"campaign-" + px} {
			_ = admin.CoreV1().ConfigMaps("drainctl").Delete(context.Background(), kube.RecordName(name), metav1.DeleteOptions{})
		}
	})
	for _, name := range []string{"fence-" + mine, "recovery-" + mine, "proactive-" + mine, "machine-" + mine, "storm"} {
		if err := controller.SaveRecord(ctx, name, []byte("{}")); err != nil {
			t.Errorf("the controller cannot write record %s: %v", name, err)
		}
		if _, writer, _, err := person.RecordWriter(ctx, name); err != nil || writer != controller.User(ctx) {
			t.Errorf("record %s names writer %q (%v)", name, writer, err)
		}
	}
	for _, name := range []string{"pause-recovery", "campaign-" + px} {
		if err := person.SaveRecord(ctx, name, []byte("{}")); err != nil {
			t.Fatalf("a person cannot write record %s: %v", name, err)
		}
		if err := controller.SaveRecord(ctx, name, []byte("{}")); !apierrors.IsForbidden(errors.Unwrap(err)) {
			t.Errorf("the controller may write a person's record %s: %v", name, err)
		}
	}
	for _, sa := range []string{"drainctl-controller", "drainctl-daemon-cluster"} {
		cs := asServiceAccount(t, sa, "")
		for _, name := range []string{"pause-recovery", "campaign-" + px, "recovery-" + mine} {
			if err := cs.CoreV1().ConfigMaps("drainctl").Delete(ctx, kube.RecordName(name), metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("%s may delete record %s: %v", sa, name, err)
			}
		}
	}
	if err := asServiceAccount(t, "drainctl-daemon-cluster", "").CoreV1().ConfigMaps("drainctl").Delete(ctx, kube.RecordName("fence-"+mine), metav1.DeleteOptions{}); err != nil {
		t.Errorf("the cluster daemon cannot forget a fence: %v", err)
	}
	// A record naming another writer, or none, is refused to anyone: the controller posing as a
	// person, and a person by hand.
	forge := func(cs kubernetes.Interface, writer string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.RecordName("fence-" + mine), Namespace: "drainctl"}}
		if writer != "" {
			cm.Annotations = map[string]string{kube.WriterAnnotation: writer}
		}
		_, err := cs.CoreV1().ConfigMaps("drainctl").Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	for name, err := range map[string]error{
		"the controller as alice":    forge(asServiceAccount(t, "drainctl-controller", ""), "alice"),
		"the controller unnamed":     forge(asServiceAccount(t, "drainctl-controller", ""), ""),
		"a person as the controller": forge(admin, "system:serviceaccount:drainctl:drainctl-controller"),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s wrote a fence record: %v", name, err)
		}
	}
}

// unapply deletes the objects of the manifests, and waits until the API server has let go of
// an admission policy among them (a record with no writer is admitted again).
func unapply(t *testing.T, files ...string) {
	dyn, err := dynamic.NewForConfig(kubetest.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range kubetest.Manifests(t, files...) {
		plural := strings.ToLower(obj.GetKind()) + "s"
		if p, ok := strings.CutSuffix(plural, "ys"); ok { // policy: policies
			plural = p + "ies"
		}
		gvr := schema.GroupVersionResource{Group: obj.GroupVersionKind().Group, Version: obj.GroupVersionKind().Version, Resource: plural}
		_ = dyn.Resource(gvr).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
	}
	cms := kubetest.Client(t).CoreV1().ConfigMaps("drainctl")
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "drainctl-unapply-probe", Namespace: "drainctl"}}
	kubetest.Eventually(t, 20*time.Second, "the admission policies gone", func() bool {
		_, err := cms.Create(context.Background(), probe, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	_ = cms.Delete(context.Background(), probe.Name, metav1.DeleteOptions{})
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
	for sa := range uses { // /metrics asks the API server who scrapes it and whether it may
		uses[sa] = append(uses[sa], "|authentication.k8s.io/tokenreviews|create", "|authorization.k8s.io/subjectaccessreviews|create")
	}
	files, _ := filepath.Glob("deploy/*.yaml")
	// recovery-rbac.yaml is applied by those who opt in to automatic recovery: it is
	// accounted for by itself, below, and the rest must hold without it.
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "recovery-rbac.yaml" })
	granted := rbacWrites(t, files)
	recovery := rbacWrites(t, []string{"deploy/recovery-rbac.yaml"})
	// The controller fences a dead node itself and records the proof, and its ledger; it
	// deletes no pod (the out-of-service taint has Kubernetes delete them).
	if want := []string{"drainctl|configmaps|create", "drainctl|configmaps|update"}; !slices.Equal(recovery["drainctl-controller"], sorted(want)) || len(recovery) != 1 {
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
