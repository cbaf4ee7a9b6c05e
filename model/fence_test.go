package model

import (
	"testing"
	"time"
)

// A fence proves the outage it was made in, read to the second as the API keeps a
// transition time (a node written back loses what a client held below the second), and no
// other: not after a return, not after a reboot, not for another Node object.
func TestAFenceProvesItsOutageOnly(t *testing.T) {
	since := time.Date(2026, 11, 26, 1, 44, 0, 123456789, time.UTC)
	k := KubeNode{Name: "n", UID: "u1", ReadySince: since, BootID: "b1"}
	f := NewFenceRecord(k, "the operator's word", "me", since.Add(time.Minute))
	written := k
	written.ReadySince = since.Truncate(time.Second)
	if ok, why := f.Proves(written); !ok {
		t.Errorf("the same outage, read back to the second: %s", why)
	}
	for name, later := range map[string]KubeNode{
		"Ready":        {Name: "n", UID: "u1", Ready: true, ReadySince: since, BootID: "b1"},
		"a new outage": {Name: "n", UID: "u1", ReadySince: since.Add(time.Hour), BootID: "b1"},
		"a reboot":     {Name: "n", UID: "u1", ReadySince: since, BootID: "b2"},
		"a new Node":   {Name: "n", UID: "u2", ReadySince: since, BootID: "b1"},
	} {
		if ok, _ := f.Proves(later); ok {
			t.Errorf("%s: the fence still proves it", name)
		}
	}
}

// A fence made while the kubelet's Lease stood still (the node still Ready by its condition:
// the node lifecycle controller marks it 40 s later) proves that outage while the Lease stays
// put, through the NotReady that follows; a renewal, a Ready episode of its own or a reboot is
// life, and stops a recovery at once.
func TestAFenceOfASilentKubeletEndsAtItsNextRenewal(t *testing.T) {
	readySince := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	renewed := time.Date(2026, 11, 26, 1, 44, 0, 123456000, time.UTC)
	k := KubeNode{Name: "n", UID: "u1", Ready: true, ReadySince: readySince, Heartbeat: renewed, BootID: "b1"}
	f := NewFenceRecord(k, "the fence command exited 0", "me", renewed.Add(16*time.Second))
	notReady := k
	notReady.Ready, notReady.ReadySince = false, renewed.Add(40*time.Second)
	for name, same := range map[string]KubeNode{"still Ready by its condition": k, "marked NotReady since": notReady} {
		if ok, why := f.Proves(same); !ok || f.Alive(same) {
			t.Errorf("%s: %s", name, why)
		}
	}
	if k.Outage() != renewed || notReady.Outage() != renewed {
		t.Errorf("the outage's name moved with the Ready condition: %s, %s", k.Outage(), notReady.Outage())
	}
	renewedAgain, readyAgain, rebooted, noLease := notReady, notReady, k, k
	renewedAgain.Heartbeat = renewed.Add(time.Minute)
	readyAgain.Ready, readyAgain.ReadySince = true, renewed.Add(time.Minute)
	rebooted.BootID = "b2"
	noLease.Heartbeat = time.Time{}
	for name, later := range map[string]KubeNode{"a renewal": renewedAgain, "Ready again": readyAgain, "a reboot": rebooted, "its Lease gone": noLease} {
		if ok, _ := f.Proves(later); ok || !f.Alive(later) {
			t.Errorf("%s: proves %v, alive %v", name, ok, f.Alive(later))
		}
	}
}
