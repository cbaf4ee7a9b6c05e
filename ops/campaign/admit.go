package campaign

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/poll"
)

// A node's check before it starts: from a fresh read, the rest of the cluster must absorb
// it; a node refused at its check is skipped (--on-failure skip, or held only by its VMs'
// owners) or stops the campaign.

// admit checks, from a fresh read, that the rest of the cluster can absorb node i with the
// nodes in flight gone too; it returns the evacuation plan (nil for a node already past
// its evacuation). A refusal stops the campaign before anything changes on the node.
func (r *Campaign) admit(ctx context.Context, i int) (*model.Plan, error) {
	rec := r.Record()
	n := rec.Nodes[i]
	if n.Phase == model.PhaseStep {
		// The record says the node was emptied: the operator's step (a reboot, a firmware
		// flash) runs only if it still is, under this campaign. A node put back to work
		// meanwhile (by hand, by a colleague's rollback) is evacuated again first.
		ro := r.o.Run
		ro.Campaign = r.o.Name
		why, err := r.stillEmptied(ctx, n.Name, ro)
		if err != nil {
			return nil, err
		}
		if why == "" {
			return nil, nil
		}
		r.setPhase(ctx, i, model.PhaseEvacuating, "")
		r.note(n.Name, model.PhaseEvacuating, "the record says it was emptied, but "+why+": evacuated again before its step")
		n.Phase = model.PhaseEvacuating
	}
	if n.Phase != model.PhasePending && n.Phase != model.PhaseEvacuating {
		return nil, nil
	}
	leaving := append([]string{n.Name}, r.inFlightBut(n.Name)...)
	ro := r.o.Run
	ro.Leaving, ro.Later = leaving, pendingBut(rec, n.Name)
	ro.Campaign = r.o.Name // the campaign's plan: its pods go beside its moves
	plan, err := r.e.Plan(ctx, model.OpEvacuate, n.Name, ro)
	if err != nil {
		if done, inFlight, _ := rec.Count(); done+inFlight > 0 {
			// Nodes have changed already: an unreachable Nova now is a failure, not "nothing changed".
			return nil, fmt.Errorf("checking %s: %s", n.Name, err.Error())
		}
		return nil, err
	}
	if b := plan.Blockers(); len(b) > 0 {
		if len(r.working(n.Name)) > 0 && onlyFailoverRoom(b) {
			// Nodes this run works hold the room it lacks: it waits for one to return. A node
			// the record alone says is in flight (a run before this one) is not waited on:
			// nothing here would finish it, and the wait would never end.
			r.note(n.Name, n.Phase, "waiting for room: "+b[0].Message+" (a node in flight gives it back)")
			return nil, errWaitRoom
		}
		err := &ops.RefusedError{Reasons: b}
		// The plan is shown with its blockers, and closed as refused: a view must not keep a
		// node that nothing runs on as an operation running.
		now := r.e.Now()
		r.emit(ops.NewPlanReady(now, plan))
		r.emit(ops.NewRunDone(now, ops.Report{Op: plan.Op, Node: plan.Node, Started: now, Finished: now, Result: ops.ResultRefused,
			Reasons: b, Error: err.Error(), Pods: []ops.PodReport{}, VMs: []ops.VMReport{}}))
		if held := ownersStays(plan); len(held) > 0 && n.Phase == model.PhasePending {
			// One tenant's metadata does not hold the fleet: the node is left as it is, its
			// VMs and their projects named (a notice), and the campaign goes on.
			r.setPhase(ctx, i, model.PhaseSkipped, model.HeldByOwners+": "+strings.Join(held, ", "))
			return nil, errSkipped
		}
		if r.o.OnFailure == "skip" && n.Phase == model.PhasePending {
			// A failure like any other: nothing changed on it, so it is left as it is.
			r.setPhase(ctx, i, model.PhaseSkipped, skippedUntouched+": "+err.Error())
			return nil, errSkipped
		}
		r.mu.Lock()
		r.stopping = err
		r.mu.Unlock()
		r.note(n.Name, n.Phase, "refused before anything changed on it: "+err.Error())
		return nil, err
	}
	return &plan, nil
}

// errSkipped: the node was refused at its check and skipped (--on-failure skip).
var errSkipped = errors.New("skipped")

// errWaitRoom: the node would take the room [capacity] keeps for the next host failure, and
// only while the nodes in flight are out: it waits for one of them to return.
var errWaitRoom = errors.New("waiting for the failover room")

// onlyFailoverRoom says whether the room for the next failure is all that refuses a plan.
func onlyFailoverRoom(blockers []model.Reason) bool {
	for _, b := range blockers {
		if b.Code != model.FailoverRoomShort {
			return false
		}
	}
	return true
}

// waitFewerInFlight waits until this run works fewer of the campaign's nodes but name than
// now; false when ctx ends first.
func (r *Campaign) waitFewerInFlight(ctx context.Context, name string) bool {
	now := len(r.working(name))
	return poll.Until(ctx, r.e.PollInterval(), nil, func(context.Context) (bool, string, error) {
		return len(r.working(name)) < now, "", nil
	}) == nil
}

// working are the nodes but name this run let start and that have not finished.
func (r *Campaign) working(name string) []string {
	rec := r.Record()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, o := range rec.Nodes {
		if r.admitted[o.Name] && !o.Phase.Finished() && o.Name != name {
			out = append(out, o.Name)
		}
	}
	return out
}

// inFlightBut are the campaign's nodes in flight but name: started and not finished, or let
// start and not recorded yet.
func (r *Campaign) inFlightBut(name string) []string {
	rec := r.Record()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, o := range rec.Nodes {
		if (o.Phase.Started() || r.admitted[o.Name]) && !o.Phase.Finished() && o.Name != name {
			out = append(out, o.Name)
		}
	}
	return out
}

// skippedUntouched begins the error of a node skipped before anything changed on it.
const skippedUntouched = "refused at its check, left untouched"

// pendingBut are the campaign's nodes still pending but name: where its VMs had better not
// go (they would be moved again).
func pendingBut(rec model.Campaign, name string) []string {
	var out []string
	for _, o := range rec.Nodes {
		if o.Phase == model.PhasePending && o.Name != name {
			out = append(out, o.Name)
		}
	}
	return out
}
