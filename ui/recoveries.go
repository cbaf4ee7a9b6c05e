package ui

import (
	"context"
	"slices"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/text"
)

// :recoveries lists the recoveries recorded on the cluster with their ledgers (by hand or
// automatic): a row for each recovery, then one for each of its VMs. The records are read
// when the list opens (they are no part of the inventory).

type recoveriesMsg struct {
	recs  []model.Recovery
	pause *model.RecoveryPause // automatic recovery held by a person, or nil
	err   error
}

// openRecoveries reads the records in a Cmd; the list opens when they arrive.
func (m Model) openRecoveries() (tea.Model, tea.Cmd) {
	if m.eng == nil {
		m.setStatus("no cluster", true)
		return m, nil
	}
	eng, ctx := m.eng, m.ctx
	return m, func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, m.s.opts.Refresh)
		defer cancel()
		recs, err := eng.Recoveries(ctx)
		if err != nil {
			return recoveriesMsg{err: err}
		}
		pause, err := eng.RecoveryPause(ctx)
		return recoveriesMsg{recs, pause, err}
	}
}

func (m Model) recoveriesRead(msg recoveriesMsg) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		m.setStatus("reading the recovery records: "+firstLine(text.SafeErr(msg.err)), true)
		return m, nil
	}
	m.s.recoveries = msg.recs
	l := &listPane{}
	l.open(recoveryList, &m.s)
	m = m.goTo(l)
	if p := msg.pause; p != nil { // said on the list's screen
		m.setStatus(text.Safe(text.RecoveryPause(*p)), true)
	}
	return m, nil
}

// recoveryColumns: the node or VM, its outcome or status, where it went, how long, and
// how it was started (by hand, automatic) or why a VM stays.
func recoveryColumns(s *shared) []listColumn {
	if s.width < 120 { // narrow: where each VM went and why one stays come before when and how long
		return fitColumns([]listColumn{{"NODE / VM", 22, 0}, {"STATUS", 10, 1}, {"TO", 14, 2}, {"WHY", 20, 6}}, s.width)
	}
	// When it started is said in the recovery's own WHY ("automatic, started …"): a column of
	// it took the room of why a VM stays, cut at 160 columns.
	return fitColumns(
		[]listColumn{{"NODE / VM", 24, 0}, {"STATUS", 10, 1}, {"TO", 14, 2}, {"TOOK", 6, 3}, {"MIGRATION", 9, 4}, {"WHY", 30, 6}},
		s.width,
	)
}

// recoveryRows: each recovery, then its ledger's moves.
func recoveryRows(s *shared) []listRow {
	var out []listRow
	for _, r := range s.recoveries {
		how, took := "by hand", ""
		if r.Automatic {
			how = "automatic"
		}
		if !r.Finished.IsZero() {
			took = text.Duration(r.Finished.Sub(r.Started))
		}
		why := how + ", started " + text.Time(r.Started)
		if r.Error != "" {
			why += ": " + text.Safe(firstLine(r.Error))
		}
		out = append(out, listRow{key: r.Node, node: r.Node, search: text.Safe(r.Node),
			cells: []string{text.Safe(r.Node), r.Outcome, "", took, "", text.Time(r.Started), why}})
		for _, mv := range r.Moves {
			took := text.Duration(mv.Duration)
			if mv.Status == model.MoveLeft { // never moved: no time it took
				took = ""
			}
			out = append(out, listRow{key: mv.VMID, node: r.Node, search: text.Safe(r.Node + " " + mv.VM),
				cells: []string{
					"  " + text.Safe(mv.VM),
					mv.Status,
					text.Safe(mv.Dest),
					took,
					text.MigrationID(mv.MigrationID),
					text.Time(mv.Started),
					text.Safe(mv.Reason),
				}})
		}
	}
	return out
}

// describeRecovery is one node's recovery ledger whole (d or enter on its rows): what the
// list's columns cut, the reason each VM stays above all, and never the VM's state now
// (which says nothing of what the recovery did with it).
func describeRecovery(node string, s *shared) (describePane, bool) {
	i := slices.IndexFunc(s.recoveries, func(r model.Recovery) bool { return r.Node == node })
	if i < 0 {
		return describePane{}, false
	}
	r := s.recoveries[i]
	how := "by hand"
	if r.Automatic {
		how = "automatic"
	}
	d := describePane{title: text.Sprintf("recovery of %s: %s (%s)", r.Node, r.Outcome, how)}
	add := func(f string, a ...any) { d.lines = append(d.lines, text.Sprintf(f, a...)) }
	add("by %s · host %s · outage since %s", none(r.By), none(r.Host), text.Time(r.Outage))
	add("started %s · finished %s", text.Time(r.Started), text.Time(r.Finished))
	for _, o := range r.Options {
		add("given: %s %s", string(o.Override), o.Object)
	}
	if r.Error != "" {
		add("error: %s", r.Error)
	}
	for _, mv := range r.Moves {
		switch {
		case mv.Status == model.MoveLeft:
			add("VM %s (%s): left on %s", mv.VM, mv.VMID, mv.Source)
		default:
			add("VM %s (%s): %s, %s %s → %s · migration %s · took %s", mv.VM, mv.VMID, mv.Status, mv.Method, mv.Source, none(mv.Dest),
				none(text.MigrationID(mv.MigrationID)), text.Duration(mv.Duration))
		}
		if mv.Reason != "" {
			add("  why: %s", mv.Reason)
		}
	}
	return d, true
}
