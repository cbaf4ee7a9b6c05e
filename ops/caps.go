package ops

import (
	"context"
	"time"

	"github.com/drainctl/drainctl/ops/poll"
)

// The migration caps hold across every drainctl process (a daemon per node, a colleague's
// terminal): before a migration starts, the moves Nova itself lists as loading a destination
// (live migrations in progress, cold ones moving, rebuilds of dead hosts' VMs) are counted,
// under a cluster-wide lock so that two processes cannot both see the last free place.

// migrationLockNode names the start lock's lease (drainctl-migrations.lock), beside the
// nodes' leases.
const migrationLockNode = "migrations.lock"

// clusterRoom takes the start lock and counts what is in flight: this engine's own
// migrations, and every other live migration Nova lists as unfinished (toDest: the others'
// by destination, for migrations_per_destination). ok when one more fits under
// migrations_per_cluster. unlock must be called once the request is made (or given up):
// after a request that succeeded it waits (briefly) until Nova lists the new migration, so
// the next process counts it.
type cluster struct {
	toDest map[string]int
	unlock func(vmID string, requested bool)
}

func (r *runner) clusterRoom(ctx context.Context) (cluster, bool) {
	e := r.e
	if err := e.kube.AcquireLease(ctx, migrationLockNode, e.o.Holder, 15*time.Second, e.mayReplace); err != nil {
		return cluster{}, false // another process is starting one: try again at the next poll
	}
	unlock := func(vmID string, requested bool) {
		if requested {
			// Held until Nova lists the move (a loaded Nova may take seconds): released
			// earlier, another process would count one move fewer than there are. Bounded
			// under the lock's own 15 s lease.
			deadline := e.now().Add(12 * time.Second)
			for e.now().Before(deadline) {
				if ms, err := e.nova.MigrationsOf(ctx, vmID); err == nil && len(ms) > 0 && ms[0].InProgress() {
					break
				}
				if !poll.Sleep(ctx, 20*time.Millisecond) {
					break
				}
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = e.kube.ReleaseLease(rctx, migrationLockNode, e.o.Holder)
	}
	// Cold moves count as live ones do while they move (not once they wait for a confirm),
	// and so do rebuilds of dead hosts' VMs: they load the destinations alike.
	inNova, err := e.nova.MovingFrom(ctx, "")
	if err != nil {
		unlock("", false)
		return cluster{}, false
	}
	c := cluster{toDest: map[string]int{}, unlock: unlock}
	e.destMu.Lock()
	total := len(e.mine)
	for _, m := range inNova {
		if e.mine[m.InstanceID] {
			continue // counted already
		}
		total++
		if m.DestCompute != "" {
			c.toDest[m.DestCompute]++
		}
	}
	e.destMu.Unlock()
	if total >= e.cfg.Concurrency.MigrationsPerCluster {
		unlock("", false)
		return cluster{}, false
	}
	return c, true
}
