package model

import (
	"testing"
	"time"
)

// A group's budget is its members' word: the smallest valid one holds ("N", or "P%" of the
// group rounded up, at least 1); a server group's members are its members whatever their
// metadata says of a group; a word that is no budget ("0", "many", "150%") is none.
func TestGroupBudgets(t *testing.T) {
	vms := []VM{
		{ID: "1", Name: "db-0", GroupAsked: "db", MaxDisruptedAsked: "2"},
		{ID: "2", Name: "db-1", GroupAsked: "db", MaxDisruptedAsked: "1"},
		{ID: "3", Name: "db-2", GroupAsked: "db"},
		{ID: "4", Name: "web-0", MaxDisruptedAsked: "25%"},
		{ID: "5", Name: "web-1"}, {ID: "6", Name: "web-2"}, {ID: "7", Name: "web-3"}, {ID: "8", Name: "web-4"},
		{ID: "9", Name: "x-0", GroupAsked: "x", MaxDisruptedAsked: "0"},
		{ID: "10", Name: "x-1", GroupAsked: "x", MaxDisruptedAsked: "150%"},
	}
	groups := []ServerGroup{{Name: "web", Policy: "soft-anti-affinity", Members: []string{"4", "5", "6", "7", "8"}}}
	got := GroupBudgets(vms, groups, GroupRules{})
	if b := got["group db"]; b == nil || b.Max != 1 || b.From != "db-1" || len(b.Members) != 3 {
		t.Errorf("group db: %+v; want 1 at once (db-1's word), 3 members", b)
	}
	if b := got["server group web"]; b == nil || b.Max != 2 || len(b.Members) != 5 {
		t.Errorf("server group web: %+v; want 25%% of 5 rounded up: 2", b)
	}
	if b, ok := got["group x"]; ok {
		t.Errorf("group x: %+v; want no budget (0 and 150%% are none)", b)
	}
}

// The operator's budget ([policy.groups]) holds a group whose owners name none, and an
// owner's word may only tighten it.
func TestTheOperatorsGroupBudget(t *testing.T) {
	vms := []VM{{ID: "1", Name: "a-0", GroupAsked: "a"}, {ID: "2", Name: "a-1", GroupAsked: "a"},
		{ID: "3", Name: "b-0", GroupAsked: "b", MaxDisruptedAsked: "5"}, {ID: "4", Name: "b-1", GroupAsked: "b", MaxDisruptedAsked: "1"}}
	got := GroupBudgets(vms, nil, GroupRules{Budgets: map[string]string{"a": "50%", "b": "2"}})
	if b := got["group a"]; b == nil || b.Max != 1 || b.From != "[policy.groups]" {
		t.Errorf("group a: %+v; want the operator's 50%% of 2: 1", b)
	}
	if b := got["group b"]; b == nil || b.Max != 1 || b.From != "b-1" {
		t.Errorf("group b: %+v; want b-1's 1 (tighter than the operator's 2; b-0's 5 looser)", b)
	}
}

// A group's budget in a campaign's forecast (#57.1): its members on the nodes emptied go so
// many at once, so they take at least their copy time over the budget; a group no larger than
// its budget there, or not there at all, is no floor.
func TestGroupFloors(t *testing.T) {
	member := func(id, group, max string) VM {
		return VM{ID: id, Name: "vm-" + id, RAMMB: 1024, GroupAsked: group, MaxDisruptedAsked: max}
	}
	inv := Inventory{Nodes: []Node{
		{Name: "a", VMs: []VM{member("1", "db", "1"), member("2", "web", "2")}},
		{Name: "b", VMs: []VM{member("3", "db", ""), member("4", "web", "")}},
		{Name: "c", VMs: []VM{member("5", "db", ""), member("6", "cache", "1")}},
		{Name: "d", VMs: []VM{member("7", "cache", "")}},
	}}
	got := GroupFloors(inv, []string{"a", "b", "c"}, 512, GroupRules{})
	if len(got) != 1 || got[0].Group != "group db" || got[0].Members != 3 || got[0].Max != 1 || got[0].Least != 6*time.Second {
		t.Errorf("%+v; want group db alone: 3 members of 1 GiB one at a time at 512 MiB/s, 6s (web: 2 at once, cache: 1 there)", got)
	}
}

// A metadata group is its project's, and an owner is heard only as [policy.maintenance] honour
// says: another tenant naming the same group forms a group of its own (it can neither join nor
// tighten it), and a project left out of honour names no group and no budget.
func TestAGroupIsItsProjectsAndHeardUnderHonour(t *testing.T) {
	vms := []VM{
		{ID: "1", Name: "db-0", ProjectID: "p1", GroupAsked: "db", MaxDisruptedAsked: "2"},
		{ID: "2", Name: "db-1", ProjectID: "p1", GroupAsked: "db"},
		{ID: "3", Name: "evil", ProjectID: "p2", GroupAsked: "db", MaxDisruptedAsked: "1"},
		{ID: "4", Name: "mute", ProjectID: "p3", GroupAsked: "db", MaxDisruptedAsked: "1"},
	}
	got := GroupBudgets(vms, nil, GroupRules{Budgets: map[string]string{"db": "3"}, Honour: Honour{Projects: []string{"p1", "p2"}}})
	if b := got["group db (project p1)"]; b == nil || b.Max != 2 || len(b.Members) != 2 || b.Members["3"] {
		t.Errorf("p1's group db: %+v; want its 2 members, db-0's 2", b)
	}
	if b := got["group db (project p2)"]; b == nil || b.Max != 1 || len(b.Members) != 1 {
		t.Errorf("p2's group db: %+v; want evil alone", b)
	}
	if b, ok := got["group db (project p3)"]; ok {
		t.Errorf("p3, not honoured, formed a group: %+v", b)
	}
}

// A budget says whose word sets it: the operator's table by its name, a member's metadata by
// its key and the member.
func TestAGroupBudgetSaysWhoseWordItIs(t *testing.T) {
	vms := []VM{{ID: "1", Name: "a-0", GroupAsked: "a"}, {ID: "2", Name: "b-0", GroupAsked: "b", MaxDisruptedAsked: "1"}}
	got := GroupBudgets(vms, nil, GroupRules{Budgets: map[string]string{"a": "1"}})
	if s := got["group a"].Source(); s != "[policy.groups]" {
		t.Errorf("the operator's budget says %q", s)
	}
	if s := got["group b"].Source(); s != "drainctl:max-disrupted of b-0" {
		t.Errorf("an owner's budget says %q", s)
	}
}
