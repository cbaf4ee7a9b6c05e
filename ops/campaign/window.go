package campaign

import (
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones even on a machine without /usr/share/zoneinfo (a scratch image)

	"github.com/drainctl/drainctl/ops"
)

// Window is when a campaign may start nodes (kured's reboot window, GKE's maintenance
// window): on some days of the week, between two times of day, in an IANA time zone. A
// window that ends before it starts runs over midnight ("22:00-06:00"), and belongs to the day
// it starts on ("Fri 22:00-06:00" ends on Saturday morning). Times are local: daylight saving
// moves them with the clock, as a rota does.
type Window struct {
	text       string
	days       [7]bool // by time.Weekday
	start, end int     // minutes after local midnight
	loc        *time.Location
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// ParseWindow reads "DAYS HH:MM-HH:MM ZONE": DAYS is "Mon-Fri", "Sat,Sun", "Mon-Wed,Fri" or
// "daily"; ZONE an IANA name ("Europe/Berlin") or UTC, always named.
func ParseWindow(s string) (*Window, error) {
	f := strings.Fields(s)
	bad := func(why string) error {
		return &ops.UsageError{
			Problem: fmt.Sprintf("window %q: %s", s, why),
			Hint:    `e.g. "Mon-Fri 22:00-06:00 Europe/Berlin" or "daily 01:00-05:00 UTC"`,
		}
	}
	if len(f) < 2 || len(f) > 3 {
		return nil, bad("want days, a time range and a time zone")
	}
	w := &Window{text: s, loc: time.UTC}
	if len(f) == 3 {
		if strings.EqualFold(f[2], "local") {
			// The zone of whichever machine runs drainctl: a rerun elsewhere would open another window.
			return nil, bad("Local is no zone: name one (an IANA name, e.g. Europe/Berlin, or UTC)")
		}
		loc, err := time.LoadLocation(f[2])
		if err != nil {
			return nil, bad("unknown time zone " + f[2] + " (an IANA name, e.g. Europe/Berlin)")
		}
		w.loc = loc
	}
	if err := w.parseDays(strings.ToLower(f[0])); err != "" {
		return nil, bad(err)
	}
	from, to, ok := strings.Cut(f[1], "-")
	var err1, err2 error
	w.start, err1 = clock(from)
	w.end, err2 = clock(to)
	if !ok || err1 != nil || err2 != nil || w.start == w.end {
		return nil, bad("the time range is HH:MM-HH:MM, two different times")
	}
	if len(f) == 2 {
		// Read as UTC, a window meant for 22:00 in Berlin opens an hour or two early: the
		// zone is named, never assumed.
		return nil, bad("no time zone: name one (UTC, or an IANA name such as Europe/Berlin)")
	}
	return w, nil
}

func (w *Window) parseDays(s string) string {
	if s == "daily" || s == "*" {
		w.days = [7]bool{true, true, true, true, true, true, true}
		return ""
	}
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(part, "-")
		from, ok1 := weekdays[a]
		to, ok2 := weekdays[b]
		if !isRange {
			to, ok2 = from, ok1
		}
		if !ok1 || !ok2 {
			return "unknown day in " + part + " (Mon, Tue, Wed, Thu, Fri, Sat, Sun, or daily)"
		}
		for d := from; ; d = (d + 1) % 7 {
			w.days[d] = true
			if d == to {
				break
			}
		}
	}
	return ""
}

func clock(s string) (int, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, err
	}
	return t.Hour()*60 + t.Minute(), nil
}

func (w *Window) String() string { return w.text }

// Open reports whether t is inside the window.
func (w *Window) Open(t time.Time) bool {
	start, end := w.around(t)
	return !t.Before(start) && t.Before(end)
}

// around is the opening that contains t, or else the next one: [start, end).
func (w *Window) around(t time.Time) (time.Time, time.Time) {
	local := t.In(w.loc)
	for day := -1; day <= 7; day++ { // yesterday's opening may run over midnight into today
		d := time.Date(local.Year(), local.Month(), local.Day()+day, 0, 0, 0, 0, w.loc)
		if !w.days[d.Weekday()] {
			continue
		}
		start := time.Date(d.Year(), d.Month(), d.Day(), w.start/60, w.start%60, 0, 0, w.loc)
		endDay := d.Day()
		if w.end < w.start {
			endDay++
		}
		end := time.Date(d.Year(), d.Month(), endDay, w.end/60, w.end%60, 0, 0, w.loc)
		if t.Before(end) {
			return start, end
		}
	}
	return time.Time{}, time.Time{} // no day at all: parseDays refuses that
}

// jointOpen is when a and b are next open together, from from on (from itself when both are
// open), within a week; false when they never are. A joint opening begins where one of them
// opens (or at from): those are the only times to try.
func jointOpen(a, b *Window, from time.Time) (time.Time, bool) {
	tries := []time.Time{from}
	for _, w := range []*Window{a, b} {
		for t := from; t.Before(from.Add(8 * 24 * time.Hour)); {
			start, end := w.around(t)
			if start.IsZero() {
				break
			}
			tries = append(tries, start)
			t = end
		}
	}
	slices.SortFunc(tries, func(x, y time.Time) int { return x.Compare(y) })
	for _, t := range tries {
		if !t.Before(from) && a.Open(t) && b.Open(t) {
			return t, true
		}
	}
	return time.Time{}, false
}

// NextOpen is when the window next opens after t (t itself when it is open).
func (w *Window) NextOpen(t time.Time) time.Time {
	start, _ := w.around(t)
	if t.After(start) {
		return t
	}
	return start
}
