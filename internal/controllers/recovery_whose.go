package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// Whose a dead node's recovery is: a person's pause holds every one, and a person's recovery
// (stopped or under way) stays the person's.

// paused says why every automatic recovery is held by a person ("": none is): the pause in
// drainctl's namespace. A pause that cannot be read holds too: a recovery is never started on
// the guess that nobody paused it.
func (r *Recoverer) paused(ctx context.Context) string {
	p, err := r.Engine.RecoveryPause(ctx)
	r.sayPaused(err != nil || p != nil, p)
	switch {
	case err != nil:
		return "held: its pause cannot be read: " + err.Error()
	case p != nil:
		return fmt.Sprintf("paused by %s since %s: %s", p.By, p.At.Format(time.RFC3339), p.Reason)
	}
	return ""
}

// sayPaused tells Paused since when automatic recovery is held by a pause: the record's time,
// no later than the first pass that saw it held. The time is the record's claim: one that
// cannot be read, names no time or a time to come holds recovery all the same, from when it
// was seen.
func (r *Recoverer) sayPaused(held bool, p *model.RecoveryPause) {
	switch {
	case !held:
		r.pauseSeen = time.Time{}
	case r.pauseSeen.IsZero():
		r.pauseSeen = r.Engine.Now()
	}
	if r.Paused == nil {
		return
	}
	since := r.pauseSeen
	if held && p != nil && !p.At.IsZero() && p.At.Before(since) {
		since = p.At
	}
	r.Paused(since)
}

// someonesRecovery says why the node's recovery in this outage is not automatic
// recovery's to start or resume ("": it is), from its record on the cluster (the process's
// memory is gone with a restart): one that failed or was refused is a person's now (a
// failed fence is not run again by itself, a refusal not paged again); a person's that
// stopped is left to that person, said once in a notice.
func (r *Recoverer) someonesRecovery(ctx context.Context, n model.Node) string {
	rec, found, err := r.recovery(ctx, n.Name)
	switch {
	case err != nil:
		return "its recovery record cannot be read (" + err.Error() + "): nothing is fenced on a guess"
	case !found || !model.SameOutage(rec.Outage, n.Kube.Outage()):
		return "" // none in this outage
	case rec.APersons():
		return fmt.Sprintf("its recovery %s in this outage (%s): a person's now", rec.Outcome, rec.Error)
	case rec.Automatic || rec.Outcome == string(ops.ResultDone):
		return ""
	}
	// A person's, the record says: the node's own journal must say so too (a recovery by
	// the same holder): a record alone, which nothing on the node bears out, holds nothing.
	j, ok := ops.ReadJournal(*n.Kube)
	if !ok || !ops.RowOf(j.Op).DeadNode || j.Holder != rec.By {
		return ""
	}
	// Under way (its record running, its process still renewing the node's lease): not stopped.
	if holder, err := r.Engine.NodeHolder(ctx, n.Name); err == nil && rec.Outcome == "running" && holder == rec.By {
		msg := fmt.Sprintf("recovery of %s by %s under way (at %s): a person's recovery is the person's", n.Name, rec.By, j.Phase)
		if r.sayOnce("persons/"+n.Name, msg) {
			r.Log("automatic recovery: " + msg)
		}
		return msg
	}
	msg := fmt.Sprintf("recovery of %s by %s stopped at %s; not resumed: a person's recovery stays the person's", n.Name, rec.By, j.Phase)
	if len(rec.Options) > 0 {
		msg += " (asked with " + strings.Join(text.GivenFlags(rec.Options), " ") + ")"
	}
	if r.sayOnce("persons/"+n.Name, msg) {
		r.notify(model.Notice{Kind: model.NoticeRecoveryRefused, Node: n.Name, Message: msg})
	}
	return msg
}
