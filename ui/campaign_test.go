package ui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// A campaign from the TUI: C on two selected nodes shows it for confirmation (nothing
// runs), y starts it, p pauses it after the current node (the next stays pending), p again
// resumes it, and both nodes come back.
func TestTUICampaignPausesAfterTheCurrentNode(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c1, c2 := c.Name("c1"), c.Name("c2")
	l := newLive(t, c, c.Engine("tui@campaign", nil))
	l.selectNodes(c1, c2)
	l.keys("C")
	if !on[*campaignPane](&l.m) || l.m.s.campaign.run == nil || l.m.s.campaign.started {
		t.Fatalf("C: screen %v, status %q", screenOf(l.m), l.m.status)
	}
	if v := l.m.View(); !strings.Contains(v, "y starts it") || strings.Count(v, " pending ") != 2 {
		t.Errorf("the confirmation does not show the campaign:\n%s", v)
	}
	if n := c.Muts.N.Load(); n != 0 {
		t.Fatalf("proposing the campaign changed the cluster (%d calls)", n)
	}
	l.keys("y")
	// #53.5: the selection was the campaign's; once it runs, u and e act on the cursor.
	if len(l.m.nodes().selected) != 0 {
		t.Errorf("the campaign's nodes are still selected once it runs: %v", l.m.nodes().selected)
	}
	rec := func() model.Campaign { return l.m.s.campaign.run.Record() }
	l.drain(c1+"'s operation", func() bool { _, ok := l.m.s.ops.views[c1]; return ok && len(l.m.s.ops.runningKeys()) > 0 })
	// q while a node works: the dialog names the node's operation and its campaign.
	l.keys("q")
	if v := l.m.View(); !strings.Contains(v, "evacuate "+c1+" (a node of campaign "+rec().Name+")") {
		t.Errorf("the quit dialog during the campaign's node:\n%s", v)
	}
	l.keys("w", "p")
	l.drain("the campaign paused after "+c1, func() bool { return rec().State == model.CampaignPaused })
	if r := rec(); r.Nodes[0].Phase != model.PhaseDone || r.Nodes[1].Phase != model.PhasePending {
		t.Fatalf("paused: %+v", r.Nodes)
	}
	if v := l.m.View(); !strings.Contains(v, "1 done · 0 in progress · 1 left") {
		t.Errorf("the campaign screen while paused:\n%s", v)
	}
	// No node operation runs while paused, but the campaign does: q asks, w goes back.
	l.keys("q")
	if v := l.m.View(); !on[*quitPane](&l.m) || !strings.Contains(v, "a campaign") {
		t.Fatalf("q while the campaign is paused: screen %v\n%s", screenOf(l.m), v)
	}
	l.keys("w")
	l.keys("p")
	l.drain("the campaign done", func() bool { return rec().State == model.CampaignDone })
	for _, n := range rec().Nodes {
		if k := c.Node(n.Name); n.Phase != model.PhaseDone || !k.Schedulable {
			t.Errorf("%s: %s, schedulable %v", n.Name, n.Phase, k.Schedulable)
		}
	}
	if _, ok := l.m.s.ops.views[c1]; !ok {
		t.Errorf("no operation view for %s's evacuation", c1)
	}
}

