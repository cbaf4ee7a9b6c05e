package ops

import (
	"context"
	"sync"
	"testing"
)

// Admissions counts the passes through the admission list (beforeRequest) in which every
// check held, by VM ID, and the passes that ended without the cluster-wide start lock held:
// it wraps the list's last check, so the real checks run as they do. Put back at the test's end.
func Admissions(t testing.TB) (passes func() map[string]int, unlocked func() []string) {
	var mu sync.Mutex
	counted, without := map[string]int{}, []string{}
	list := beforeRequest
	wrapped := append([]requestCheck(nil), list...)
	last := wrapped[len(wrapped)-1]
	wrapped[len(wrapped)-1].check = func(r *runner, ctx context.Context, q *vmRequest) verdict {
		v := last.check(r, ctx, q)
		if v == proceed {
			mu.Lock()
			counted[q.run.vm.ID]++
			if q.room.unlock == nil {
				without = append(without, q.run.vm.Name)
			}
			mu.Unlock()
		}
		return v
	}
	beforeRequest = wrapped
	t.Cleanup(func() { beforeRequest = list })
	passes = func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]int, len(counted))
		for k, v := range counted {
			out[k] = v
		}
		return out
	}
	unlocked = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), without...)
	}
	return passes, unlocked
}
