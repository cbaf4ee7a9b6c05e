package ui

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// The view on a real engine: a real API server and the simulated Nova, the keys an operator
// types, and the engine's events as the program would deliver them.
type live struct {
	t      *testing.T
	m      Model
	cancel context.CancelFunc
	events []tagged
	// cmdWait bounds how long a key's Cmd is waited for (0: until it returns): a cursor's
	// blink or a tick sleeps, and a walk over many keys need not wait for them.
	cmdWait time.Duration
}

func newLive(t *testing.T, c *simtest.Cluster, e *ops.Engine) *live {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := &live{t: t, m: New(ctx, e, Options{Policy: simtest.Defaults()}), cancel: cancel}
	l.send(tea.WindowSizeMsg{Width: 160, Height: 45})
	l.send(l.m.load(true)())
	return l
}

// send updates the model and runs the Cmds a key starts (plans, not the long-running
// batch, which is started in the background as the program would).
func (l *live) send(msg tea.Msg) {
	next, cmd := l.m.Update(msg)
	l.m = next.(Model)
	if cmd == nil {
		return
	}
	switch msg.(type) {
	case tea.KeyMsg:
		if on[*opPane](&l.m) || (on[*campaignPane](&l.m) && l.m.s.campaign.started) { // y started the batch
			go cmd()
			return
		}
		if l.cmdWait == 0 {
			if out := cmd(); out != nil {
				l.send(out)
			}
			return
		}
		got := make(chan tea.Msg, 1)
		go func() { got <- cmd() }()
		select {
		case out := <-got:
			if out != nil {
				l.send(out)
			}
		case <-time.After(l.cmdWait):
		}
	}
}

func (l *live) keys(keys ...string) {
	for _, k := range keys {
		msg := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		switch k {
		case "space":
			msg = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
		case "ctrl+c":
			msg = tea.KeyMsg{Type: tea.KeyCtrlC}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "pgdown":
			msg = tea.KeyMsg{Type: tea.KeyPgDown}
		}
		l.send(msg)
	}
}

