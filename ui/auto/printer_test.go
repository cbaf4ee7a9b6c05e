package auto

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/ops"
)

// A live copy's progress line gives the ETA beside the rate it is counted from (how fast
// remaining falls), the link's rate apart, and bytes sent beyond the memory as rewritten
// pages: it showed the link's rate beside an ETA it could not give.
func TestAProgressLineSaysTheRateItsETAIsFrom(t *testing.T) {
	var progress bytes.Buffer
	p := NewPrinter(&progress, nil)
	p.Emit(ops.NewMigrationEvent(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC), "compute-0", ops.MigrationEvent{VM: "vm-a", VMID: "1", State: ops.MigRunning,
		Source: "compute-0", Dest: "compute-1", Total: 8 << 30, Processed: 20 << 30, Remaining: 2 << 30, Rate: 2 << 30, Converge: 1 << 30, ETA: 2 * time.Second}))
	want := "compute-0 vm vm-a compute-0→compute-1  75%, 2G of 8G left, eta 2s at 1.0 GiB/s, link 2.0 GiB/s, sent 20G (2.5× its memory, rewritten as it copies)"
	if got := strings.TrimSpace(progress.String()); !strings.Contains(got, want) {
		t.Errorf("progress line:\n%s\nwant:\n%s", got, want)
	}
	// A first sample has measured nothing: its ETA is unknown, not "not falling".
	progress.Reset()
	p = NewPrinter(&progress, nil)
	p.Emit(ops.NewMigrationEvent(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC), "compute-0", ops.MigrationEvent{VM: "vm-a", VMID: "1", State: ops.MigRunning,
		Source: "compute-0", Dest: "compute-1", Total: 8 << 30, Processed: 1 << 30, Remaining: 7 << 30}))
	if got := progress.String(); !strings.Contains(got, "eta -, link -") || strings.Contains(got, "not falling") {
		t.Errorf("a first sample's line: %s", got)
	}
}
