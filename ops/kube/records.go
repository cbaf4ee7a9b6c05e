package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// drainctl's own records (a campaign's progress, a recovery's fence) are ConfigMaps in its
// namespace, beside its leases: every process and a rerun on another machine read the same
// one. Only the operators' Role may write them (deploy/operator-rbac.yaml): no identity a
// node holds (its kubelet, the per-node daemon) can forge one, as it could a Node annotation.

const (
	recordKey = "record.json"
	// WriterAnnotation names the Kubernetes user who last wrote a record, as the API server
	// authenticated it. deploy/records-policy.yaml refuses a write whose annotation is not the
	// writer's own name: with it installed, the annotation is the API server's word, not the
	// writer's claim.
	WriterAnnotation = "drainctl.io/writer"
	// recordLabel marks drainctl's records, so that they can be listed by kind.
	recordLabel = "drainctl.io/record"
)

// RecordKind is one kind of record: the ConfigMap's name (NODE or NAME stands for the node's
// or the campaign's) and what it holds.
type RecordKind struct{ Kind, Name, Holds string }

// RecordKinds are drainctl's records, one row a kind. SaveRecord writes none without a row,
// and the reference's table of records is made from these rows.
var RecordKinds = []RecordKind{
	{"campaign", "drainctl-campaign-NAME", "where each node of a rolling campaign stands, and how it runs (its parallelism, " +
		"budgets, window); a node counts as done on resume only while the node names the campaign too"},
	{"fence", "drainctl-fence-NODE", "a machine proven off for one outage (a fence command's exit 0, or a person's word), " +
		"with its boot ID and Node UID: it proves nothing of another outage"},
	{"machine", "drainctl-machine-NODE", "the system UUID the Node reported when drainctl first saw it: a fence of a Node " +
		"that reports another machine is refused"},
	{"pause", "drainctl-pause-recovery", "every automatic recovery held, by whom and why, until a person resumes it"},
	{"proactive", "drainctl-proactive-NODE", "a degrading host's evacuation ([proactive]): what marked it, what was done " +
		"and its outcome, the ledger of its VMs' moves; one episode until its triggers clear"},
	{"recovery", "drainctl-recovery-NODE", "one outage's recovery: what each VM became (rebuilt where, left and why), " +
		"who recovers and with which options"},
	{"storm", "drainctl-storm", "the storm guard's last storm: when it began and ended, every process's cooldown counted from it"},
}

