package ui

import (
	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
)

// The inventory on screen: a read arrived, or failed.

// refreshing is the status r shows until the read it asked for arrives.
const refreshing = "refreshing…"

func (m Model) inventoryLoaded(msg inventoryMsg) (tea.Model, tea.Cmd) {
	m.loading = false
	if m.status == refreshing && !m.wantFresh { // the refresh it spoke of has ended
		m.setStatus("", false)
	}
	if msg.fresh && msg.err == nil {
		m.every = m.nextEvery(msg)
	}
	var next tea.Cmd
	if m.wantFresh {
		m.wantFresh = false
		next = m.refresh(true)
	}
	s := &m.s
	if msg.err != nil {
		if s.invErr == nil {
			s.errSince = s.opts.Now()
		}
		s.invErr, s.novaAt = msg.err, msg.novaAt
		if !msg.stale {
			return m, next
		}
		// The Kubernetes half stays on screen (the last Nova read, if any); the banner says what failed.
		s.loaded = true
	} else {
		s.invErr, s.loaded = nil, true
		s.victims, s.rank = msg.victims, make(map[string]int, len(msg.victims))
		for _, v := range msg.victims {
			s.rank[v.Node] = v.Rank
		}
	}
	if msg.maint != nil || s.opts.Maintenances == nil {
		m.setMaintenances(msg.maint)
	}
	if msg.holdsErr == nil {
		s.holds = msg.holds
	}
	if msg.proactive != nil {
		s.proactive = msg.proactive
	}
	s.syncing = false
	m.showInventory(msg.inv)
	return m, next
}

// showInventory puts an inventory on screen: totals, the node list's rows, an open list.
func (m *Model) showInventory(inv model.Inventory) {
	s := &m.s
	on := m.nodes().currentName(s) // before the rows' indices change meaning
	s.inv = inv
	s.invGen++
	if m.eng != nil {
		s.failover = m.eng.FailoverRoom(inv)
	}
	s.nameWidth, s.totalVMs, s.totalPods = 8, 0, 0
	for _, n := range s.inv.Nodes {
		s.nameWidth = min(32, max(s.nameWidth, len(n.Name)+1))
		s.totalVMs += len(n.VMs)
		s.totalPods += len(n.Pods)
	}
	m.nodes().refilter(s, on)
	if l, ok := m.top().(*listPane); ok && l.pick == nil {
		l.rebuild(s)
	}
}
