package main

import (
	"strings"
	"testing"

	"github.com/drainctl/drainctl/ops/sim"
)

// --to applies the rules an evacuation's destination choice applies (the target picker
// offers the same hosts): a host holding a member of the VM's hard anti-affinity group, or
// a disabled one, is refused before anything changes (exit 3); and a requested host the
// scheduler turns down (NoValidHost) is not asked for again: the same answer would come.
func TestMigrateTargetsFollowTheRules(t *testing.T) {
	c := newAutoCluster(t)
	c1, c2 := c.px+"-c1", c.px+"-c2"
	c.world.AddServerGroup("db", "anti-affinity", "db-1", "app-1") // app-1 is on c1
	r := c.drainctl(t, nil, "--auto", "plan", "migrate", "db-1", "--to", c1)
	if r.code != 3 || !strings.Contains(r.stdout+r.stderr, "anti-affinity") {
		t.Fatalf("--to a host of the VM's anti-affinity group: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	c.world.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) {
		h[c2].Enabled, h[c2].DisabledReason = false, "rack work"
	})
	r = c.drainctl(t, nil, "--auto", "migrate", "db-2", "--to", c2)
	if r.code != 3 || !strings.Contains(r.stderr, "disabled") {
		t.Fatalf("--to a disabled host: exit %d\n%s", r.code, r.stderr)
	}
	db2, _ := c.world.ServerByName("db-2")
	if n := len(c.world.MigrationStatuses(db2.ID)); n != 0 {
		t.Fatalf("refused, yet %d migration(s) of db-2", n)
	}
	c.world.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) { h[c2].Enabled, h[c2].DisabledReason = true, "" })
	c.world.SetNoValidHost(true)
	r = c.drainctl(t, nil, "--auto", "migrate", "db-2", "--to", c2)
	if r.code != 1 || !strings.Contains(r.stderr, "No valid host") {
		t.Fatalf("a requested host turned down: exit %d\n%s", r.code, r.stderr)
	}
	if n := len(c.world.MigrationStatuses(db2.ID)); n != 1 {
		t.Errorf("NoValidHost for a requested host was asked %d times, want once\n%s", n, r.stderr)
	}
}
