package ui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/ops/sim"
)

// [capacity] tolerate = 1: the header shows the room for the next host failure as the cluster
// stands (zone, hosts tolerated of those asked, memory and vCPU spare). With c1 and c2 full,
// the largest host's VM would find no room were it to die: the header says ROOM SHORT first (a screen 80
// columns wide keeps it) and the shortfall last.
func TestTheHeaderSaysTheFailoverRoom(t *testing.T) {
	c := simtest.NewCluster(t, 100)
	c.Cfg.Capacity.Tolerate = 1
	l := newLive(t, c, c.Engine("tui@room", nil))
	h := l.m.header()
	if !strings.Contains(h, "failover room: nova 1/1, ") || !strings.Contains(h, " GiB ") || strings.Contains(h, "ROOM SHORT") {
		t.Errorf("a roomy cluster: %q", h)
	}

	for _, host := range []string{"c1", "c2"} { // one VM of 255 GiB each: c0's 246 free cannot take it
		c.World.AddServer("big-"+host, c.Name(host), sim.Flavor{Name: "huge", RAMMB: 255 << 10, VCPUs: 1, DiskGB: 10})
	}
	l.send(l.m.load(true)()) // read again
	h = l.m.header()
	if !strings.Contains(h, "ROOM SHORT") || !strings.Contains(h, "FAILOVER ROOM SHORT: nova 0/1, short 255 GiB 1 vCPU") {
		t.Errorf("c1 and c2 full: %q", h)
	}
	l.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	if h := l.m.header(); !strings.Contains(h, "ROOM SHORT") || lipgloss.Width(h) > 80 {
		t.Errorf("at 80 columns: %q", h)
	}
}
