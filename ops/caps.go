package ops

import (
	"context"
	"time"
)

// The migration caps hold across every drainctl process (a daemon per node, a colleague's
// terminal): before a migration starts, the live migrations Nova itself lists as in
// progress are counted, under a cluster-wide lock so that two processes cannot both see
// the last free place.

// migrationLockNode names the start lock's lease (drainctl-migrations.lock), beside the
// nodes' leases.
const migrationLockNode = "migrations.lock"

// clusterRoom takes the start lock and counts what is in flight: this engine's own
// migrations, and every other live migration Nova lists as unfinished. ok when one more
// fits under migrations_per_cluster and, for a chosen destination, under
// migrations_per_destination. unlock must be called once the request is made: after a
// request that succeeded it waits (briefly) until Nova lists the new migration, so the next
// process counts it.
func (r *runner) clusterRoom(ctx context.Context, dest string) (unlock func(vmID string, requested bool), ok bool) {
	e := r.e
	if err := e.kube.AcquireLease(ctx, migrationLockNode, e.o.Holder, 15*time.Second, e.mayReplace); err != nil {
		return nil, false // another process is starting one: try again at the next poll
	}
	unlock = func(vmID string, requested bool) {
		if requested {
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				if ms, err := e.nova.MigrationsOf(ctx, vmID); err == nil && len(ms) > 0 && ms[0].InProgress() {
					break
				}
				if !sleep(ctx, 20*time.Millisecond) {
					break
				}
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = e.kube.ReleaseLease(rctx, migrationLockNode, e.o.Holder)
	}
	inNova, err := e.nova.InProgressFrom(ctx, "")
	if err != nil {
		unlock("", false)
		return nil, false
	}
	e.destMu.Lock()
	total, toDest := len(e.mine), e.inflight[dest]
	for _, m := range inNova {
		if e.mine[m.InstanceID] {
			continue // counted already
		}
		total++
		if dest != "" && m.DestCompute == dest {
			toDest++
		}
	}
	e.destMu.Unlock()
	c := e.cfg.Concurrency
	if total >= c.MigrationsPerCluster || (dest != "" && toDest >= c.MigrationsPerDestination) {
		unlock("", false)
		return nil, false
	}
	return unlock, true
}
