package model

import (
	"fmt"
	"testing"
)

func gib(n int64) int64 { return n << 10 }

// failoverZone is n hosts of 64 GiB and 16 vCPU in zone z, each running vms[i] VMs of 8 GiB
// and 2 vCPU, the rest of it free.
func failoverZone(z string, vms ...int) []FailoverHost {
	var out []FailoverHost
	for i, n := range vms {
		h := FailoverHost{Name: fmt.Sprintf("%s-%d", z, i), Zone: z, Takes: true, CapMB: float64(gib(64)), CapVCPU: 16}
		for j := range n {
			h.VMs = append(h.VMs, VM{Name: fmt.Sprintf("%s-vm-%d", h.Name, j), RAMMB: gib(8), VCPUs: 2})
		}
		h.FreeMB, h.FreeVCPU = float64(gib(64)-int64(n)*gib(8)), float64(16-2*n)
		out = append(out, h)
	}
	return out
}

// Room for one host's death: three hosts of 64 GiB running 4, 4 and 2 VMs of 8 GiB: the
// largest's 32 GiB fits in the 64 GiB the two others have free; two deaths (32 + 32 GiB
// into 48) leave 16 GiB short. With one host emptied (it takes nothing, its VMs on the others:
// 48 and 32 GiB of VMs), the largest's death finds 32 GiB free for its 48: room for none.
func TestFailoverRoomHoldsTheLargestHostsVMs(t *testing.T) {
	hosts := failoverZone("a", 4, 4, 2)
	if z := FailoverRooms(hosts, FailoverNeed{Tolerate: 1})[0]; z.Tolerated != 1 || z.Short() || z.SpareMB != float64(gib(112)) {
		t.Errorf("one death asked: %+v, want held, 112 GiB spare", z)
	}
	z := FailoverRooms(hosts, FailoverNeed{Tolerate: 2})[0]
	if z.Tolerated != 1 || z.ShortMB != float64(gib(16)) || z.ShortVCPU != 4 {
		t.Errorf("two deaths asked: %+v, want 1 tolerated, short 16 GiB and 4 vCPU", z)
	}
	emptied := failoverZone("a", 0, 6, 4)
	emptied[0].Takes = false
	if z := FailoverRooms(emptied, FailoverNeed{Tolerate: 1})[0]; z.Tolerated != 0 || z.ShortMB != float64(gib(16)) {
		t.Errorf("one host emptied: %+v, want room for 0 of 1, short 16 GiB (48 GiB of VMs, 32 free)", z)
	}
}

// A VM's rules bind its rebuild as they bind its move: a VM pinned to zone a finds no room in
// zone b, and two members of one anti-affinity group never share a host; an unpinned VM may
// go to another zone.
func TestFailoverRoomFollowsZonesAndAntiAffinity(t *testing.T) {
	a, b := failoverZone("a", 4, 8), failoverZone("b", 0, 0)
	for i := range a[0].VMs {
		a[0].VMs[i].Zone = "a"
	}
	hosts := append(a, b...)
	za := FailoverRooms(hosts, FailoverNeed{Tolerate: 1})[0]
	// a-1 (8 VMs, unpinned) is the largest: four fit on a-0, four go to zone b.
	if za.Zone != "a" || za.Tolerated != 1 {
		t.Errorf("zone a: %+v, want its largest host's unpinned VMs rebuilt in zone b", za)
	}
	hosts[1].VMs = nil
	hosts[1].FreeMB, hosts[1].FreeVCPU = float64(gib(64)), 16
	for i := range hosts[0].VMs {
		hosts[0].VMs[i].AntiAffinity = "db"
	}
	hosts[2].Takes, hosts[3].Takes = false, false // zone b disabled
	hosts[1].VMs = []VM{{Name: "other", RAMMB: 1, AntiAffinity: "db"}}
	if z := FailoverRooms(hosts, FailoverNeed{Tolerate: 1})[0]; z.Tolerated != 0 || z.ShortMB != float64(gib(32)) {
		t.Errorf("four db members and the only other host holding one: %+v, want room for 0, short 32 GiB", z)
	}
}

// reserve = "25%": a quarter of the zone's memory and vCPU free on the hosts that take VMs.
func TestFailoverReserveIsAShareOfTheZone(t *testing.T) {
	hosts := failoverZone("a", 6, 6) // 128 GiB and 32 vCPU, 32 GiB and 8 vCPU free
	if z := FailoverRooms(hosts, FailoverNeed{ReservePercent: 25})[0]; z.Short() {
		t.Errorf("25%% asked, 25%% free: %+v", z)
	}
	if z := FailoverRooms(hosts, FailoverNeed{ReservePercent: 30})[0]; z.ShortMB < float64(gib(6)) || z.ShortVCPU < 1.5 {
		t.Errorf("30%% asked, 25%% free: %+v, want about 6.4 GiB and 1.6 vCPU short", z)
	}
}

// A failover reserve (disabled, kept for a dead host's VMs) is room for a death, never for a
// move: three hosts of 64 GiB running 8, 8 and 0 VMs of 8 GiB, the third the reserve. A
// full host's 64 GiB fit only on the reserve: one death is held. A move finds no room: the
// two others are full and the reserve takes none.
func TestAFailoverReserveIsRoomForADeathNotForAMove(t *testing.T) {
	hosts := failoverZone("a", 8, 8, 0)
	hosts[2].Takes, hosts[2].Reserve = false, true
	if z := FailoverRooms(hosts, FailoverNeed{Tolerate: 1})[0]; z.Tolerated != 1 || z.Short() || z.SpareMB != float64(gib(64)) {
		t.Errorf("with the reserve: %+v, want one death held, 64 GiB spare", z)
	}
	hosts[2].Reserve = false
	if z := FailoverRooms(hosts, FailoverNeed{Tolerate: 1})[0]; z.Tolerated != 0 {
		t.Errorf("without it: %+v, want room for none", z)
	}
	hosts[2].Reserve = true
	moves := []VM{{Name: "moving", RAMMB: gib(8), VCPUs: 2}}
	if mb, _ := PlaceOn(hosts, moves); mb != float64(gib(8)) || len(hosts[2].VMs) != 0 {
		t.Errorf("a move placed: %v MiB unplaced, the reserve holds %d; want it unplaced, the reserve empty", mb, len(hosts[2].VMs))
	}
}
