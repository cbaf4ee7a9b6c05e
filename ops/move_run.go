package ops

import (
	"slices"
	"time"

	"github.com/drainctl/drainctl/model"
)

// A VM's move as the run follows it, and the queue moveAll works through: the types every
// mover row and the run share, below both.

// vmRun is one VM's migration as the engine follows it.
type vmRun struct {
	vm        model.VM
	method    model.MoveMethod // live or cold
	ours      bool             // cold: drainctl asked for it (the journal says so): it confirms it
	confirmed bool             // cold: confirmResize asked
	attempt   int
	state     MigState
	dest      string
	mid       int64
	started   time.Time
	notBefore time.Time // retry delay
	progress  model.MigrationProgress
	escalated bool
	// escalation is what the stall policy asked of Nova ("aborting", "force-completing") and
	// when: Nova ends a live copy seconds after it is asked (23 s measured for an abort on real
	// guests), and until then the copy's row says so, not an ETA.
	escalation  string
	escalatedAt time.Time
	adopted     bool   // already migrating when the engine came: followed, not requested
	slot        bool   // holds one of the cluster-wide migration slots
	claimed     string // the destination counted against its cap
	picked      bool   // drainctl picked the destination (its ledger of room has it)
	// turnedDown are the destinations drainctl picked for an earlier attempt that failed:
	// the next attempt goes elsewhere (a host disabled since the hosts were read: Nova's
	// scheduler turns it down).
	turnedDown map[string]bool
	total      int64
	copied     int64 // bytes copied by the earlier attempts
	// refused: Nova said this VM cannot move by its method at all (a live move's pre-check
	// refused it): retrying the method does not help; its mover's fallback may.
	refused bool
	// noValidHost: Nova's scheduler found no host for the last attempt (its action said so).
	noValidHost bool
	// after is the newest migration ID Nova had for the VM just before drainctl asked for
	// this move (afterKnown: read): Nova makes a live or cold move's record after its 202,
	// so the records of this move are those above it, never an older move's.
	after      int64
	afterKnown bool
	// settled: the move failed, but Nova may still carry it out (one it cannot stop, past
	// its timeout; one whose record never came): it is not asked for again.
	settled bool
	// Its owner told ahead (owners.go): when (told), the notice as written or found (notice,
	// "" once cleared), the first refused try (tellTried) and Nova's refusal (notTold).
	told, tellTried time.Time
	notice, notTold string
	ownerSaidNow    bool // its owner answered drainctl:move-now: it went ahead of the lead
	// lastSaid is its row's last message; waitSaid the wait sayWaits last put there (a wait
	// said by its group or its owner's lead is left as it is).
	lastSaid, waitSaid string
	requestID          string // Nova's request ID of the last request (live, cold): its instance action's
}

// recordsOf keeps the migration records (newest first) that may be this move's: those
// above after, when it was read before the request; all of them for a move drainctl follows
// without having asked for it.
func (run *vmRun) recordsOf(recs []model.Migration) []model.Migration {
	if !run.afterKnown {
		return recs
	}
	out := recs[:0:0]
	for _, m := range recs {
		if m.ID > run.after {
			out = append(out, m)
		}
	}
	return out
}

// attemptBytes is what the current attempt copied: the last sample's processed bytes; once
// completed, at least the guest's memory (the last sample may predate the end, and a quick
// migration may end between two reads: os-migrations does not carry the byte counts).
func (run *vmRun) attemptBytes(completed bool) int64 {
	var b int64
	if s, ok := run.progress.Last(); ok {
		b = s.Processed
	}
	if completed {
		b = max(b, run.total, run.vm.RAMMB<<20)
	}
	return b
}

// moveQueue is what moveAll works through: the VMs waiting for their request, the moves
// under way, and the cold moves drainctl asked for.
type moveQueue struct {
	pending []*vmRun
	running map[string]*vmRun
	ours    coldRecords
	waitWhy string // why the last round started no more of pending (sayWaits puts it on their rows)
}

// coldRecords are the cold moves drainctl asked for, by VM.
type coldRecords map[string][]ColdMove

// proves says whether the migration is one drainctl asked for.
func (c coldRecords) proves(m model.Migration) bool {
	return slices.ContainsFunc(c[m.InstanceID], func(cm ColdMove) bool { return cm.Proves(m) })
}

// unnamed says whether drainctl asked for a cold move of the VM whose record was never read.
func (c coldRecords) unnamed(vm string) bool {
	return slices.ContainsFunc(c[vm], func(cm ColdMove) bool { return cm.Migration == "" })
}

// ownerLead is the time from its owner's notice to the move's request, for its report (0:
// not told).
func (run *vmRun) ownerLead() time.Duration {
	if run.told.IsZero() || run.started.Before(run.told) {
		return 0
	}
	return run.started.Sub(run.told)
}