// drain takes the events the engine sent until cond holds.
func (l *live) drain(what string, cond func() bool) {
	l.t.Helper()
	deadline := time.After(60 * time.Second)
	for !cond() {
		got := make(chan tea.Msg, 1)
		go func() { got <- l.m.bus.wait()() }()
		select {
		case msg := <-got:
			l.events = append(l.events, msg.(eventsMsg)...)
			next, _ := l.m.Update(msg)
			l.m = next.(Model)
		case <-deadline:
			l.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (l *live) selectNodes(names ...string) {
	for _, n := range names {
		for i, row := range l.m.nodes().rows {
			if l.m.s.inv.Nodes[row].Name == n {
				l.m.nodes().cursor = i
				l.keys("space")
			}
		}
	}
}

// concurrency.nodes = 1: two selected nodes are worked one after the other, the second
// shown as queued until the first has ended.
func TestTUIBatchHonoursConcurrencyNodes(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.Cfg.Concurrency.Nodes = 1
	c1, c2 := c.Name("c1"), c.Name("c2")
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.selectNodes(c1, c2)
	l.keys("c")
	if !on[*confirmPane](&l.m) || len(paneIn[*confirmPane](&l.m).pending.batch.Plans) != 2 {
		t.Fatalf("cordon two nodes: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	l.keys("y")
	l.drain("both cordons to end", func() bool {
		return !l.m.s.ops.running(c1) && !l.m.s.ops.running(c2) && len(l.m.s.ops.order) == 2
	})
	var order []string
	for _, ev := range l.events {
		switch e := ev.ev.(type) {
		case ops.PlanReady:
			order = append(order, "start "+ev.key)
		case ops.RunDone:
			order = append(order, "end "+ev.key)
			if e.Report.Result != ops.ResultDone {
				t.Errorf("%s: %s %s", ev.key, e.Report.Result, e.Report.Error)
			}
		}
	}
	want := []string{"start " + c1, "end " + c1, "start " + c2, "end " + c2}
	if len(order) != 4 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] || order[3] != want[3] {
		t.Errorf("order %v, want %v", order, want)
	}
}

// Quitting mid-operation (ctrl-c twice: the quit dialog, then at once) leaves the node's
// journal at "interrupted" before the view returns: the operation stopped at a safe point.
func TestTUIQuitMidOperationRecordsInterrupted(t *testing.T) {
	c := simtest.NewCluster(t, 1)
	c0 := c.Name("c0")
	vmA, _ := c.World.ServerByName("vm-a")
	// vm-a converges slowly, so the quit lands while it migrates.
	c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0.9 * (1 << 30) })
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.selectNodes(c0)
	l.keys("e", "F") // the bare pod needs --force
	if !on[*confirmPane](&l.m) {
		t.Fatalf("evacuate: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	l.keys("y")
	l.drain("vm-a migrating", func() bool {
		v := l.m.s.ops.views[c0]
		return v != nil && v.vms[vmA.ID] != nil && v.vms[vmA.ID].state == ops.MigRunning
	})
	l.keys("ctrl+c")
	if !on[*quitPane](&l.m) {
		t.Fatalf("ctrl-c while running must ask, screen %v", screenOf(l.m))
	}
	next, cmd := l.m.Update(tea.KeyMsg{Type: tea.KeyCtrlC})
	l.m = next.(Model)
	if cmd == nil {
		t.Fatal("ctrl-c in the quit dialog must quit")
	}
	l.m.stop(l.cancel, time.Minute) // what Run does once the program has ended
	j, ok := ops.ReadJournal(c.Node(c0))
	if !ok || j.Phase != ops.PhaseInterrupted {
		t.Errorf("journal after quitting: %+v (ok %v)", j, ok)
	}
	if j.Op != model.OpEvacuate {
		t.Errorf("journal op %q", j.Op)
	}
}

// The quit dialog's abort goes the way x does: an abort plan run by the engine (its events
// in the operation view), and only then quit. The node ends aborted, its migration too.
func TestTUIQuitDialogAbortsLikeX(t *testing.T) {
	c := simtest.NewCluster(t, 1)
	c0 := c.Name("c0")
	vmA, _ := c.World.ServerByName("vm-a")
	c.World.Update(func(_ map[string]*sim.Host, s map[string]*sim.VM) { s[vmA.ID].DirtyBytesPerSec = 0.9 * (1 << 30) })
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.selectNodes(c0)
	l.keys("e", "F")
	l.keys("y")
	l.drain("vm-a migrating", func() bool {
		v := l.m.s.ops.views[c0]
		return v != nil && v.vms[vmA.ID] != nil && v.vms[vmA.ID].state == ops.MigRunning
	})
	l.keys("q")
	if !on[*quitPane](&l.m) {
		t.Fatalf("q while running must ask, screen %v", screenOf(l.m))
	}
	// a: the abort is planned, then run as a batch, then the view quits.
	next, cmd := l.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("a")})
	l.m = next.(Model)
	planned := cmd()
	next, cmd = l.m.Update(planned)
	l.m = next.(Model)
	if _, ok := planned.(abortPlanned); !ok || cmd == nil {
		t.Fatalf("the abort was not planned: %#v", planned)
	}
	ended := cmd()
	next, cmd = l.m.Update(ended)
	l.m = next.(Model)
	if res, ok := ended.(abortedForQuit); !ok || res.err != nil {
		t.Fatalf("the abort batch: %#v", ended)
	}
	if cmd == nil || cmd() != tea.Quit() {
		t.Error("the view must quit once the abort has run")
	}
	l.drain("the abort's report", func() bool {
		for _, k := range l.m.s.ops.order {
			if v := l.m.s.ops.views[k]; v.plan.Op == model.OpAbort && v.report != nil {
				return true
			}
		}
		return false
	})
	l.m.stop(l.cancel, time.Minute)
	if j, _ := ops.ReadJournal(c.Node(c0)); j.Phase != ops.PhaseAborted {
		t.Errorf("journal %+v", j)
	}
	if vm, _ := c.World.ServerByName("vm-a"); vm.Host != c0 || vm.TaskState != "" {
		t.Errorf("vm-a's migration was not aborted: %+v", vm)
	}
}

// Abort and rollback act on every selected node (they used the first one alone, silently);
// recover, which is one dead node's, says it acts on one.
func TestTUIRollbackActsOnEverySelectedNode(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c1, c2 := c.Name("c1"), c.Name("c2")
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.selectNodes(c1, c2)
	l.keys("c", "y")
	l.drain("both cordons to end", func() bool {
		return len(l.m.s.ops.order) == 2 && !l.m.s.ops.running(c1) && !l.m.s.ops.running(c2)
	})
	l.keys("esc") // back to the nodes; the selection stays
	l.send(l.m.load(true)())
	l.keys("X")
	if !on[*nodesPane](&l.m) || !strings.Contains(l.m.status, "recover acts on one node at a time") {
		t.Errorf("recover with two nodes selected: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	l.keys("R")
	if !on[*confirmPane](&l.m) {
		t.Fatalf("rollback: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	var planned []string
	for _, p := range paneIn[*confirmPane](&l.m).pending.batch.Plans {
		planned = append(planned, p.Node)
	}
	if strings.Join(planned, ",") != c1+","+c2 {
		t.Fatalf("rollback planned for %v, want both selected nodes", planned)
	}
	l.keys("y")
	l.drain("both rollbacks to end", func() bool {
		n := 0
		for _, k := range l.m.s.ops.order {
			if v := l.m.s.ops.views[k]; v.plan.Op == model.OpRollback && v.report != nil {
				n++
			}
		}
		return n == 2
	})
	for _, n := range []string{c1, c2} {
		if !c.Node(n).Schedulable {
			t.Errorf("%s is still cordoned after the rollback", n)
		}
	}
}

// :ops keeps every operation of a node: an uncordon after a cordon leaves the cordon listed
// (it replaced it, so what the first one did, say a VM it stopped, was no longer shown).
func TestOpsKeepsEveryOperationOfANode(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c1 := c.Name("c1")
	l := newLive(t, c, c.Engine("tui@test", nil))
	l.selectNodes(c1)
	l.keys("c", "y")
	l.drain("the cordon to end", func() bool { return len(l.m.s.ops.order) == 1 && !l.m.s.ops.running(c1) })
	l.keys("esc")
	l.send(l.m.load(true)())
	l.keys("u")
	if !on[*confirmPane](&l.m) {
		t.Fatalf("uncordon: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	l.keys("y")
	l.drain("the uncordon to end", func() bool { return len(l.m.s.ops.order) == 2 && !l.m.s.ops.running(c1) })
	var ops []string
	for _, k := range l.m.s.ops.order {
		v := l.m.s.ops.views[k]
		ops = append(ops, string(v.plan.Op)+" "+v.plan.Node)
	}
	if want := "cordon " + c1 + ",uncordon " + c1; strings.Join(ops, ",") != want {
		t.Fatalf(":ops lists %v, want %s", ops, want)
	}
	if view := l.m.View(); !strings.Contains(view, "uncordon "+c1) || !strings.Contains(view, "2 of 2 operations") {
		t.Errorf("the uncordon is not shown as the latest:\n%s", view)
	}
	l.keys("space")
	if view := l.m.View(); !strings.Contains(view, "cordon "+c1) || !strings.Contains(view, "1 of 2 operations") || strings.Contains(view, "uncordon "+c1) {
		t.Errorf("space does not show the earlier cordon:\n%s", view)
	}
}
