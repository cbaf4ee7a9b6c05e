package ui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
)

// Reading the cluster: every call runs in a Cmd, off the UI path.

// load reads the inventory and ranks it. fresh reads Nova again; otherwise the Kubernetes
// cache is re-joined with the last Nova read.
func (m Model) load(fresh bool) tea.Cmd {
	if m.eng == nil {
		return nil
	}
	eng, ctx, pol, store := m.eng, m.ctx, m.s.opts.Policy, m.s.opts.Maintenances
	return func() tea.Msg {
		start := time.Now()
		victims, inv, err := eng.Recommend(ctx, pol, fresh)
		msg := inventoryMsg{
			inv:     inv,
			victims: victims,
			err:     err,
			fresh:   fresh,
			took:    time.Since(start),
			unmoved: eng.Inventory().NovaUnmoved(),
		}
		if err != nil {
			msg.inv, msg.novaAt = eng.Inventory().Cached()
			msg.stale = true
		}
		if store != nil {
			msg.maint = store.List()
		}
		msg.holds, msg.holdsErr = eng.RecoveryHolds(ctx)
		if len(eng.Config().Proactive.Conditions) > 0 { // what the controller did, or refused, of a degrading node
			msg.proactive, _ = eng.Proactives(ctx)
		}
		return msg
	}
}

func (m *Model) refresh(fresh bool) tea.Cmd {
	if m.loading {
		m.wantFresh = m.wantFresh || fresh
		return nil
	}
	m.loading = true
	return m.load(fresh)
}

// watchMaintenances follows the NodeMaintenance resources (their status moves on while the
// controller works), at most four times a second.
func (m Model) watchMaintenances() tea.Cmd {
	store := m.s.opts.Maintenances
	if store == nil {
		return nil
	}
	return m.watch(store.Subscribe, 250*time.Millisecond, func() tea.Msg { return maintMsg(store.List()) })
}

// noticeMsg is what a controller of this process told the person on call.
type noticeMsg struct{ model.Notice }

// noticeIsBad: the notices shown as a warning.
var noticeIsBad = map[model.NoticeKind]bool{model.NoticeStorm: true, model.NoticeRecoveryFailed: true, model.NoticeRecoveryRefused: true,
	model.NoticeFenceFailed: true, model.NoticeVMNotRebuilt: true, model.NoticeWebhookFailed: true,
	model.NoticeDegrading: true, model.NoticeProactiveFailed: true, model.NoticeProactiveRefused: true}

// watchNotices waits for the next notice of the controllers running beside the TUI (the
// demo's automatic recovery).
func (m Model) watchNotices() tea.Cmd {
	ch, ctx := m.s.opts.Notices, m.ctx
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case n := <-ch:
			return noticeMsg{n}
		case <-ctx.Done():
			return nil
		}
	}
}

// watch waits for a change, then for quiet (at most one message per quiet period), and
// reports it as msg.
func (m Model) watch(subscribe func() (<-chan struct{}, func()), quiet time.Duration, msg func() tea.Msg) tea.Cmd {
	ctx := m.ctx
	return func() tea.Msg {
		ch, cancel := subscribe()
		defer cancel()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-time.After(quiet):
		case <-ctx.Done():
		}
		return msg()
	}
}

func (m Model) tick() tea.Cmd {
	return tea.Tick(max(m.every, m.s.opts.Refresh), func(time.Time) tea.Msg { return tickMsg{} })
}

// nextEvery is the wait before the next Nova read: the configured interval while Nova shows
// something new, doubling while it shows nothing (up to twelve times the interval: a minute
// by default), and never less than three times what the last read took. An idle terminal
// must not load a production Nova and Placement; r still reads everything at once.
func (m Model) nextEvery(msg inventoryMsg) time.Duration {
	base := m.s.opts.Refresh
	every := base
	if msg.unmoved {
		every = min(max(m.every, base)*2, 12*base)
	}
	return max(every, 3*msg.took)
}

// watchKube turns informer changes into refreshes, at most one a second.
func (m Model) watchKube() tea.Cmd {
	if m.eng == nil {
		return nil
	}
	return m.watch(m.eng.Inventory().Subscribe, time.Second, func() tea.Msg { return kubeMsg{} })
}

// watchSync shows the cluster while its first read goes on: the nodes at once, their pods
// as they arrive (twice a second), then everything read, before the ranking is done.
func (m Model) watchSync(after time.Duration) tea.Cmd {
	if m.eng == nil {
		return nil
	}
	ctx, inv := m.ctx, m.eng.Inventory()
	return func() tea.Msg {
		select {
		case <-time.After(after):
		case <-ctx.Done():
			return nil
		}
		syncing := inv.Syncing()
		in, _ := inv.Cached()
		return syncMsg{inv: in, syncing: syncing}
	}
}