// The campaign's proposal takes the node plan's overrides and the step at each node: S
// leaves the VM that refuses a node (every node planned again), ! types --exec (checked as
// the command line checks it), W toggles --wait-ready, and y waits for the new proposal.
func TestTUICampaignProposalTakesOverridesAndTheStep(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.World.Break("vm-b", "disk /dev/sdb vanished")
	vmb, _ := c.World.ServerByName("vm-b")
	c0, c1 := c.Name("c0"), c.Name("c1")
	l := newLive(t, c, c.Engine("tui@campaign", nil))
	l.selectNodes(c0, c1)
	l.keys("C")
	if !on[*campaignPane](&l.m) || !strings.Contains(l.m.View(), "refused by 2 blocker(s):") {
		t.Fatalf("C: the refused %s is not shown (screen %v):\n%s", c0, screenOf(l.m), l.m.View())
	}

	// S, its proposal not yet back: y waits for it and says so.
	next, cmd := l.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'S'}})
	l.m = next.(Model)
	l.keys("y")
	if l.m.s.campaign.started || !strings.Contains(l.m.status, "planning every node again") {
		t.Fatalf("y while the proposal is planned again: started %v, status %q", l.m.s.campaign.started, l.m.status)
	}
	l.send(cmd())
	if o := l.m.s.campaign.opts.Run.Policy; len(o.SkipVMs) != 1 || o.SkipVMs[0] != vmb.ID || o.Force {
		t.Fatalf("S: policy %+v", o)
	}
	v := l.m.View()
	refusesVMB := slices.ContainsFunc(strings.Split(v, "\n"), func(line string) bool {
		return strings.Contains(line, "vm-b") && !strings.Contains(line, "notes vm-b: left on the node as asked") // its note, not a refusal
	})
	if refusesVMB || !strings.Contains(v, "runs with: --skip-vm "+vmb.ID) {
		t.Errorf("after S, vm-b still refuses %s or the override is not shown:\n%s", c0, v)
	}

	// A {node} inside quotes is refused as on the command line; the proposal stays as it was.
	l.keys("!")
	l.keys("ssh -- '{node}' reboot")
	l.keys("enter")
	if !strings.Contains(l.m.status, "inside ' quotes") || l.m.s.campaign.opts.Exec != "" {
		t.Fatalf("a quoted {node}: status %q, exec %q", l.m.status, l.m.s.campaign.opts.Exec)
	}
	// q typed into the command is a letter, not quit.
	l.keys("!")
	l.keys("true {node} q")
	l.keys("enter", "W")
	if !on[*campaignPane](&l.m) {
		t.Fatalf("typing the command left the screen: %v", screenOf(l.m))
	}
	r := l.m.s.campaign.run.Record()
	if r.Exec != "true {node} q" || !r.WaitReady || len(l.m.s.campaign.opts.Run.Policy.SkipVMs) != 1 {
		t.Errorf("the proposal runs exec %q, wait-ready %v, options %+v", r.Exec, r.WaitReady, l.m.s.campaign.opts)
	}
	v = l.m.View()
	for _, want := range []string{"run the command, wait for the reboot", "--exec 'true {node} q'", "--wait-ready"} {
		if !strings.Contains(v, want) {
			t.Errorf("the proposal does not show %q:\n%s", want, v)
		}
	}
	if n := c.Muts.N.Load(); n != 0 {
		t.Fatalf("proposing the campaign changed the cluster (%d calls)", n)
	}
}

// A campaign refused at its check before the first node says so once: the title says it
// stopped, each refused node keeps its blockers beside it, and no status line repeats them.
func TestTUICampaignRefusalIsSaidOnce(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.World.Break("vm-b", "disk /dev/sdb vanished")
	l := newLive(t, c, c.Engine("tui@campaign", nil))
	l.selectNodes(c.Name("c0"), c.Name("c1"))
	l.keys("C")
	next, run := l.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'y'}})
	l.m = next.(Model)
	done, ok := run().(campaignDone)
	if !ok || done.err == nil {
		t.Fatalf("y: %#v", done)
	}
	l.send(done)
	v := l.m.View()
	if n := strings.Count(v, "vm-b"); n != 1 || !strings.Contains(v, "stopped before the first node: 1 node(s) refused") || l.m.status != "" {
		t.Errorf("the refusal is said %d times (status %q):\n%s", n, l.m.status, v)
	}
	// At 80 columns (and at 160 with a long campaign name) the refusal's header is whole,
	// under the title: it was cut at the edge.
	l.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	v = l.m.View()
	if flat := strings.Join(strings.Fields(v), " "); !strings.Contains(flat, "each beside its blockers (esc, then C proposes it again)") {
		t.Errorf("the refusal's header at 80 columns is cut:\n%s", v)
	}
	for _, line := range strings.Split(v, "\n") {
		if w := lipgloss.Width(line); w > 80 {
			t.Errorf("a line is %d wide at 80 columns: %q", w, line)
		}
	}
}

