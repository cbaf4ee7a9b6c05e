package ui

import (
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
)

// Every message the view receives besides bubbletea's own (keys, window size).
type (
	// inventoryMsg: a load finished (the inventory, its ranking and the NodeMaintenances).
	inventoryMsg struct {
		inv     model.Inventory
		victims []policy.Victim
		maint   []model.NodeMaintenance
		holds   []model.RecoveryHold // what holds automatic recovery, from the cluster's records
		// holdsErr: they could not be read; the last ones read stay on screen.
		holdsErr error
		// proactive: [proactive]'s records by node (nil: none configured, or unread).
		proactive map[string]model.Proactive
		err       error
		// stale: the read failed (err); inv is the Kubernetes cache joined with the last
		// Nova read, made at novaAt (zero: never), so the Kubernetes half stays on screen.
		stale  bool
		novaAt time.Time
		// fresh: Nova was read, in took; unmoved: it showed nothing new.
		fresh   bool
		took    time.Duration
		unmoved bool
	}
	// maintMsg: the NodeMaintenance resources changed.
	maintMsg []model.NodeMaintenance
	// syncMsg: the first read of Kubernetes goes on (syncing) with inv what it has read so
	// far, or it has ended (inv then complete, before the ranking that follows).
	syncMsg struct {
		inv     model.Inventory
		syncing bool
	}
	// kubeMsg: the informers saw a change; tickMsg: time to read Nova again.
	kubeMsg struct{}
	tickMsg struct{}
	// planMsg: plans are ready for confirmation.
	planMsg pending
	// batchDone: a batch of operations started from this view has ended.
	batchDone struct{ err error }
	// abortedForQuit: the quit dialog's aborts have ended; quit unless one failed.
	abortedForQuit struct{ err error }
	// stoppedMsg: every operation of this view has stopped (after "leave").
	stoppedMsg struct{}
	statusMsg  string
	errorMsg   struct{ err error }
	// eventsMsg is a batch of engine events, in order, each tagged with its operation.
	eventsMsg []tagged
)

// tagged routes an event to the operation view that started it (gh-dash's envelope).
type tagged struct {
	ev       ops.Event // a field, not embedded: a tagged event is no ops.Event of its own
	key      string
	campaign bool // a campaign's node operation: its view is made when its plan arrives
}

// eventBus carries engine events to the view without ever blocking the engine: transitions
// queue, progress samples are coalesced per VM (the latest wins), and one wake-up covers
// any number of events.
type eventBus struct {
	mu       sync.Mutex
	queue    []tagged
	progress map[string]int // VMID -> index in queue of its pending progress event
	wake     chan struct{}
}

func newEventBus() *eventBus {
	return &eventBus{progress: map[string]int{}, wake: make(chan struct{}, 1)}
}

// emitFor is the engine's emit for the operation shown under key.
func (b *eventBus) emitFor(key string) func(ops.Event) {
	return func(ev ops.Event) { b.push(tagged{ev: ev, key: key}) }
}

func (b *eventBus) push(ev tagged) {
	b.mu.Lock()
	if m, ok := ev.ev.(ops.MigrationEvent); ok && m.Progress() {
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

// drain takes every event still queued (after the program has ended).
func (b *eventBus) drain() []tagged {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue
	b.queue, b.progress = nil, map[string]int{}
	return q
}

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
