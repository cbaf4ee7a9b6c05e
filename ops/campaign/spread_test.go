package campaign

import (
	"slices"
	"testing"
)

// The order walks the failure domains round-robin, each domain's nodes in their own order,
// the domains in the order their first node comes.
func TestSpreadInterleavesDomains(t *testing.T) {
	zone := map[string]string{"a1": "a", "a2": "a", "a3": "a", "b1": "b", "c1": "c", "b2": "b", "x": ""}
	got := spread([]string{"a1", "a2", "b1", "a3", "c1", "b2", "x"}, func(n string) string { return zone[n] })
	want := []string{"a1", "b1", "c1", "x", "a2", "b2", "a3"}
	if !slices.Equal(got, want) {
		t.Errorf("spread: %v, want %v", got, want)
	}
}