// Quitting a campaign mid-node: the summary's resume is the campaign's command with the
// options it runs with (--force toggled in its proposal), and the node's line points to it.
func TestTUICampaignLeftUnfinishedResumesWithItsOptions(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	l := newLive(t, c, c.Engine("tui@campaign", nil))
	l.selectNodes(c0, c1)
	l.keys("C", "F", "y")
	l.drain(c0+"'s operation", func() bool { _, ok := l.m.s.ops.views[c0]; return ok && len(l.m.s.ops.runningKeys()) > 0 })
	var b strings.Builder
	l.m.summary(&b)
	name := l.m.s.campaign.run.Record().Name
	for _, want := range []string{
		"evacuate " + c0 + " (a node of campaign " + name + "): interrupted at",
		"the campaign's command below resumes it",
		"resume: drainctl --auto roll " + c0 + " " + c1 + " --force",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, b.String())
		}
	}
	l.m.stop(l.m.s.campaign.cancel, 30*time.Second)
}

// :campaign in a TUI that runs none shows the campaign another process runs (--auto roll,
// a colleague's terminal), from its record: its state and holder, its nodes' phases, read
// again while the screen is open; esc leaves it running, and p does not pause it.
func TestTUIWatchesACampaignRunElsewhere(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c1, c2 := c.Name("c1"), c.Name("c2")
	ctx := kubetest.Ctx(t)
	r, err := campaign.New(ctx, c.Engine("roll@elsewhere", nil), campaign.Options{Nodes: []string{c1, c2}, Run: ops.RunOptions{Policy: simtest.Defaults()}}, func(ops.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	r.Pause() // it waits before its first node: a state the screen can be read in
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	kubetest.Eventually(t, 30*time.Second, "the campaign paused", func() bool { return r.Record().State == model.CampaignPaused })

	l := newLive(t, c, c.Engine("tui@here", nil))
	l.keys(":", "campaign", "enter")
	v := l.m.View()
	if !on[*campaignPane](&l.m) || !strings.Contains(v, "campaign "+r.Record().Name) || !strings.Contains(v, "paused · watched") || !strings.Contains(v, "run by roll@elsewhere") ||
		!strings.Contains(v, "0 done · 0 in progress · 2 left") || strings.Count(v, " pending ") != 2 {
		t.Fatalf(":campaign does not show the campaign run elsewhere (screen %v, status %q):\n%s", screenOf(l.m), l.m.status, v)
	}
	l.keys("p")
	if r.Paused() != true || r.Record().State != model.CampaignPaused {
		t.Fatal("p on a watched campaign changed it")
	}

	r.Resume()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	l.keys("?")                                                            // the help over it: the watch goes on under it
	l.send(l.m.readWatched(r.Record().Name, 0, l.m.s.campaign.watchSeq)()) // the refresh's read
	l.keys("esc")
	if v := l.m.View(); !strings.Contains(v, "done · watched") || !strings.Contains(v, "2 done · 0 in progress · 0 left") {
		t.Errorf("the watched campaign's end is not shown:\n%s", v)
	}
	l.keys("esc")
	if !on[*nodesPane](&l.m) {
		t.Errorf("esc on the watched campaign: screen %v", screenOf(l.m))
	}
	l.keys(":", "campaign", "enter")
	if on[*campaignPane](&l.m) || !strings.Contains(l.m.status, "no campaign runs") {
		t.Errorf(":campaign with none running: screen %v, status %q", screenOf(l.m), l.m.status)
	}
}

// A campaign record is a claim: whoever may write the object wrote it, and a process killed
// mid-campaign leaves "running" behind. :campaign shows a forged one escaped (its holder, its
// nodes' names and errors), bounded to the screen however many nodes it lists (as many as a ConfigMap holds), and says when
// it was last written, so a record hours old does not pass for a campaign running now.
func TestTUIWatchedCampaignRecordIsAClaim(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	e := c.Engine("tui@here", nil)
	written := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	forged := model.Campaign{Name: "forged", State: model.CampaignRunning, Holder: "evil\x1b[2J\x1b]0;pwned\a", Started: written, Updated: written}
	for i := range 3000 {
		forged.Nodes = append(forged.Nodes, model.CampaignNode{Name: fmt.Sprintf("n%04d\x1b[31m", i), Phase: model.PhaseEvacuating,
			Error: "boom\x1b[2J" + strings.Repeat("x", 100)}) // a ConfigMap holds at most 1 MiB: about as much as one holds
	}
	data, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Records().SaveRecord(kubetest.Ctx(t), "campaign-forged", data); err != nil {
		t.Fatal(err)
	}
	l := newLive(t, c, e)
	l.keys(":", "campaign", "enter")
	v := l.m.View()
	if !on[*campaignPane](&l.m) {
		t.Fatalf(":campaign did not show the record: status %q", l.m.status)
	}
	if strings.ContainsAny(v, "\x1b\a") {
		t.Errorf("the forged record reached the terminal unescaped:\n%q", v)
	}
	if !strings.Contains(v, "record written 3h00m ago ("+written.Format("15:04:05")+")") {
		t.Errorf("the screen does not say the record is hours old:\n%s", v)
	}
	checkFits(t, v, 160, 45)
}

// BenchmarkWatchedCampaignFrame measures what the TUI does beside a 1,000-node campaign with
// :campaign open (#41.4), on a 1,000-node inventory: a key's frame (? opens the help, esc
// comes back, each an Update and a View) and a refresh of the campaign's record (its read
// arriving, and the View). A frame is 16 ms.
func BenchmarkWatchedCampaignFrame(b *testing.B) {
	const n = 1000
	m := newModel(b, n-2, 160, 45)
	rec := func(done int) model.Campaign {
		c := model.Campaign{Name: "bench", State: model.CampaignRunning, Holder: "roll@elsewhere", Parallel: 20, Started: t0.Add(-time.Hour), Updated: t0}
		for i := range n {
			node := model.CampaignNode{Name: fmt.Sprintf("compute-%d", i), Phase: model.PhasePending}
			switch {
			case i < done:
				node.Phase, node.Started, node.Finished = model.PhaseDone, t0.Add(-time.Hour), t0.Add(-time.Minute)
			case i < done+20:
				node.Phase, node.Started, node.Blocked = model.PhaseEvacuating, t0.Add(-time.Minute), "migrating 2 VMs"
			}
			c.Nodes = append(c.Nodes, node)
		}
		return c
	}
	m.s.campaign = campaignState{watching: true, watched: rec(n / 2), watchedAt: t0, watchSeq: 1}
	m = m.goTo(&campaignPane{})
	help, esc := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("?")}, tea.KeyMsg{Type: tea.KeyEsc}
	watching := m
	b.Run("key", func(b *testing.B) {
		m := watching // each run from the campaign screen
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			key := help
			if i%2 == 1 {
				key = esc
			}
			next, _ := m.Update(key)
			m = next.(Model)
			_ = m.View()
		}
		if !on[*campaignPane](&m) && !on[*helpPane](&m) {
			b.Fatalf("the keys left the campaign: screen %v", screenOf(m))
		}
	})
	m = watching
	records := []model.Campaign{rec(n/2 + 1), rec(n/2 + 2)}
	b.Run("record-read", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			next, _ := m.Update(campaignWatched{c: records[i%2], found: true, seq: 1})
			m = next.(Model)
			_ = m.View()
		}
	})
	if !strings.Contains(m.View(), "run by roll@elsewhere") {
		b.Fatalf("the watched campaign is not on screen:\n%s", m.View())
	}
}

