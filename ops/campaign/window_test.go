package campaign

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	w, err := ParseWindow("Mon-Fri 22:00-06:00 Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   string
		open bool
		next string
	}{
		{"2026-11-25 21:59", false, "2026-11-25 22:00"}, // Wednesday evening
		{"2026-11-25 22:00", true, ""},
		{"2026-11-26 05:59", true, ""},                  // over midnight, into Thursday
		{"2026-11-26 06:00", false, "2026-11-26 22:00"}, // closed at its end
		{"2026-11-28 05:00", true, ""},                  // Saturday morning: Friday's opening
		{"2026-11-28 23:00", false, "2026-11-30 22:00"}, // the weekend: Monday evening next
		// Daylight saving: on 2026-03-29 clocks go 02:00 → 03:00; the window still opens at
		// 22:00 local, and Sunday's is no weekday.
		{"2026-03-27 23:30", true, ""},
		{"2026-03-29 12:00", false, "2026-03-30 22:00"},
		{"2026-10-26 22:30", true, ""}, // after the change back
	} {
		now := at(c.at)
		if got := w.Open(now); got != c.open {
			t.Errorf("%s: open %v, want %v", c.at, got, c.open)
		}
		if c.next != "" {
			if got := w.NextOpen(now); !got.Equal(at(c.next)) {
				t.Errorf("%s: next open %s, want %s", c.at, got.In(berlin).Format("2006-01-02 15:04 MST"), c.next)
			}
		}
	}
	// The opening is 8 hours of the local clock, whatever the UTC offset does.
	if !at("2026-03-30 22:00").Add(8 * time.Hour).Equal(at("2026-03-31 06:00")) {
		t.Error("a window's hours are local ones")
	}
	daily, err := ParseWindow("daily 01:00-05:00 UTC")
	if err != nil || !daily.Open(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)) || daily.Open(time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)) {
		t.Errorf("daily in UTC: %v", err)
	}
	for _, bad := range []string{"", "Mon-Fri", "Mon-Fri 22:00 Europe/Berlin", "Funday 01:00-02:00", "Mon 01:00-01:00", "Mon 01:00-02:00 Mars/Olympus", "daily 01:00-05:00"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Two windows' joint opening (an owner's and the campaign's, #57.3): where one of them opens
// inside the other, or the moment asked when both are open; never when they do not meet in a
// week.
func TestJointOpen(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	win := func(s string) *Window {
		w, err := ParseWindow(s)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	nights, weekend := win("daily 22:00-06:00 UTC"), win("Sat 02:00-06:00 Europe/Berlin")
	for _, c := range []struct {
		name string
		a, b *Window
		from string
		want string // "" : never
	}{
		{"the owner's Saturday inside the campaign's nights", nights, weekend, "2026-11-25 12:00", "2026-11-28 01:00"}, // 02:00 CET
		{"both open now", nights, win("daily 23:00-23:30 UTC"), "2026-11-25 23:10", "2026-11-25 23:10"},
		{"the campaign's opening inside the owner's", win("daily 03:00-04:00 UTC"), win("daily 01:00-05:00 UTC"), "2026-11-25 12:00",
			"2026-11-26 03:00"},
		{"weekdays and a weekend never meet", win("Mon-Fri 09:00-17:00 UTC"), win("Sat,Sun 10:00-12:00 UTC"), "2026-11-25 12:00", ""},
	} {
		got, ok := jointOpen(c.a, c.b, at(c.from))
		switch {
		case c.want == "" && ok:
			t.Errorf("%s: both open %v; want never", c.name, got)
		case c.want != "" && (!ok || !got.Equal(at(c.want))):
			t.Errorf("%s: %v, %v; want %s UTC", c.name, got, ok, c.want)
		}
	}
}
