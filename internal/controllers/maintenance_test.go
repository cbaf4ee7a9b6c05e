package controllers_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// controllerUser is the controller's ServiceAccount (deploy/controller-rbac.yaml).
const controllerUser = "system:serviceaccount:drainctl:drainctl-controller"

// maintenances installs the CRD and the controller's RBAC, and starts a store on the
// resources as user ("" for the test's admin).
func (c *cluster) maintenances(user string) (*kube.Maintenances, dynamic.Interface) {
	c.T.Helper()
	kubetest.InstallCRDs(c.T, "../../deploy/crd-nodemaintenance.yaml")
	for _, err := range kubetest.Apply(c.T, false, "../../deploy/namespace.yaml", "../../deploy/leases-role.yaml", "../../deploy/controller-rbac.yaml") {
		c.T.Fatal(err)
	}
	cfg := kubetest.Config(c.T)
	cfg.Impersonate.UserName = user
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		c.T.Fatal(err)
	}
	store := kube.NewMaintenances(dyn)
	ctx, cancel := context.WithCancel(context.Background())
	c.T.Cleanup(func() { cancel(); store.Shutdown() })
	if err := store.Start(ctx, 30*time.Second); err != nil {
		c.T.Fatal(err)
	}
	return store, dyn
}

// startController runs the controller with the ServiceAccount's permissions only: what it
// does proves the RBAC it ships with is enough.
func (c *cluster) startController() (stop func()) {
	return c.startControllerRecording(&simtest.Recorder{})
}