// #53.3: a campaign under --force says what it would lose for good before y, under its node,
// as the node's own plan does: the bare pod that nothing recreates.
func TestTUICampaignProposalSaysWhatItLoses(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c0 := c.Name("c0")
	l := newLive(t, c, c.Engine("tui@campaign", nil))
	l.selectNodes(c0)
	l.keys("C")
	if v := l.m.View(); strings.Contains(v, "LOST FOR GOOD") {
		t.Fatalf("without --force nothing is lost, the bare pod refuses:\n%s", v)
	}
	next, cmd := l.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'F'}})
	l.m = next.(Model)
	l.send(cmd())
	if v := l.m.View(); !strings.Contains(v, "runs with: --force") || !strings.Contains(v, "LOST FOR GOOD "+c.NS+"/shell: bare pod") {
		t.Errorf("under --force the proposal does not say the bare pod is lost:\n%s", v)
	}
}

// The campaign's proposal offers O, as a node's plan does: a VM whose owner asks it to stay is
// moved anyway with O (by ID, as --override-vm-policy); after S (which leaves it) O says why it
// has nothing to move, never nothing.
func TestTUICampaignProposalOffersO(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.World.SetMetadata("vm-a", "drainctl:maintenance", "stays")
	vma, _ := c.World.ServerByName("vm-a")
	c0 := c.Name("c0")
	l := newLive(t, c, c.Engine("tui@campaign", nil))
	l.selectNodes(c0)
	l.keys("C")
	if v := l.m.View(); !strings.Contains(v, "O moves the VMs whose own policy blocks anyway") {
		t.Fatalf("the proposal does not name O:\n%s", v)
	}
	next, cmd := l.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'O'}})
	l.m = next.(Model)
	l.send(cmd())
	if o := l.m.s.campaign.opts.Run.Policy; len(o.OverrideVMPolicies) != 1 || o.OverrideVMPolicies[0] != vma.ID {
		t.Fatalf("O: policy %+v", o)
	}
	next, cmd = l.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'O'}}) // off again
	l.m = next.(Model)
	l.send(cmd())
	next, cmd = l.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'S'}})
	l.m = next.(Model)
	l.send(cmd())
	l.keys("O")
	if !strings.Contains(l.m.status, "O: no VM's own policy blocks a node now") {
		t.Errorf("O after S: status %q", l.m.status)
	}
}

