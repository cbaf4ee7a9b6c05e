package controllers

import (
	"testing"
	"time"
)

// A kubelet whose Lease is gone (its Node deleted: a scale-down) is no kubelet gone silent: it
// leaves the watch, whether the watch told its deletion or a list no longer holds it, and no
// pass judges it again (a pass that judges reads the whole cluster).
func TestAGoneLeaseIsNoSilentKubelet(t *testing.T) {
	now := time.Now()
	k := kubelets{beats: watched{}}
	k.renewed("a", now, now)
	k.renewed("b", now, now)
	k.renewed("c", now, now)
	k.renewed("a", time.Time{}, now)              // deleted, told by the watch
	k.listed(map[string]time.Time{"c": now}, now) // b absent from a list
	silent, _ := k.silentNow(now.Add(time.Hour), time.Minute)
	if len(silent) != 1 || !silent["c"] {
		t.Errorf("silent %v; want only c, whose Lease is still there", silent)
	}
}
