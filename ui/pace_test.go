package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/sim"
)

// A cloud gone slow during an evacuation lowers the engine's pace, and the header says so:
// first, short (a narrow screen keeps it), and last, how many moves at once, why and since
// when. Before the cloud slowed, the header says nothing of a pace.
func TestTheHeaderSaysThePace(t *testing.T) {
	c := simtest.NewCluster(t, 4)
	e, c0 := c.SixToPace("tui@pace")
	l := newLive(t, c, e)
	time.Sleep(200 * time.Millisecond) // the window of the first read's quick answers: the cloud's own speed
	l.selectNodes(c0)
	l.keys("e", "F") // the bare pod needs --force
	if !on[*confirmPane](&l.m) {
		t.Fatalf("evacuate: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	if h := l.m.header(); strings.Contains(h, "PACED") || strings.Contains(h, "moves at once") {
		t.Errorf("the header speaks of a pace before the cloud slowed: %q", h)
	}
	c.World.InjectFault(sim.Fault{Latency: 80 * time.Millisecond})
	l.keys("y")
	l.drain("the evacuation to end", func() bool {
		v := l.m.s.ops.views[c0]
		return v != nil && !l.m.s.ops.running(c0)
	})
	for _, ev := range l.events {
		if d, ok := ev.ev.(ops.RunDone); ok && d.Report.Result != ops.ResultDone {
			t.Fatalf("%s: %s %s", ev.key, d.Report.Result, d.Report.Error)
		}
	}
	h := l.m.header()
	if !strings.Contains(h, "PACED 1/6") {
		t.Errorf("the header does not say the pace first: %q", h)
	}
	since := e.Pace().Changed.Format("15:04:05")
	if !strings.Contains(h, "1 of 6 moves at once (the cloud's p90") || !strings.Contains(h, "halved) since "+since) {
		t.Errorf("the header does not say the pace, why and since when (%s): %q", since, h)
	}
	if j, ok := ops.ReadJournal(c.Node(c0)); !ok || j.Op != model.OpEvacuate {
		t.Errorf("journal: %+v (ok %v)", j, ok)
	}
}