// A campaign started in the TUI keeps the configuration's [roll] (its rate budgets, its
// window), as roll does, and its proposal says them; it shows each VM's note as the node's plan
// and roll --dry-run do: a VM its owner asks be stopped and moved cold is DOWNTIME.
func TestTUICampaignKeepsTheConfiguredRollAndSaysEachVMsNote(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.World.SetMetadata("vm-b", model.VMPolicyKey, string(model.PolicyStopStart)) // its owner's: stopped, moved cold
	c0, c1 := c.Name("c0"), c.Name("c1")
	budget, _ := model.ParseRateBudget("1 per 10m")
	win, err := campaign.ParseWindow("daily 00:00-23:59 UTC")
	if err != nil {
		t.Fatal(err)
	}
	l := newLive(t, c, c.Engine("tui@campaign", nil))
	l.m.s.opts.Campaign = campaign.Options{Gates: campaign.GateOptions{Budgets: []model.RateBudget{budget}, Window: win}}
	l.selectNodes(c0, c1)
	l.keys("C")
	if !on[*campaignPane](&l.m) {
		t.Fatalf("C: screen %v", screenOf(l.m))
	}
	if g := l.m.s.campaign.opts.Gates; len(g.Budgets) != 1 || g.Window == nil {
		t.Errorf("the TUI's campaign gates: %+v; want the configuration's budget and window", g)
	}
	v := l.m.View()
	for _, want := range []string{`rate budget "1 per 10m": the campaign takes at least`, "no node starts outside the window daily 00:00-23:59 UTC",
		"DOWNTIME vm-b"} {
		if !strings.Contains(v, want) {
			t.Errorf("the proposal does not say %q:\n%s", want, v)
		}
	}
}
