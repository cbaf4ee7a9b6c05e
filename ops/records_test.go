package ops

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drainctl/drainctl/model"
)

// A journal's cold move proves a migration by its UUID alone: not a VM's later move by
// someone else, not one whose UUID was never read; an old journal (bare VM IDs) still reads.
func TestColdMoveProvesItsMigrationOnly(t *testing.T) {
	mine := ColdMove{VM: "vm-1", Migration: "m-1"}
	for _, tc := range []struct {
		m    model.Migration
		want bool
	}{
		{model.Migration{InstanceID: "vm-1", UUID: "m-1"}, true},
		{model.Migration{InstanceID: "vm-1", UUID: "m-2"}, false}, // a colleague's move of the same VM, after ours
		{model.Migration{InstanceID: "vm-2", UUID: "m-1"}, false},
	} {
		if got := mine.Proves(tc.m); got != tc.want {
			t.Errorf("Proves(%+v) = %v", tc.m, got)
		}
	}
	if (ColdMove{VM: "vm-1"}).Proves(model.Migration{InstanceID: "vm-1", UUID: "m-1"}) {
		t.Error("a move whose migration was never read proves one")
	}
	var j Journal
	if err := json.Unmarshal([]byte(`{"op":"evacuate","coldMoves":["vm-1",{"vm":"vm-2","migration":"m-9"}]}`), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.ColdMoves) != 2 || j.ColdMoves[0].VM != "vm-1" || j.ColdMoves[1].Migration != "m-9" {
		t.Errorf("journal: %+v", j.ColdMoves)
	}
}

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
