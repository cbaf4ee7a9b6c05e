package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/notify"
)

// MaintenanceGVR is the NodeMaintenance resource (deploy/crd-nodemaintenance.yaml).
var MaintenanceGVR = schema.GroupVersionResource{Group: "maintenance.drainctl.io", Version: "v1beta1", Resource: "nodemaintenances"}

// ErrNoMaintenanceCRD is a cluster without the NodeMaintenance CRD.
var ErrNoMaintenanceCRD = errors.New(
	"the NodeMaintenance CRD (maintenance.drainctl.io/v1beta1) is not installed: kubectl apply -f deploy/crd-nodemaintenance.yaml",
)

// Maintenances reads NodeMaintenance resources through a watch-fed cache and writes them
// through the dynamic client (no generated clientset for one small resource).
type Maintenances struct {
	res      dynamic.NamespaceableResourceInterface
	factory  dynamicinformer.DynamicSharedInformerFactory
	informer cache.SharedIndexInformer

	signal notify.Signal
}

var _ ops.Maintenances = (*Maintenances)(nil)

// NewMaintenances makes the store; Start fills its cache.
func NewMaintenances(dyn dynamic.Interface) *Maintenances {
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	m := &Maintenances{res: dyn.Resource(MaintenanceGVR), factory: f, informer: f.ForResource(MaintenanceGVR).Informer()}
	notify := func(any) { m.signal.Notify() }
	_, _ = m.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify, DeleteFunc: notify,
		UpdateFunc: func(any, any) { m.signal.Notify() }})
	return m
}

// Start checks that the CRD is installed, then runs the watch until ctx ends.
func (m *Maintenances) Start(ctx context.Context, syncTimeout time.Duration) error {
	if _, err := m.res.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		if apierrors.IsNotFound(err) {
			return ErrNoMaintenanceCRD
		}
		return fmt.Errorf("reading NodeMaintenances: %w", err)
	}
	m.factory.Start(ctx.Done())
	wait, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(wait.Done(), m.informer.HasSynced) {
		return fmt.Errorf("reading NodeMaintenances: %w", wait.Err())
	}
	return nil
}

// Shutdown stops the watch (after ctx is cancelled) and waits for it.
func (m *Maintenances) Shutdown() { m.factory.Shutdown() }

// Subscribe signals after any change to a NodeMaintenance (bursts coalesce).
func (m *Maintenances) Subscribe() (<-chan struct{}, func()) { return m.signal.Subscribe() }

// List is every NodeMaintenance in the cache.
func (m *Maintenances) List() []model.NodeMaintenance {
	var out []model.NodeMaintenance
	for _, o := range m.informer.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, maintenanceModel(u))
		}
	}
	return out
}

// wire is the resource as the API serves it.
type wireMaintenance struct {
	Spec struct {
		NodeName string `json:"nodeName"`
		Reason   string `json:"reason"`
	} `json:"spec"`
	Status model.MaintenanceStatus `json:"status"`
}

func maintenanceModel(u *unstructured.Unstructured) model.NodeMaintenance {
	var w wireMaintenance
	if b, err := json.Marshal(u.Object); err == nil {
		_ = json.Unmarshal(b, &w) // fields the schema guarantees; a bad status reads as empty
	}
	return model.NodeMaintenance{Name: u.GetName(), NodeName: w.Spec.NodeName, Reason: w.Spec.Reason,
		Created: u.GetCreationTimestamp().Time, Deleting: u.GetDeletionTimestamp() != nil,
		Guarded: slices.Contains(u.GetFinalizers(), ops.MaintenanceFinalizer), Status: w.Status}
}

// SetFinalizer adds or removes drainctl's finalizer (a JSON patch guarded by the
// resourceVersion: a concurrent change is a conflict, retried by the next reconcile).
func (m *Maintenances) SetFinalizer(ctx context.Context, name string, on bool) error {
	u, err := m.res.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && !on {
		return nil // gone already: nothing left to hold
	}
	if err != nil {
		return err
	}
	fins := u.GetFinalizers()
	has := slices.Contains(fins, ops.MaintenanceFinalizer)
	if has == on {
		return nil
	}
	if on {
		fins = append(fins, ops.MaintenanceFinalizer)
	} else {
		fins = slices.DeleteFunc(fins, func(f string) bool { return f == ops.MaintenanceFinalizer })
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fins, "resourceVersion": u.GetResourceVersion()}})
	_, err = m.res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// UpdateStatus writes the status subresource.
func (m *Maintenances) UpdateStatus(ctx context.Context, name string, st model.MaintenanceStatus) error {
	// A merge patch keeps what it does not mention: a field the status no longer has is
	// written as null, which removes it (a cleared lastError must not linger).
	var fields map[string]any
	b, _ := json.Marshal(st)
	_ = json.Unmarshal(b, &fields)
	for _, k := range []string{"phase", "lastError", "lastUpdate"} {
		if _, ok := fields[k]; !ok {
			fields[k] = nil
		}
	}
	patch, _ := json.Marshal(map[string]any{"status": fields})
	_, err := m.res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// Create asks for a node's maintenance; the resource is named after the node.
func (m *Maintenances) Create(ctx context.Context, node, reason string) (string, error) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": MaintenanceGVR.GroupVersion().String(), "kind": "NodeMaintenance",
		"metadata": map[string]any{"name": node},
		"spec":     map[string]any{"nodeName": node, "reason": reason},
	}}
	_, err := m.res.Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return node, fmt.Errorf("NodeMaintenance %s already exists", node)
	}
	return node, err
}

// Delete asks for the node to be put back; the finalizer holds the resource until it is.
func (m *Maintenances) Delete(ctx context.Context, name string) error {
	err := m.res.Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