// RecordName is the ConfigMap that holds the record name. A name too long for an object
// (node names may take 253 characters) keeps its start and gains a hash of the whole.
func RecordName(name string) string {
	n := "drainctl-" + name
	if len(n) <= 253 {
		return n
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(n[:253-11], ".-") + "-" + hex.EncodeToString(sum[:])[:10]
}

// recordKind is the record name's kind: "campaign" for "campaign-x", "fence" for "fence-n".
func recordKind(name string) string {
	kind, _, _ := strings.Cut(name, "-")
	return kind
}

// Record reads the record; found is false when there is none.
func (c *Client) Record(ctx context.Context, name string) ([]byte, bool, error) {
	cm, err := c.cs.CoreV1().ConfigMaps(c.ns).Get(ctx, RecordName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading configmap %s/%s: %w", c.ns, RecordName(name), err)
	}
	return []byte(cm.Data[recordKey]), true, nil
}

// RecordWriter reads the record with the Kubernetes user who last wrote it ("" when the
// record names none: written before drainctl kept it, or by hand).
func (c *Client) RecordWriter(ctx context.Context, name string) (data []byte, writer string, found bool, err error) {
	cm, err := c.cs.CoreV1().ConfigMaps(c.ns).Get(ctx, RecordName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("reading configmap %s/%s: %w", c.ns, RecordName(name), err)
	}
	return []byte(cm.Data[recordKey]), cm.Annotations[WriterAnnotation], true, nil
}

// User is this client's Kubernetes user as the API server authenticates it (a
// SelfSubjectReview, kept once answered; asked again after a failure, so that one dropped
// request does not leave every later record unnamed); "" when it cannot say.
func (c *Client) User(ctx context.Context) string {
	c.userMu.Lock()
	defer c.userMu.Unlock()
	if c.user == "" {
		r, err := c.cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err == nil {
			c.user = r.Status.UserInfo.Username
		}
	}
	return c.user
}

// Records lists the records of one kind ("campaign", "fence"), by record name.
func (c *Client) Records(ctx context.Context, kind string) (map[string][]byte, error) {
	list, err := c.cs.CoreV1().ConfigMaps(c.ns).List(ctx, metav1.ListOptions{LabelSelector: recordLabel + "=" + kind})
	if err != nil {
		return nil, fmt.Errorf("listing configmaps in %s: %w", c.ns, err)
	}
	out := make(map[string][]byte, len(list.Items))
	for _, cm := range list.Items {
		out[strings.TrimPrefix(cm.Name, "drainctl-")] = []byte(cm.Data[recordKey])
	}
	return out, nil
}

// DeleteRecord removes the record; one already gone is no error.
func (c *Client) DeleteRecord(ctx context.Context, name string) error {
	c.remember(name, nil)
	err := c.cs.CoreV1().ConfigMaps(c.ns).Delete(ctx, RecordName(name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting configmap %s/%s: %w", c.ns, RecordName(name), err)
	}
	return nil
}

// SaveRecord writes the record, creating it (and drainctl's namespace) when missing. One
// process writes a record at a time (it holds the record's lease), so the last write wins.
func (c *Client) SaveRecord(ctx context.Context, name string, data []byte) error {
	if !slices.ContainsFunc(RecordKinds, func(k RecordKind) bool { return k.Kind == recordKind(name) }) {
		return fmt.Errorf("record %q: no kind %q in kube.RecordKinds (a record's kind is a row there first)", name, recordKind(name))
	}
	cms := c.cs.CoreV1().ConfigMaps(c.ns)
	labels := map[string]string{"app.kubernetes.io/managed-by": "drainctl", recordLabel: recordKind(name)}
	writer := map[string]string{WriterAnnotation: c.User(ctx)}
	if cm := c.lastWritten(name); cm != nil { // as written last: stale (another wrote since) is refused
		cm.Annotations[WriterAnnotation] = writer[WriterAnnotation]
		cm.Data[recordKey] = string(data)
		out, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err == nil {
			c.remember(name, out)
			return nil
		}
		c.remember(name, nil)
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("writing configmap %s/%s: %w", c.ns, RecordName(name), err)
		}
	}
	var out *corev1.ConfigMap
	cm, err := cms.Get(ctx, RecordName(name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: RecordName(name), Namespace: c.ns, Labels: labels, Annotations: writer},
			Data:       map[string]string{recordKey: string(data)},
		}
		out, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) && c.ensureLeaseNamespace(ctx) == nil {
			out, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		}
	case err == nil:
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		for k, v := range labels { // records written before the kind label gain it
			cm.Labels[k] = v
		}
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[WriterAnnotation] = writer[WriterAnnotation]
		cm.Data[recordKey] = string(data)
		out, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing configmap %s/%s: %w", c.ns, RecordName(name), err)
	}
	c.remember(name, out)
	return nil
}

// lastWritten is a copy of the record as this client last wrote it (nil: none known).
func (c *Client) lastWritten(name string) *corev1.ConfigMap {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	cm := c.written[name]
	if cm == nil || cm.Data == nil || cm.Annotations == nil {
		return nil
	}
	return cm.DeepCopy()
}

// remember keeps the record as written (nil forgets it).
func (c *Client) remember(name string, cm *corev1.ConfigMap) {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	if c.written == nil {
		c.written = map[string]*corev1.ConfigMap{}
	}
	if cm == nil {
		delete(c.written, name)
		return
	}
	c.written[name] = cm
}
