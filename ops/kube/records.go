package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// drainctl's own records (a campaign's progress) are ConfigMaps in its namespace, beside its
// leases: every process and a rerun on another machine read the same one, and RBAC grants
// them with the leases (deploy/leases-role.yaml).

const recordKey = "record.json"

// RecordName is the ConfigMap that holds the record name.
func RecordName(name string) string { return "drainctl-" + name }

// Record reads the record; found is false when there is none.
func (c *Client) Record(ctx context.Context, name string) ([]byte, bool, error) {
	cm, err := c.cs.CoreV1().ConfigMaps(LeaseNamespace).Get(ctx, RecordName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading configmap %s/%s: %w", LeaseNamespace, RecordName(name), err)
	}
	return []byte(cm.Data[recordKey]), true, nil
}

// SaveRecord writes the record, creating it (and drainctl's namespace) when missing. One
// process writes a record at a time (it holds the record's lease), so the last write wins.
func (c *Client) SaveRecord(ctx context.Context, name string, data []byte) error {
	cms := c.cs.CoreV1().ConfigMaps(LeaseNamespace)
	cm, err := cms.Get(ctx, RecordName(name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: RecordName(name), Namespace: LeaseNamespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "drainctl"}},
			Data: map[string]string{recordKey: string(data)}}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) && c.ensureLeaseNamespace(ctx) == nil {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		}
	case err == nil:
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[recordKey] = string(data)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing configmap %s/%s: %w", LeaseNamespace, RecordName(name), err)
	}
	return nil
}
