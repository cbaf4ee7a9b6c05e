package ops

import (
	"testing"

	"github.com/drainctl/drainctl/model"
)

// A return's plan puts the VM where its own read says, with the size its host's last read gave
// it (Placement: a volume-backed VM holds no disk), unless it was resized since: one server's
// read says only its flavor's size, and a return judged on that could find home short of disk.
func TestAVMReadAloneKeepsTheSizeItHolds(t *testing.T) {
	base := model.NovaSnapshot{VMs: []model.VM{{ID: "a", Host: "h1", Flavor: "m1", VCPUs: 2, RAMMB: 4096, DiskGB: 0}}}
	seen := model.VM{ID: "a", Host: "h2", Flavor: "m1", VCPUs: 2, RAMMB: 4096, DiskGB: 40}
	if got := sizedAsRead(base, seen); got.DiskGB != 0 || got.Host != "h2" {
		t.Errorf("same flavor: disk %d on %s, want 0 (what it holds) on h2 (where it was read)", got.DiskGB, got.Host)
	}
	seen.Flavor, seen.RAMMB = "m2", 8192
	if got := sizedAsRead(base, seen); got.DiskGB != 40 || got.RAMMB != 8192 {
		t.Errorf("resized since: %+v, want its new flavor's size", got)
	}
}
