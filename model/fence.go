package model

import (
	"fmt"
	"time"
)

// FenceRecord is a recovery's proof that a node's machine is off. It proves one outage: the
// NotReady episode that began at Outage (the Ready condition's lastTransitionTime), of the
// machine that booted as BootID, for the Node object NodeUID. A node seen Ready, a new
// episode, a new boot or a re-created Node ends what it proves; a rerun of the same recovery
// during the same outage may trust it, nothing later may.
type FenceRecord struct {
	Node    string    `json:"node"`
	NodeUID string    `json:"nodeUID"`
	Outage  time.Time `json:"outage"` // the NotReady episode's start
	BootID  string    `json:"bootID,omitempty"`
	How     string    `json:"how"` // "fence-cmd exited 0", "the operator's word"
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

// NewFenceRecord proves the outage the node is in now.
func NewFenceRecord(k KubeNode, how, by string, at time.Time) FenceRecord {
	return FenceRecord{Node: k.Name, NodeUID: k.UID, Outage: outage(k.ReadySince), BootID: k.BootID, How: how, By: by, At: at}
}

// outage is a Ready condition's transition time as the API keeps it: to the second (a
// metav1.Time written back loses what a client held below it).
func outage(t time.Time) time.Time { return t.Truncate(time.Second) }

// Proves says whether the record still proves the node's machine off, and if not why.
func (f FenceRecord) Proves(k KubeNode) (bool, string) {
	switch {
	case f.Node != k.Name || f.NodeUID != k.UID:
		return false, "the record is for another Node object"
	case k.Ready:
		return false, "the node has been Ready since it was fenced"
	case !outage(k.ReadySince).Equal(outage(f.Outage)):
		return false, fmt.Sprintf("it proved the outage that began %s; this one began %s",
			f.Outage.UTC().Format(time.RFC3339), k.ReadySince.UTC().Format(time.RFC3339))
	case f.BootID != k.BootID:
		return false, "the machine has booted since it was fenced"
	}
	return true, ""
}

// Text is the record as a person reads it.
func (f FenceRecord) Text() string {
	return fmt.Sprintf("%s (by %s at %s), for the outage that began %s", f.How, f.By,
		f.At.UTC().Format(time.RFC3339), f.Outage.UTC().Format(time.RFC3339))
}
