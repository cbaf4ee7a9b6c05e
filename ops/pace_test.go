package ops

import (
	"slices"
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
			p.observer(paceCloud)(took, status)
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
		p.observer(paceCloud)(10*time.Millisecond, 503)
	}
	if st := window(10*time.Millisecond, 200, 98, true); st.Limit != 3 || !strings.Contains(st.Why, "2 of 100 answers of the cloud failed") {
		t.Errorf("a window with 2 %% failed: %+v, want 3", st)
	}
	// No answer at all (a timeout) counts as failed.
	p.observer(paceCloud)(30*time.Second, 0)
	if st := window(10*time.Millisecond, 200, 10, true); st.Limit != 1 {
		t.Errorf("a window with a request unanswered: %+v, want 1", st)
	}
	for range 80 { // up to 6 (below where it broke, 7) at once, then one more every 5 windows
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
			p.observer(paceCloud)(took, 200)
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
			p.observer(paceCloud)(100*time.Millisecond, 200)
			p.observer(paceKube)(kube, 200)
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
		p.observer(paceKube)(10*time.Millisecond, 429)
	}
	if st := window(20 * time.Millisecond); st.Limit != 3 || !strings.Contains(st.Why, "3 of 53 answers of the API server failed") {
		t.Errorf("the API server throttling (429): %+v, want 3", st)
	}
}

// The live moves are followed by their copy: a window in which most polls show a move not
// converging halves the pace, one guest that never converges among healthy moves does not,
// and neither do too few polls to judge; copying a GiB four times slower than the moves'
// best window halves it too (a shared link each move gets less of).
func TestThePaceFollowsTheMovesCopy(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(8, paceWindow, paceSlow, func() time.Time { return now })
	window := func(perGiB time.Duration, converging ...bool) Pace {
		for _, c := range converging {
			p.observe(paceMoves, perGiB, !c)
		}
		p.room(1 << 20)
		now = now.Add(paceWindow)
		return p.state()
	}
	if st := window(time.Second, true, true, true, true); st.Limit != 8 {
		t.Fatalf("four moves converging at their best: %+v, want 8", st)
	}
	if st := window(time.Second, true, true, true, false); st.Limit != 8 {
		t.Errorf("one guest of four not converging halved the pace: %+v", st)
	}
	if st := window(time.Second, false, false); st.Limit != 8 {
		t.Errorf("two polls are too few to judge the link: %+v", st)
	}
	if st := window(time.Second, false, false, true); st.Limit != 4 || !strings.Contains(st.Why, "2 of 3 polls of the moves did not converge: halved") {
		t.Errorf("most moves not converging: %+v, want 4, and why", st)
	}
	if st := window(3*time.Second, true, true, true); st.Limit != 5 || !strings.Contains(st.Why, "raised") {
		t.Errorf("a GiB in 3 s, three times the best: %+v, want healthy (raised to 5)", st)
	}
	if st := window(5*time.Second, true, true, true); st.Limit != 2 || !strings.Contains(st.Why, "the moves' p90 5s over 3 polls: halved") {
		t.Errorf("a GiB in 5 s, above four times the best (1 s): %+v, want 2, and why", st)
	}
}

// The budgets are followed by how long a pod waited on one: a minute is within a good day's
// wait, above it (and four times the best window's) halves the pace, and a pod given up on
// halves it however long it waited.
func TestThePaceFollowsTheBudgetsWait(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(8, paceWindow, paceSlow, func() time.Time { return now })
	window := func(waited time.Duration, givenUp bool) Pace {
		p.observe(paceBudgets, waited, givenUp)
		p.room(1 << 20)
		now = now.Add(paceWindow)
		return p.state()
	}
	for _, waited := range []time.Duration{5 * time.Second, time.Minute} {
		if st := window(waited, false); st.Limit != 8 {
			t.Fatalf("a pod held %s: %+v, want 8", waited, st)
		}
	}
	if st := window(90*time.Second, false); st.Limit != 4 || !strings.Contains(st.Why, "the budgets' p90 1m30s over 1 pods: halved") {
		t.Errorf("a pod held 90 s: %+v, want 4, and why", st)
	}
	if st := window(time.Second, true); st.Limit != 2 || !strings.Contains(st.Why, "1 of 1 pods of the budgets were given up on: halved") {
		t.Errorf("a pod given up on: %+v, want 2, and why", st)
	}
}

// Static caps: the pace hears nothing, and never leaves the cap.
func TestAStaticPaceHearsNothing(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(8, paceWindow, paceSlow, func() time.Time { return now })
	p.deaf = true
	for range 3 {
		p.observer(paceCloud)(10*time.Second, 503)
		p.observe(paceMoves, time.Hour, true)
		p.room(1 << 20)
		now = now.Add(paceWindow)
	}
	if st := p.state(); st.Limit != 8 || st.Why != "" {
		t.Errorf("a deaf pace moved: %+v", st)
	}
}