func (c *cluster) startControllerRecording(rec *simtest.Recorder) (stop func()) {
	store, _ := c.maintenances(controllerUser)
	cfg := kube.Tune(kubetest.Config(c.T), kube.Options{QPS: 200, Burst: 400})
	cfg.Impersonate.UserName = controllerUser
	kc := c.KubeClientFor(cfg)
	eng := ops.NewEngine(kc, c.Nova, c.Cfg, ops.EngineOptions{Holder: "controller@test", Poll: 5 * time.Millisecond,
		StallAfter: 300 * time.Millisecond, Backoff: 20 * time.Millisecond})
	mc := &controllers.MaintenanceController{Engine: eng, Store: store, Run: ops.RunOptions{Policy: defaults()},
		Resync: 200 * time.Millisecond, Backoff: 50 * time.Millisecond, Events: kc, Emit: rec.Emit}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { mc.Serve(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func maintenanceOf(store *kube.Maintenances, name string) (model.NodeMaintenance, bool) {
	for _, nm := range store.List() {
		if nm.Name == name {
			return nm, true
		}
	}
	return model.NodeMaintenance{}, false
}

func (c *cluster) leaseHolder(node string) string {
	l, err := c.CS.CoordinationV1().Leases(kube.LeaseNamespace).Get(kubetest.Ctx(c.T), "drainctl-"+node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		c.T.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// A NodeMaintenance refused by a blocker says why and retries; once the blocker is gone it
// empties the node (VMs and pods) with the counts in its status; deleted, the node is put
// back and the resource goes.
func TestNodeMaintenanceLifecycle(t *testing.T) {
	c := newCluster(t, 50)
	store, dyn := c.maintenances("")
	rec := &simtest.Recorder{}
	stop := c.startControllerRecording(rec)
	defer func() { stop() }()
	c0 := c.Name("c0")
	ctx := kubetest.Ctx(t)
	if _, err := store.Create(ctx, c0, "firmware upgrade"); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "Failed on the bare pod", func() bool {
		nm, _ := maintenanceOf(store, c0)
		return nm.Guarded && nm.Status.Phase == model.MaintenanceFailed && strings.Contains(nm.Status.LastError, c.NS+"/shell")
	})
	if n := c.Node(c0); !n.Schedulable {
		t.Fatal("a refused maintenance changed the node")
	}
	// The nodeName is immutable (CEL in the CRD).
	_, err := dyn.Resource(kube.MaintenanceGVR).Patch(ctx, c0, types.MergePatchType, []byte(`{"spec":{"nodeName":"elsewhere"}}`), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "nodeName is immutable") {
		t.Errorf("changing nodeName: %v", err)
	}

	// Someone deals with the bare pod: the retry goes through.
	if err := c.CS.CoreV1().Pods(c.NS).Delete(ctx, "shell", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "Succeeded", func() bool {
		nm, _ := maintenanceOf(store, c0)
		return nm.Status.Phase == model.MaintenanceSucceeded
	})
	nm, _ := maintenanceOf(store, c0)
	st := nm.Status
	// On c0 when the maintenance began: web-0 and web-1 (evicted), the libvirt DaemonSet pod
	// (left, as kubectl drain leaves DaemonSet pods), vm-a and vm-b. The refused attempt
	// before counted nothing (the shell pod is not in the totals).
	if st.TotalPods != 3 || st.EvictionPods != 2 || len(st.PendingPods) != 0 || st.TotalVMs != 2 || st.MigratedVMs != 2 ||
		len(st.PendingVMs) != 0 || st.DrainProgress != 100 || st.LastError != "" || st.LastUpdate.IsZero() {
		t.Errorf("status: %+v", st)
	}
	n := c.Node(c0)
	h, _ := c.World.Host(c0)
	if n.Schedulable || !n.HasTaint("drainctl.io/maintenance") || h.Enabled ||
		!strings.HasPrefix(h.DisabledReason, "drainctl: evacuate by controller@test") || !strings.HasSuffix(h.DisabledReason, "firmware upgrade") {
		t.Errorf("node during maintenance: %+v, compute %+v", n, h)
	}
	for _, vm := range []string{"vm-a", "vm-b"} {
		if s, _ := c.World.ServerByName(vm); s.Host == c0 {
			t.Errorf("%s still on %s", vm, c0)
		}
	}
	if got := c.leaseHolder(c0); got != "controller@test" {
		t.Errorf("lease held by %q during the maintenance", got)
	}

	// A second NodeMaintenance for the same node is told so, and deleting it leaves the
	// node in the first one's maintenance.
	dup := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "maintenance.drainctl.io/v1beta1", "kind": "NodeMaintenance",
		"metadata": map[string]any{"name": c0 + "-again"}, "spec": map[string]any{"nodeName": c0}}}
	if _, err := dyn.Resource(kube.MaintenanceGVR).Create(ctx, dup, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "the duplicate Failed, naming the first", func() bool {
		nm, _ := maintenanceOf(store, c0+"-again")
		return nm.Status.Phase == model.MaintenanceFailed && strings.Contains(nm.Status.LastError, "already under NodeMaintenance "+c0)
	})
	if err := store.Delete(ctx, c0+"-again"); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "the duplicate gone", func() bool { _, ok := maintenanceOf(store, c0+"-again"); return !ok })
	if n := c.Node(c0); n.Schedulable || c.leaseHolder(c0) != "controller@test" {
		t.Fatalf("deleting the duplicate touched the node: %+v", n)
	}

	if err := store.Delete(ctx, c0); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 20*time.Second, "the NodeMaintenance gone", func() bool {
		_, err := dyn.Resource(kube.MaintenanceGVR).Get(ctx, c0, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	n = c.Node(c0)
	h, _ = c.World.Host(c0)
	if !n.Schedulable || n.HasTaint("drainctl.io/maintenance") || !h.Enabled || n.Annotations[ops.JournalAnnotation] != "" {
		t.Errorf("node after the maintenance: %+v, compute %+v", n, h)
	}
	if got := c.leaseHolder(c0); got != "" {
		t.Errorf("lease still held by %q", got)
	}
	// Nothing was interrupted: the restore ran once, to the end, not stopped by the deletion
	// that started it.

	var runs []string
	for _, e := range rec.Events() {
		if d, ok := e.(ops.RunDone); ok {
			runs = append(runs, string(d.Report.Op)+" "+string(d.Report.Result))
		}
	}

	if want := []string{"evacuate done", "uncordon done"}; !slices.Equal(runs, want) {
		t.Errorf("the controller's runs: %q, want %q", runs, want)
	}
	kubetest.Eventually(t, 10*time.Second, "the maintenance's Events and its steps' on the node", func() bool {
		events, _ := c.CS.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		seen := map[string]bool{}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == c0 {
				seen[e.Reason] = true
			}
		}
		return seen["MaintenanceFailed"] && seen["MaintenanceSucceeded"] && seen["MaintenanceEnded"] &&
			seen["DrainctlCordon"] && seen["DrainctlDisableCompute"] && seen["DrainctlVMMigrated"] && seen["DrainctlUncordon"]
	})
}

// The controller stopped mid-maintenance (a rollout, a crash) resumes where the node's
// journal says: no VM migrates twice, the totals stay those of the start.
func TestNodeMaintenanceResumesAfterRestart(t *testing.T) {
	c := newCluster(t, 20)
	store, _ := c.maintenances("")
	ctx := kubetest.Ctx(t)
	c0 := c.Name("c0")
	if err := c.CS.CoreV1().Pods(c.NS).Delete(ctx, "shell", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	vmA, _ := c.World.ServerByName("vm-a")
	c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0.9 * (1 << 30) })
	stop := c.startController()
	if _, err := store.Create(ctx, c0, ""); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 20*time.Second, "vm-a migrating, the status Running", func() bool {
		vm, _ := c.World.ServerByName("vm-a")
		nm, _ := maintenanceOf(store, c0)
		return vm.TaskState == "migrating" && nm.Status.Phase == model.MaintenanceRunning
	})
	stop()
	if j, _ := ops.ReadJournal(c.Node(c0)); j.Phase != ops.PhaseInterrupted {
		t.Errorf("journal after the stop: %+v", j)
	}
	kubetest.Eventually(t, 5*time.Second, "the status says interrupted", func() bool {
		nm, _ := maintenanceOf(store, c0)
		return strings.HasPrefix(nm.Status.LastError, "interrupted")
	})
	c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0 })
	stop = c.startController()
	defer stop()
	kubetest.Eventually(t, 30*time.Second, "Succeeded after the restart", func() bool {
		nm, _ := maintenanceOf(store, c0)
		return nm.Status.Phase == model.MaintenanceSucceeded
	})
	for _, name := range []string{"vm-a", "vm-b"} {
		vm, _ := c.World.ServerByName(name)
		if n := len(c.World.MigrationStatuses(vm.ID)); n != 1 || vm.Host == c0 {
			t.Errorf("%s: migrated %d times, on %s", name, n, vm.Host)
		}
	}
	if nm, _ := maintenanceOf(store, c0); nm.Status.TotalVMs != 2 || nm.Status.TotalPods != 3 || nm.Status.DrainProgress != 100 || nm.Status.LastError != "" {
		t.Errorf("status after the resume: %+v", nm.Status)
	}
}

