package campaign

import (
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Text kept in a campaign record is bounded, on a rune boundary, and says so.
func TestRecordTextIsBounded(t *testing.T) {
	long := strings.Repeat("é", 2000)
	got := bounded(long)
	if len(got) > recordTextMax || !utf8.ValidString(got) || !strings.HasSuffix(got, "(cut at 1 KiB)") {
		t.Errorf("bounded: %d bytes, valid %v, %q", len(got), utf8.ValidString(got), got[len(got)-20:])
	}
	if bounded("short") != "short" {
		t.Error("short text changed")
	}
}

// A derived campaign name says what the campaign is (its selector or nodes), stays the same
// for the same request, and is a DNS-1123 label.
func TestCampaignNamesSayWhatTheyAre(t *testing.T) {
	for _, tc := range []struct {
		selector string
		nodes    []string
		prefix   string
	}{
		{"rack=r1", nil, "roll-rack-r1-"},
		{"", []string{"compute-4", "compute-0", "compute-6"}, "roll-compute-0-compute-4-and-1-more-"},
		{"topology.kubernetes.io/zone in (az1, az2),!gpu", nil, "roll-topology-kubernetes-io-zone-in-az1-az2-"},
	} {
		name := campaignName(tc.selector, tc.nodes)
		if !strings.HasPrefix(name, tc.prefix) || len(validation.IsDNS1123Label(name)) > 0 || name != campaignName(tc.selector, tc.nodes) {
			t.Errorf("campaignName(%q, %v) = %q, want %s… and a DNS-1123 label", tc.selector, tc.nodes, name, tc.prefix)
		}
	}
	if campaignName("a=b", nil) == campaignName("a-b", nil) {
		t.Error("two selectors that read alike share a name")
	}
}
