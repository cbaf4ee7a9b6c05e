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
			p.observe(paceCloud, took, status)
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
		p.observe(paceCloud, 10*time.Millisecond, 503)
	}
	if st := window(10*time.Millisecond, 200, 98, true); st.Limit != 3 || !strings.Contains(st.Why, "2 of 100 answers of the cloud failed") {
		t.Errorf("a window with 2 %% failed: %+v, want 3", st)
	}
	// No answer at all (a timeout) counts as failed.
	p.observe(paceCloud, 30*time.Second, 0)
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
			p.observe(paceCloud, took, 200)
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

// The API server is followed as the cloud is, against its own best window: its slow window
// halves the pace and says so, while the cloud answers well; a window of both healthy raises
// it, on the cloud's figures.
func TestThePaceFollowsTheAPIServerToo(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(10, paceWindow, paceSlow, func() time.Time { return now })
	window := func(kube time.Duration) Pace {
		for range 50 {
			p.observe(paceCloud, 100*time.Millisecond, 200)
			p.observe(paceKube, kube, 200)
		}
		p.room(1 << 20)
		now = now.Add(paceWindow)
		return p.state()
	}
	if st := window(20 * time.Millisecond); st.Limit != 10 {
		t.Fatalf("both healthy at the cap: %+v, want 10", st)
	}
	if st := window(2 * time.Second); st.Limit != 5 || !strings.Contains(st.Why, "the API server's p90 2s over 50 answers: halved") {
		t.Errorf("the API server slow: %+v, want 5, and why", st)
	}
	if st := window(20 * time.Millisecond); st.Limit != 6 || !strings.Contains(st.Why, "the cloud's p90 100ms over 50 answers: raised") {
		t.Errorf("both healthy again: %+v, want 6, raised", st)
	}
	for range 3 {
		p.observe(paceKube, 10*time.Millisecond, 429)
	}
	if st := window(20 * time.Millisecond); st.Limit != 3 || !strings.Contains(st.Why, "3 of 53 answers of the API server failed") {
		t.Errorf("the API server throttling (429): %+v, want 3", st)
	}
}
