package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/internal/simtest"
)

// A plan taller than an 80x24 screen keeps its keys within reach: ? shows every key the
// footer's line leaves out (and esc comes back to the plan), and the reason being typed (w)
// stays in view under the plan however it is scrolled.
func TestAShortScreensPlanKeepsItsKeysAndTheReasonInView(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.World.Break("vm-b", "disk /dev/sdb vanished") // a blocker more: the S key joins the footer
	l := newLive(t, c, c.Engine("tui@keys", nil))
	l.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	l.selectNodes(c.Name("c0"))
	l.keys("e")
	if !on[*confirmPane](&l.m) {
		t.Fatalf("e: screen %v", screenOf(l.m))
	}
	l.keys("?", "pgdown", "pgdown")
	if !on[*helpPane](&l.m) || !strings.Contains(l.m.View(), "--skip-vm each VM that blocks") {
		t.Fatalf("? on a plan: screen %v\n%s", screenOf(l.m), l.m.View())
	}
	l.keys("esc")
	if !on[*confirmPane](&l.m) {
		t.Fatalf("esc from the help: screen %v", screenOf(l.m))
	}
	l.keys("w")
	for _, r := range "kernel" {
		l.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	v := l.m.View()
	if lines := strings.Split(v, "\n"); len(lines) > 24 || !strings.Contains(v, "reason: kernel") {
		t.Errorf("the reason being typed is not in view (%d lines):\n%s", len(lines), v)
	}
}
