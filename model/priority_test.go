package model

import (
	"strings"
	"testing"
)

// An owner's recovery priority is heard within the operator's bounds, and a value that is no
// priority is set aside with a bounded note: the operator's is taken.
func TestAnOwnersPriorityWithinTheOperatorsBounds(t *testing.T) {
	four, six := 4, 6
	cfg := PriorityConfig{Flavors: map[string]int{"m1.large": six}, OwnerMax: &four}
	vm := func(asked, project string) VM {
		return VM{Name: "db-0", Flavor: "m1.large", ProjectID: project, PriorityAsked: asked}
	}
	for _, tc := range []struct {
		vm     VM
		honour Honour
		want   int
		bad    string
	}{
		{vm("9", "p1"), Honour{}, 4, ""},                                     // bounded by owner_max
		{vm("2", "p1"), Honour{}, 2, ""},                                     // lowered: always heard
		{vm("2", "p2"), Honour{Projects: []string{"p1"}}, 6, "not honoured"}, // not heard: the operator's
		{vm("NaN", "p1"), Honour{}, 6, "is no priority"},
		{vm(strings.Repeat("9", 100000), "p1"), Honour{}, 6, "is no priority"},
	} {
		p, from, bad := cfg.Of(tc.vm, tc.honour)
		if p != tc.want || !strings.Contains(bad, tc.bad) || len(bad) > 300 {
			t.Errorf("%.20q in %s: %d from %s (%.300s); want %d, noted %q", tc.vm.PriorityAsked, tc.vm.ProjectID, p, from, bad, tc.want, tc.bad)
		}
	}
}
