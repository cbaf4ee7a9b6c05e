package model

import (
	"strings"
	"testing"
	"time"
)

// drainctl's notice to an owner reads back as written, fits Nova's 255 bytes whatever its
// campaign's name, and is due only once told the lead ago; a notice told "in the future"
// past the lead (a forgery, a clock gone wrong) or long past its act is stale: told again.
// Anything else in the key is no notice of drainctl's.
func TestOwnerNotice(t *testing.T) {
	now := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	n := NewOwnerNotice("live-migration", "campaign "+strings.Repeat("é", 200), now.Add(300*time.Millisecond), now.Add(30*time.Minute))
	s := n.String()
	if len(s) > 255 || !strings.HasPrefix(s, "live-migration at 2026-11-29T15:30:00Z, by campaign é") ||
		!strings.HasSuffix(s, "; told 2026-11-29T15:00:01Z") {
		t.Fatalf("%d bytes: %q", len(s), s)
	}
	back, ok := ParseOwnerNotice(s)
	if !ok || !back.Told.Equal(now.Add(time.Second)) || !back.At.Equal(now.Add(30*time.Minute)) || back.What != "live-migration" {
		t.Fatalf("read back %+v %v", back, ok)
	}
	lead := 10 * time.Minute
	for _, tc := range []struct {
		name       string
		now        time.Time
		due, stale bool
		wait       time.Duration
	}{
		{"just told", now.Add(time.Second), false, false, lead},
		{"the lead up", now.Add(time.Second + lead), true, false, 0},
		{"a day past its act", now.Add(30*time.Minute + 25*time.Hour), false, true, 0},
		{"told in the future", now.Add(-time.Hour), false, true, 0},
	} {
		due, wait, stale := back.Due(tc.now, lead)
		if due != tc.due || stale != tc.stale || wait != tc.wait {
			t.Errorf("%s: due %v, wait %v, stale %v; want %v, %v, %v", tc.name, due, wait, stale, tc.due, tc.wait, tc.stale)
		}
	}
	for _, bad := range []string{"", "maintenance on Saturday", "live-migration at soon, by x; told now",
		"live-migration at 2026-11-29T15:00:00Z, by x; told 2026-11-29T16:00:00Z"} {
		if _, ok := ParseOwnerNotice(bad); ok {
			t.Errorf("%q read as drainctl's notice", bad)
		}
	}
}
