package kube

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// leasesSyncWithin bounds the wait for the first list of the kubelets' Leases.
const leasesSyncWithin = 30 * time.Second

// NodeLeaseNamespace holds the kubelets' heartbeats, a Lease per node.
const NodeLeaseNamespace = "kube-node-lease"

// KubeletHeartbeats are the renewTime of every kubelet's Lease, by node: one list, served from
// the API server's watch cache (resourceVersion 0).
func (c *Client) KubeletHeartbeats(ctx context.Context) (map[string]time.Time, error) {
	list, err := c.cs.CoordinationV1().Leases(NodeLeaseNamespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("reading the kubelets' leases in %s: %w", NodeLeaseNamespace, err)
	}
	out := make(map[string]time.Time, len(list.Items))
	for _, l := range list.Items {
		if l.Spec.RenewTime != nil {
			out[l.Name] = l.Spec.RenewTime.Time
		}
	}
	return out, nil
}

// WatchKubeletHeartbeats calls renewed with each kubelet Lease's renewTime as the API server
// tells it (a watch: a renewal is seen within the moment it is made, where a read every pass
// would see it a pass late), and with a zero time when a Lease is deleted (its Node was),
// until ctx ends. It returns once the first list is in; a watch
// whose first list is not in within leasesSyncWithin is stopped, and said.
func (c *Client) WatchKubeletHeartbeats(ctx context.Context, renewed func(node string, renew time.Time)) error {
	tell := func(obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok && l.Spec.RenewTime != nil {
			renewed(l.Name, l.Spec.RenewTime.Time)
		}
	}
	leases := c.cs.CoordinationV1().Leases(NodeLeaseNamespace)
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return leases.List(ctx, o) },
		WatchFuncWithContext: leases.Watch,
	}
	_, ctrl := cache.NewInformerWithOptions(
		cache.InformerOptions{ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, c.cs), ObjectType: &coordinationv1.Lease{},
			Handler: cache.ResourceEventHandlerFuncs{AddFunc: tell, UpdateFunc: func(_, obj any) { tell(obj) },
				DeleteFunc: func(obj any) {
					if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
						_, name, _ := cache.SplitMetaNamespaceKey(key)
						renewed(name, time.Time{})
					}
				}}},
	)
	parent := ctx
	ctx, stop := context.WithCancel(ctx)
	context.AfterFunc(parent, stop) // the watch lives as long as the caller's context
	go ctrl.RunWithContext(ctx)
	synced, cancel := context.WithTimeout(ctx, leasesSyncWithin)
	defer cancel()
	if !cache.WaitForCacheSync(synced.Done(), ctrl.HasSynced) {
		stop()
		return fmt.Errorf("watching the kubelets' leases in %s: the first list is not in after %s", NodeLeaseNamespace, leasesSyncWithin)
	}
	return nil
}

// kubeletHeartbeat is the node's kubelet Lease's renewTime (zero: no Lease, or not ours to read:
// a person's identity may not read kube-node-lease; it then proves by the Ready condition).
func (c *Client) kubeletHeartbeat(ctx context.Context, node string) (time.Time, error) {
	l, err := c.cs.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, fmt.Errorf("reading the kubelet's lease of %s: %w", node, err)
	case l.Spec.RenewTime == nil:
		return time.Time{}, nil
	}
	return l.Spec.RenewTime.Time, nil
}