// A NodeMaintenance whose node waits for a node slot (another process empties a node under
// concurrency.nodes = 1) says so in a Queued condition, with the node already cordoned and
// its nova-compute disabled; once the slot is free it goes on and the condition turns False.
func TestNodeMaintenanceQueuedForANodeSlot(t *testing.T) {
	c := newCluster(t, 50)
	c.Cfg.Concurrency.Nodes = 1
	store, _ := c.maintenances("")
	kubetest.Namespace(t, c.CS, kube.LeaseNamespace)
	// The other process holds c2's own lease and a slot for it: a slot proves a node being
	// emptied only beside its node's lease.
	other, ttl, now := "drainctl/someone@elsewhere/1-abcdef", int32(600), metav1.NewMicroTime(time.Now())
	holder := other + "#" + c.Name("c2")
	slot := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "drainctl-node-slot.0", Namespace: kube.LeaseNamespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &ttl, AcquireTime: &now, RenewTime: &now}}
	nodeLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "drainctl-" + c.Name("c2"), Namespace: kube.LeaseNamespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: &ttl, AcquireTime: &now, RenewTime: &now}}
	for _, l := range []*coordinationv1.Lease{slot, nodeLease} {
		if _, err := c.CS.CoordinationV1().Leases(kube.LeaseNamespace).Create(kubetest.Ctx(t), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.CS.CoordinationV1().Leases(kube.LeaseNamespace).Delete(context.Background(), l.Name, metav1.DeleteOptions{})
		})
	}
	stop := c.startController()
	defer func() { stop() }()
	c1 := c.Name("c1")
	if _, err := store.Create(kubetest.Ctx(t), c1, "kernel"); err != nil {
		t.Fatal(err)
	}
	queued := func(nm model.NodeMaintenance) (model.MaintenanceCondition, bool) {
		for _, cond := range nm.Status.Conditions {
			if cond.Type == model.ConditionQueued {
				return cond, true
			}
		}
		return model.MaintenanceCondition{}, false
	}
	kubetest.Eventually(t, 15*time.Second, "the NodeMaintenance Queued, naming the node being emptied", func() bool {
		nm, _ := maintenanceOf(store, c1)
		cond, ok := queued(nm)
		return ok && cond.Status == "True" && strings.Contains(cond.Message, c.Name("c2")) && strings.Contains(cond.Message, "concurrency.nodes = 1")
	})
	if h, _ := c.World.Host(c1); h.Enabled {
		t.Error("waiting for its slot with nova-compute still enabled")
	}
	if n := c.Node(c1); n.Schedulable {
		t.Error("waiting for its slot, not cordoned")
	}
	if err := c.CS.CoordinationV1().Leases(kube.LeaseNamespace).Delete(kubetest.Ctx(t), slot.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "Succeeded once the slot is free, Queued False", func() bool {
		nm, _ := maintenanceOf(store, c1)
		cond, ok := queued(nm)
		return nm.Status.Phase == model.MaintenanceSucceeded && ok && cond.Status == "False"
	})
}
