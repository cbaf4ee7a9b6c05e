package ui

import (
	"sync"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/ops"
)

// eventBus carries engine events to the UI without ever blocking the engine: transitions
// queue, progress samples are coalesced per VM (the latest wins), and one wake-up covers
// any number of events.
type eventBus struct {
	mu       sync.Mutex
	queue    []ops.Event
	progress map[string]int // VMID -> index in queue of its pending progress event
	wake     chan struct{}
}

func newEventBus() *eventBus {
	return &eventBus{progress: map[string]int{}, wake: make(chan struct{}, 1)}
}

// Emit is the engine's emit function.
func (b *eventBus) Emit(ev ops.Event) {
	b.mu.Lock()
	inner := ev
	if t, ok := ev.(tagged); ok {
		inner = t.Event
	}
	if m, ok := inner.(ops.MigrationEvent); ok && m.Progress() {
		if i, ok := b.progress[m.VMID]; ok {
			b.queue[i] = ev // coalesce: replace the pending sample
			b.mu.Unlock()
			return
		}
		b.progress[m.VMID] = len(b.queue)
	}
	b.queue = append(b.queue, ev)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// eventsMsg is a batch of engine events, in order.
type eventsMsg []ops.Event

// wait returns a Cmd that delivers the next batch; Update re-arms it after each batch.
func (b *eventBus) wait() tea.Cmd {
	return func() tea.Msg {
		<-b.wake
		b.mu.Lock()
		batch := b.queue
		b.queue = nil
		b.progress = map[string]int{}
		b.mu.Unlock()
		return eventsMsg(batch)
	}
}
