package kube

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
