package model

import (
	"fmt"
	"time"
)

// FenceRecord is a recovery's proof that a node's machine is off. It proves one outage, of
// the machine that booted as BootID, for the Node object NodeUID: where the node has a kubelet
// Lease, the outage after its last renewal (Heartbeat: a renewal since is a kubelet alive,
// whatever the Ready condition says, which lags it by the node lifecycle controller's 40 s);
// else the NotReady episode that began at Outage (the Ready condition's lastTransitionTime).
// A sign of life, a new episode, a new boot or a re-created Node ends what it proves; a rerun
// of the same recovery during the same outage may trust it, nothing later may.
type FenceRecord struct {
	Node      string    `json:"node"`
	NodeUID   string    `json:"nodeUID"`
	Outage    time.Time `json:"outage"`              // the Ready condition's last change when fenced
	Heartbeat time.Time `json:"heartbeat,omitempty"` // the kubelet Lease's last renewal when fenced (zero: no Lease read)
	BootID    string    `json:"bootID,omitempty"`
	How       string    `json:"how"` // "fence-cmd exited 0", "the operator's word"
	By        string    `json:"by"`
	At        time.Time `json:"at"`
}

// NewFenceRecord proves the outage the node is in now.
func NewFenceRecord(k KubeNode, how, by string, at time.Time) FenceRecord {
	return FenceRecord{
		Node:      k.Name,
		NodeUID:   k.UID,
		Outage:    outage(k.ReadySince),
		Heartbeat: k.Heartbeat,
		BootID:    k.BootID,
		How:       how,
		By:        by,
		At:        at,
	}
}

// outage is a Ready condition's transition time as the API keeps it: to the second (a
// metav1.Time written back loses what a client held below it).
func outage(t time.Time) time.Time { return t.Truncate(time.Second) }

// Proves says whether the record still proves the node's machine off, and if not why.
func (f FenceRecord) Proves(k KubeNode) (bool, string) {
	why, _ := f.check(k)
	return why == "", why
}

// Alive says whether the node has shown life since it was fenced (its kubelet renewed, it
// turned Ready, the machine booted): a recovery stops at once.
func (f FenceRecord) Alive(k KubeNode) bool {
	_, alive := f.check(k)
	return alive
}

func (f FenceRecord) check(k KubeNode) (why string, alive bool) {
	sameReady := outage(k.ReadySince).Equal(outage(f.Outage))
	switch {
	case f.Node != k.Name || f.NodeUID != k.UID:
		return "the record is for another Node object", false
	case f.BootID != k.BootID:
		return "the machine has booted since it was fenced", true
	case !f.Heartbeat.IsZero() && !k.Heartbeat.Equal(f.Heartbeat):
		return fmt.Sprintf("its kubelet's Lease was last renewed %s; it was fenced after its renewal of %s",
			stamp(k.Heartbeat), stamp(f.Heartbeat)), true
	case k.Ready && (f.Heartbeat.IsZero() || !sameReady):
		return "the node has been Ready since it was fenced", true
	case f.Heartbeat.IsZero() && !sameReady:
		return fmt.Sprintf("it proved the outage that began %s; this one began %s", stamp(f.Outage), stamp(k.ReadySince)), false
	}
	return "", false
}

// stamp is a time as a person reads it in a reason ("never" for none).
func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// Text is the record as a person reads it.
func (f FenceRecord) Text() string {
	if !f.Heartbeat.IsZero() {
		return fmt.Sprintf(
			"%s (by %s at %s), for the outage after its kubelet's last renewal at %s",
			f.How,
			f.By,
			stamp(f.At),
			stamp(f.Heartbeat),
		)
	}
	return fmt.Sprintf("%s (by %s at %s), for the outage that began %s", f.How, f.By, stamp(f.At), stamp(f.Outage))
}
