package model

import (
	"fmt"
	"testing"
)

// BenchmarkFingerprint is what each Nova read adds to tell whether anything changed, at
// 50,000 VMs and 5,000 services.
func BenchmarkFingerprint(b *testing.B) {
	var s NovaSnapshot
	for i := 0; i < 50000; i++ {
		s.VMs = append(s.VMs, VM{ID: fmt.Sprintf("%036d", i), Name: fmt.Sprintf("vm-%06d", i), Host: fmt.Sprintf("compute-%04d", i%5000), Phase: PhaseRunning, Status: "ACTIVE", RAMMB: 4096})
	}
	for i := 0; i < 5000; i++ {
		s.Services = append(s.Services, ComputeService{Host: fmt.Sprintf("compute-%04d", i), Enabled: true, Up: true})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = s.Fingerprint()
	}
}
