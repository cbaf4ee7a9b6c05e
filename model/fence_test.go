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