// Past some number of moves at once, moves sharing a link all stop converging together: the
// pace remembers the limit a streak of halvings began at (its knee), climbs back by a tenth of
// the cap to just below it, stays there, and tries one more only every paceProbe healthy
// windows. A slowing that halves it down to one remembers where it began, so the climb after
// is quick.
func TestThePaceStaysBelowWhereItBroke(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(40, paceWindow, paceSlow, func() time.Time { return now })
	window := func(converging bool) Pace {
		for range 3 {
			p.observe(paceMoves, time.Second, !converging)
		}
		p.room(1 << 20)
		now = now.Add(paceWindow)
		return p.state()
	}
	for _, want := range []int{20, 10} { // broke at 40: the knee
		if st := window(false); st.Limit != want {
			t.Fatalf("moves not converging: %+v, want %d", st, want)
		}
	}
	var limits []int
	for range 20 {
		limits = append(limits, window(true).Limit)
	}
	want := []int{14, 18, 22, 26, 30, 34, 38, 39, 39, 39, 39, 39, 40, 40, 40, 40, 40, 40, 40, 40}
	if !slices.Equal(limits, want) {
		t.Errorf("climbing back after a knee at 40: %v, want %v", limits, want)
	}
	// Broke again at 40: halved to 20, then 10 while the moves under way still stall; healthy
	// again, it climbs to 39 and stays.
	window(false)
	window(false)
	limits = limits[:0]
	for range 9 {
		limits = append(limits, window(true).Limit)
	}
	if want := []int{14, 18, 22, 26, 30, 34, 38, 39, 39}; !slices.Equal(limits, want) {
		t.Errorf("climbing back again: %v, want %v", limits, want)
	}
	// Broken at 39, where it held: the knee moved down, and the pace steps back twice as far
	// (37); broken there too, four times as far below it (33).
	for _, want := range []int{37, 33} {
		window(false)
		window(false)
		for range 8 {
			window(true)
		}
		if st := p.state(); st.Limit != want {
			t.Errorf("broken where it held: %+v, want %d", st, want)
		}
	}
}

// A halving halves the moves under way, not a cap they never reached: 20 allowed, 6 under
// way, a window of moves copying slowly leaves 3; the knee is 6, not 20.
func TestThePaceHalvesTheMovesUnderWay(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(20, paceWindow, paceSlow, func() time.Time { return now })
	copying := func(perGiB time.Duration) {
		for range 3 {
			p.observe(paceMoves, perGiB, false)
		}
	}
	copying(time.Second) // the moves' best
	now = now.Add(paceWindow)
	for i := range 6 {
		p.room(i)
	}
	copying(5 * time.Second)
	now = now.Add(paceWindow)
	if st := p.state(); st.Limit != 3 {
		t.Errorf("six under way, a slow window: %+v, want 3", st)
	}
	for range 3 {
		copying(time.Second)
		p.room(1 << 20)
		now = now.Add(paceWindow)
	}
	if st := p.state(); st.Limit != 5 {
		t.Errorf("healthy again: %+v, want 5 (below the knee of 6)", st)
	}
}

// Nova's 409s are a server or a provider busy with another request: more than a tenth of a
// window's answers halves the pace, fewer (another actor's move now and then) do not; the API
// server's 409s are optimistic concurrency's and never do.
func TestNovasConflictsHalveThePace(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(20, paceWindow, paceSlow, func() time.Time { return now })
	window := func(sig paceSignal, conflicts int) Pace {
		for k := range 20 {
			status := 200
			if k < conflicts {
				status = 409
			}
			p.observer(sig)(10*time.Millisecond, status)
		}
		p.room(1 << 20)
		now = now.Add(paceWindow)
		return p.state()
	}
	if st := window(paceCloud, 2); st.Limit != 20 {
		t.Fatalf("2 conflicts of 20 answers halved the pace: %+v", st)
	}
	if st := window(paceKube, 20); st.Limit != 20 {
		t.Fatalf("the API server's conflicts halved the pace: %+v", st)
	}
	st := window(paceCloud, 3)
	if st.Limit != 10 || st.Why != "3 of 20 answers of the cloud were conflicts (409): halved" {
		t.Fatalf("3 conflicts of 20 answers: %+v, want halved to 10 and why", st)
	}
}

// A slowing of the cloud says it struggles now, not how many moves it carries once well: it
// leaves no knee, and after it the pace climbs back by a tenth of the cap a window, past the
// moves under way when it came (a knee there held a campaign at half its pace after Nova
// recovered). The moves not converging do leave one (TestThePaceStaysBelowWhereItBroke).
func TestASlowCloudLeavesNoKnee(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPace(40, paceWindow, paceSlow, func() time.Time { return now })
	for _, took := range []time.Duration{10 * time.Millisecond, 3 * time.Second} { // a good window, then a slow one
		p.room(9) // ten moves under way
		p.observer(paceCloud)(took, 200)
		now = now.Add(paceWindow)
	}
	if st := p.state(); st.Limit != 5 {
		t.Fatalf("a slow window with ten moves under way: %+v, want 5", st)
	}
	for _, want := range []int{9, 13, 17} {
		p.observer(paceCloud)(10*time.Millisecond, 200)
		p.room(1 << 20)
		now = now.Add(paceWindow)
		if st := p.state(); st.Limit != want {
			t.Fatalf("a healthy window after the slowing: %+v, want %d", st, want)
		}
	}
}
