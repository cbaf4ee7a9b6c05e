package ops

import (
	"strings"
	"testing"
	"time"
)

// The pace halves at each window of slow or failing answers, down to one move, and climbs
// back by a tenth of the cap a healthy window in which it held a move; a healthy window that
// held nothing leaves it (nothing was asked of it).
func TestThePaceFollowsTheCloudsAnswers(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(20, paceWindow, paceSlow, func() time.Time { return now })
	window := func(took time.Duration, status, n int, held bool) Pace {
		for range n {
			p.observe(took, status)
		}
		if held {
			p.room(1 << 20)
		}
		now = now.Add(paceWindow)
		return p.state()
	}
	if st := window(200*time.Millisecond, 200, 100, true); st.Limit != 20 {
		t.Fatalf("a healthy window at the cap: %+v, want 20", st)
	}
	for _, want := range []int{10, 5, 2, 1, 1} {
		st := window(3*time.Second, 200, 100, true)
		if st.Limit != want || !strings.Contains(st.Why, "p90 3s over 100 answers: halved") {
			t.Fatalf("a slow window: %+v, want %d and why", st, want)
		}
	}
	if st := window(100*time.Millisecond, 200, 100, false); st.Limit != 1 {
		t.Errorf("a healthy window that held nothing raised the pace: %+v", st)
	}
	for _, want := range []int{3, 5, 7} {
		if st := window(100*time.Millisecond, 200, 100, true); st.Limit != want || !strings.Contains(st.Why, "raised") {
			t.Fatalf("a healthy window that held a move: %+v, want %d", st, want)
		}
	}
	// 2 failed answers of 100 (above 1 %): halved, however quick.
	for range 2 {
		p.observe(10*time.Millisecond, 503)
	}
	if st := window(10*time.Millisecond, 200, 98, true); st.Limit != 3 || !strings.Contains(st.Why, "2 of 100 answers of the cloud failed") {
		t.Errorf("a window with 2 %% failed: %+v, want 3", st)
	}
	// No answer at all (a timeout) counts as failed.
	p.observe(30*time.Second, 0)
	if st := window(10*time.Millisecond, 200, 10, true); st.Limit != 1 {
		t.Errorf("a window with a request unanswered: %+v, want 1", st)
	}
	for range 12 {
		window(10*time.Millisecond, 200, 10, true)
	}
	if st := p.state(); st.Limit != 20 {
		t.Errorf("healthy windows raised the pace to %d, want the cap (20), never above", st.Limit)
	}
	if p.room(19) != true || p.room(20) != false {
		t.Errorf("room at the cap: 19 in flight fits, 20 does not")
	}
}

// A cloud slow on a good day (every answer 1.5 s) is not struggling: the pace is halved only
// above four times its best window's p90.
func TestThePaceKnowsACloudsOwnSpeed(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(10, paceWindow, paceSlow, func() time.Time { return now })
	window := func(took time.Duration) Pace {
		for range 50 {
			p.observe(took, 200)
		}
		p.room(1 << 20)
		now = now.Add(paceWindow)
		return p.state()
	}
	for _, took := range []time.Duration{1500 * time.Millisecond, 2 * time.Second, 5 * time.Second} {
		if st := window(took); st.Limit != 10 {
			t.Fatalf("answers of %s, the best window's 1.5 s: %+v, want the pace left at 10", took, st)
		}
	}
	if st := window(7 * time.Second); st.Limit != 5 {
		t.Errorf("answers of 7 s, above 4 × 1.5 s: %+v, want halved", st)
	}
}
