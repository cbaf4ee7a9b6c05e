package simtest

import (
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/sim"
)

// Notices samples the simulator every 2 ms for the owners told ahead (#57.3): when the
// notice each VM carries first showed (a new value: again), and when its move began (it
// migrating, resizing, stopping, or off the host it was on at the start), with its metadata
// then.
type Notices struct {
	mu              sync.Mutex
	ToldAt, MovedAt map[string]time.Time
	NoticeWhenMoved map[string]string
	seen            map[string]string
	home, first     map[string]string
	stop, stopped   chan struct{}
}

// SampleNotices starts sampling; meddle (may be nil) sees each VM first and may change it as
// an actor would (true: the VM's sample is skipped this round). Stop ends it.
func SampleNotices(w *sim.World, meddle func(vm *sim.VM, now time.Time) bool) *Notices {
	s := &Notices{ToldAt: map[string]time.Time{}, MovedAt: map[string]time.Time{}, NoticeWhenMoved: map[string]string{},
		seen: map[string]string{}, home: map[string]string{}, first: map[string]string{},
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(s.stopped)
		for {
			now := time.Now()
			w.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
				s.mu.Lock()
				defer s.mu.Unlock()
				for _, vm := range vms {
					if meddle != nil && meddle(vm, now) {
						continue
					}
					if _, ok := s.home[vm.Name]; !ok {
						s.home[vm.Name], s.first[vm.Name] = vm.Host, vm.Status
					}
					notice := vm.Metadata[model.NoticeKey]
					moving := vm.Status == "MIGRATING" || vm.Status == "RESIZE" || vm.Host != s.home[vm.Name] ||
						vm.Status != s.first[vm.Name] || vm.TaskState == "powering-off" // a stop in place
					if notice != s.seen[vm.Name] && s.MovedAt[vm.Name].IsZero() {
						s.seen[vm.Name], s.ToldAt[vm.Name] = notice, now
					}
					if moving && s.MovedAt[vm.Name].IsZero() {
						s.MovedAt[vm.Name], s.NoticeWhenMoved[vm.Name] = now, notice
					}
				}
			})
			select {
			case <-s.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return s
}

// Stop ends the sampling; the maps are the test's after it.
func (s *Notices) Stop() {
	close(s.stop)
	<-s.stopped
}
