package model

import "testing"

// A share of unhealthy nodes never rounds to none: 5% of 10 compute nodes is one node, not
// zero (which would hold every recovery for one dead node).
func TestAShareOfUnhealthyNodesIsAtLeastOne(t *testing.T) {
	for _, tc := range []struct {
		limit string
		n     int
		want  int
	}{{"5%", 10, 1}, {"30%", 10, 3}, {"30%", 2, 1}, {"2", 10, 2}} {
		if got := (RecoverConfig{MaxUnhealthy: tc.limit}).UnhealthyLimit(tc.n); got != tc.want {
			t.Errorf("%s of %d: %d, want %d", tc.limit, tc.n, got, tc.want)
		}
	}
}
