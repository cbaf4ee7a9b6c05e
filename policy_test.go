package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/ops/sim"
)

// Nova's policy, held to deploy/README.md: a user granted exactly the rules it lists (no
// admin role) reads the cluster, evacuates a node (live and cold moves) and puts it back; a
// user lacking any required rule is refused with Nova's words, which name the rule, and
// drainctl says so (a hidden host is named too: drainctl never takes a node whose VMs it
// cannot see for an empty one).
func TestNovaPolicyOfDeployREADME(t *testing.T) {
	c := newAutoCluster(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	c.world.AddServer("batch-off", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.world.Stop("batch-off")
	rules, optional := simtest.DeployRules(t, "deploy/README.md")
	user := func(name string, without string) []string {
		var granted []string
		for _, r := range rules {
			if r != without {
				granted = append(granted, r)
			}
		}
		env := c.srv.AddUser(sim.User{Name: name, Password: "pw-" + name, Domain: "Default", Project: "ops", Rules: granted})
		return env
	}
	operator := user("operator", "")
	for _, verb := range [][]string{{"list"}, {"doctor"}, {"evacuate", c0}, {"uncordon", c0}} {
		r := c.drainctl(t, operator, append([]string{"--auto"}, verb...)...)
		if r.code != 0 && !(verb[0] == "doctor" && r.code == 5) {
			t.Fatalf("%v with exactly deploy/README.md's rules: exit %d\n%s", verb, r.code, r.stderr)
		}
	}
	if vm, _ := c.world.ServerByName("batch-off"); vm.Host == c0 || vm.Status != "SHUTOFF" {
		t.Errorf("batch-off was not moved cold: %s on %s", vm.Status, vm.Host)
	}
	// Each rule the reads need, taken away: the read is refused, naming the rule.
	reads := []string{"os_compute_api:os-services:list", "os_compute_api:os-hypervisors:list-detail", "os_compute_api:servers:detail",
		"os_compute_api:servers:detail:get_all_tenants", "os_compute_api:os-migrations:index", "os_compute_api:os-extended-server-attributes",
		"placement:resource_providers:list", "placement:resource_providers:inventories:list", "placement:resource_providers:allocations:list"}
	for i, rule := range reads {
		if !slices.Contains(rules, rule) || optional[rule] {
			t.Errorf("deploy/README.md does not list %s as required", rule)
			continue
		}
		r := c.drainctl(t, user("reader"+string(rune('a'+i)), rule), "--auto", "list")
		if r.code == 0 || !strings.Contains(r.stderr, rule) {
			t.Errorf("list without %s: exit %d, the rule not named:\n%s", rule, r.code, r.stderr)
		}
	}
	// A rule an evacuation needs, taken away: refused at that step, the rule named; the node
	// is put back by an operator who has it.
	for i, rule := range []string{"os_compute_api:os-services:update", "os_compute_api:os-migrate-server:migrate_live"} {
		r := c.drainctl(t, user("mover"+string(rune('a'+i)), rule), "--auto", "evacuate", c1) // app-1 lives there
		if r.code == 0 || !strings.Contains(r.stderr, rule) {
			t.Errorf("evacuate without %s: exit %d, the rule not named:\n%s", rule, r.code, r.stderr)
		}
		if r := c.drainctl(t, operator, "--auto", "rollback", c1); r.code != 0 {
			t.Fatalf("rollback: exit %d\n%s", r.code, r.stderr)
		}
	}
}
