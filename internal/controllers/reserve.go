package controllers

import (
	"context"
	"time"

	"github.com/drainctl/drainctl/ops"
)

// ReserveKeeper holds the failover reserve ([recover] reserve_label) as its label says, at
// each resync: a labelled node's nova-compute disabled with the reserve's reason, a node
// unlabelled by a person given back (ops.Engine.HoldReserve). A recovery, automatic or a
// person's, takes the reserve itself; this keeps it between recoveries.
type ReserveKeeper struct {
	Engine *ops.Engine
	Log    func(string) // a line for the controller's log (may be nil)
	Resync time.Duration
	said   map[string]bool
}

// Serve holds the reserve until ctx ends.
func (k *ReserveKeeper) Serve(ctx context.Context) error {
	if k.Engine.RecoverConfig().ReserveLabel == "" {
		return nil
	}
	if k.Resync == 0 {
		k.Resync = 10 * time.Second
	}
	if k.Log == nil {
		k.Log = func(string) {}
	}
	k.said = map[string]bool{}
	loop(ctx, k.Resync, nil, k.pass)
	return nil
}

// pass holds the reserve once; each line is logged once (a reserve not empty says so at
// every pass, and once is enough).
func (k *ReserveKeeper) pass(ctx context.Context) time.Duration {
	lines, err := k.Engine.HoldReserve(ctx)
	if err != nil {
		lines = append(lines, "holding it: "+err.Error())
	}
	for _, l := range lines {
		if !k.said[l] {
			k.said[l] = true
			k.Log("failover reserve: " + l)
		}
	}
	return 0
}
