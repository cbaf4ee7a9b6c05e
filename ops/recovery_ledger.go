package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
)

// A recovery's ledger (model.Recovery) is a record in drainctl's namespace, as its fence is:
// the one who recovers writes it, `--auto recoveries` and the TUI read it.

// RecoveryRecord is the record name of the node's recovery.
func RecoveryRecord(node string) string { return "recovery-" + node }

// SaveRecovery writes the recovery's record.
func (e *Engine) SaveRecovery(ctx context.Context, rec model.Recovery) error {
	return e.saveRecord(ctx, RecoveryRecord(rec.Node), rec)
}

// Recoveries are the recoveries recorded on the cluster, the newest first.
func (e *Engine) Recoveries(ctx context.Context) ([]model.Recovery, error) {
	recs, err := e.kube.Records(ctx, "recovery")
	if err != nil {
		return nil, err
	}
	out := make([]model.Recovery, 0, len(recs))
	for name, data := range recs {
		var r model.Recovery
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("record %s: %w", name, err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, nil
}

// Recovery is the node's recovery record, if one was written.
func (e *Engine) Recovery(ctx context.Context, node string) (model.Recovery, bool, error) {
	data, found, err := e.kube.Record(ctx, RecoveryRecord(node))
	if err != nil || !found {
		return model.Recovery{}, false, err
	}
	var r model.Recovery
	if err := json.Unmarshal(data, &r); err != nil {
		return model.Recovery{}, false, fmt.Errorf("record %s: %w", RecoveryRecord(node), err)
	}
	return r, true, nil
}

// stormRecord is the record of the storm guard's last storm.
const stormRecord = "storm"

// Storm is the last storm the guard held recoveries for, nil when none was recorded. A record
// that cannot be read as one is a storm that has not ended: whoever wrote it held recoveries.
func (e *Engine) Storm(ctx context.Context) (*model.Storm, error) {
	return readHolding(ctx, e, stormRecord, model.Storm{Began: e.now(), Nodes: []string{"(record " + stormRecord + " is unreadable)"}})
}

// SaveStorm records the storm guard's state.
func (e *Engine) SaveStorm(ctx context.Context, s model.Storm) error {
	return e.saveRecord(ctx, stormRecord, s)
}

// pauseRecord is the record of a pause of automatic recovery.
const pauseRecord = "pause-recovery"

// PauseRecovery holds every automatic recovery, cluster-wide, until ResumeRecovery.
func (e *Engine) PauseRecovery(ctx context.Context, why string) error {
	return e.saveRecord(ctx, pauseRecord, model.RecoveryPause{By: e.o.Holder, Reason: why, At: e.now()})
}

// ResumeRecovery lifts the pause; none is no error.
func (e *Engine) ResumeRecovery(ctx context.Context) error {
	return e.kube.DeleteRecord(ctx, pauseRecord)
}

// RecoveryPause is the pause of automatic recovery, nil when there is none. A record that
// cannot be read as one still pauses: whoever wrote it meant to hold recoveries.
func (e *Engine) RecoveryPause(ctx context.Context) (*model.RecoveryPause, error) {
	return readHolding(ctx, e, pauseRecord, model.RecoveryPause{By: "unknown", Reason: "record " + pauseRecord + " is unreadable"})
}

// readHolding reads a record that holds automatic recovery while it exists (nil: none). One
// that cannot be read as a T is taken as unreadable: whoever wrote it meant to hold.
func readHolding[T any](ctx context.Context, e *Engine, name string, unreadable T) (*T, error) {
	data, found, err := e.kube.Record(ctx, name)
	if err != nil || !found {
		return nil, err
	}
	var v T
	if json.Unmarshal(data, &v) != nil {
		v = unreadable
	}
	return &v, nil
}

// saveRecord writes v as the record name in drainctl's namespace.
func (e *Engine) saveRecord(ctx context.Context, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.kube.SaveRecord(ctx, name, data)
}

// outageOf names the outage this recovery is in (model.KubeNode.Outage), as the API server
// shows the node and its kubelet's Lease at the first ask: the name every reader of the record
// compares (zero for a live node that no Lease names).
func (r *runner) outageOf(ctx context.Context) time.Time {
	if r.recovery.outage.IsZero() {
		if k, ok, err := r.e.kube.NodeFresh(ctx, r.plan.Node); err == nil && ok && (!k.Ready || !k.Heartbeat.IsZero()) {
			r.recovery.outage = k.Outage()
		}
	}
	return r.recovery.outage
}

// saveLedger writes the recovery's record as the run stands: a move per VM of the plan, each
// filled from the run's account once it has one. A record that cannot be written is said, and
// the recovery goes on: the ledger is an account, not a proof.
func (r *runner) saveLedger(ctx context.Context, outcome string, moving map[string]*vmRun) {
	p := r.plan
	rec := model.Recovery{
		Node:      p.Node,
		Host:      p.Host,
		Automatic: r.ro.Automatic,
		Started:   r.report.Started,
		Outcome:   outcome,
		Error:     r.report.Error,
		By:        r.e.o.Holder,
		Options:   r.ro.Policy.Given(),
	}
	if r.ro.ConfirmFenced { // the operator's word that the machine is off (K, --confirm-fenced) is given too
		rec.Options = append(rec.Options, model.Given{Override: model.OverrideConfirmFenced})
	}
	rec.Outage = r.outageOf(ctx)
	if outcome != "running" {
		rec.Finished = r.report.Finished
	}
	for _, vm := range p.VMs {
		m := model.VMMove{VM: vm.Name, VMID: vm.ID, Source: p.Host, Method: vm.Method, Status: model.MovePending}
		if moverOf(vm.Method).Stays {
			m.Status = model.MoveLeft
		}
		if run, ok := moving[vm.ID]; ok {
			m.Status, m.Started, m.MigrationID = model.MoveOngoing, run.started, run.mid
		}
		for _, v := range r.report.VMs {
			if v.VMID != vm.ID {
				continue
			}
			m = v.ended(m)
		}
		// The owner's word is kept with the move: a stays rebuilt all the same says so.
		asks := func(x model.Reason) bool { return x.Code == model.VMAsksToStay && x.ObjectID == vm.ID }
		if i := slices.IndexFunc(p.Reasons, asks); i >= 0 {
			m.Reason = strings.TrimSuffix(p.Reasons[i].Message+"; "+m.Reason, "; ")
		}
		rec.Moves = append(rec.Moves, m)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// A rerun in the same outage keeps the moves an earlier run made (its plan holds only the
	// VMs left): one resuming an unfinished recovery keeps when it started and who began it;
	// one after a finished run (a person rebuilding what automatic recovery left) is its own
	// run, with the earlier run's rebuilds still in the ledger. A record of another outage (or
	// written by someone else for another) is not taken in.
	if data, found, err := r.e.kube.Record(wctx, RecoveryRecord(p.Node)); err == nil && found {
		var old model.Recovery
		if json.Unmarshal(data, &old) == nil && !rec.Outage.IsZero() && model.SameOutage(old.Outage, rec.Outage) {
			if old.Outcome == "running" || old.Outcome == string(ResultInterrupted) {
				rec.Started, rec.Automatic = old.Started, rec.Automatic || old.Automatic
				if old.By != "" { // the recovery stays the one who began it
					rec.By, rec.Options = old.By, old.Options
				}
			}
			for _, m := range old.Moves {
				if !slices.ContainsFunc(rec.Moves, func(n model.VMMove) bool { return n.VMID == m.VMID }) {
					rec.Moves = append(rec.Moves, r.settled(wctx, m))
				}
			}
		}
	}
	if err := r.e.SaveRecovery(wctx, rec); err != nil {
		r.nodeChanged("the recovery's ledger could not be recorded: " + err.Error())
	}
}

// ledgerMoved writes a recovery's ledger when a rebuild has started or ended since it was last
// written: a person reading it (or a successor resuming) sees each VM ongoing, not pending.
func (r *runner) ledgerMoved(ctx context.Context, moving map[string]*vmRun) {
	if !traitsOf(r.plan.Op).rebuilds {
		return
	}
	ids := make([]string, 0, len(moving))
	for id := range moving {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	now := fmt.Sprint(len(r.report.VMs), ids)
	if now == r.recovery.ledgerAt {
		return
	}
	r.recovery.ledgerAt = now
	r.saveLedger(ctx, "running", moving)
}

// settled is an earlier run's move that this run's plan no longer holds (the VM has left the
// host), as Nova shows it now: a run killed mid-rebuild wrote it pending or ongoing, and its
// VM was rebuilt (or failed) after. The record is a claim: a move is settled only when Nova
// shows the server elsewhere and its evacuation from this host, and each is asked once a run
// (a record of many moves, stale or forged, costs a read each, once).
func (r *runner) settled(ctx context.Context, m model.VMMove) model.VMMove {
	if (m.Status != model.MovePending && m.Status != model.MoveOngoing) || m.Source != r.plan.Host || r.recovery.settledTried[m.VMID] {
		return m
	}
	if r.recovery.settledTried == nil {
		r.recovery.settledTried = map[string]bool{}
	}
	r.recovery.settledTried[m.VMID] = true
	vm, err := r.e.nova.Server(ctx, m.VMID)
	if err != nil || vm.Host == m.Source {
		return m // unread, or still there: this run's plan has it
	}
	id := r.e.evacuationID(ctx, m.VMID, m.Source)
	if id == 0 {
		return m // Nova shows no evacuation of it from this host: nothing proves the record's move
	}
	m.Dest, m.MigrationID = vm.Host, id
	if vm.Phase == model.PhaseBroken {
		m.Status, m.Reason = model.MoveFailed, "rebuilt on "+vm.Host+" but in ERROR: "+vm.Fault
	} else {
		m.Status, m.Reason = model.MoveSucceeded, "found "+string(vm.Status)+" on "+vm.Host+" (rebuilt by an earlier run)"
	}
	return m
}

// RecoveryHolds are what holds automatic recovery now, read from the records every drainctl
// process and the controller keep on the cluster (the pause, the storm and its cooldown, each
// NotReady node's recovery record of this outage): what the TUI's header, --auto recoveries
// and a node's describe say while it lasts.
func (e *Engine) RecoveryHolds(ctx context.Context) ([]model.RecoveryHold, error) {
	var out []model.RecoveryHold
	pause, err := e.RecoveryPause(ctx)
	if err != nil {
		return nil, err
	}
	if pause != nil {
		out = append(out, model.RecoveryHold{Kind: "pause", Why: fmt.Sprintf("paused by %s: %s", pause.By, pause.Reason), Since: pause.At})
	}
	storm, err := e.Storm(ctx)
	if err != nil {
		return nil, err
	}
	if storm != nil {
		cooldown := e.cfg.Recover.StormCooldown.D()
		switch until := storm.Ended.Add(cooldown); {
		case storm.Ended.IsZero():
			out = append(
				out,
				model.RecoveryHold{
					Kind:  "storm",
					Why:   "storm: " + strings.Join(storm.Nodes, ", ") + " unhealthy at once",
					Since: storm.Began,
				},
			)
		case e.now().Before(until):
			out = append(
				out,
				model.RecoveryHold{
					Kind:  "cooldown",
					Why:   fmt.Sprintf("storm_cooldown after the storm of %s", strings.Join(storm.Nodes, ", ")),
					Since: storm.Ended,
					Until: until,
				},
			)
		}
	}
	for _, k := range e.kube.Nodes() {
		if k.Ready || k.ReadySince.IsZero() {
			continue
		}
		rec, found, err := e.Recovery(ctx, k.Name)
		if err != nil {
			return nil, err
		}
		if found && rec.APersons() && e.inOutage(ctx, k, rec.Outage) {
			out = append(
				out,
				model.RecoveryHold{
					Kind:  rec.Outcome,
					Node:  k.Name,
					Why:   fmt.Sprintf("its recovery %s in this outage: %s; a person's now", rec.Outcome, rec.Error),
					Since: rec.Finished,
				},
			)
		}
	}
	return out, nil
}

// inOutage reports whether outage names the outage the node (read from the cache) is in: its
// NotReady episode, or, for a record named by the kubelet's last renewal, the Lease as the
// API server has it now (read only then: a record of a person's recovery is rare).
func (e *Engine) inOutage(ctx context.Context, k model.KubeNode, outage time.Time) bool {
	if model.SameOutage(outage, k.ReadySince) {
		return true
	}
	fresh, ok, err := e.kube.NodeFresh(ctx, k.Name)
	return err == nil && ok && !fresh.Heartbeat.IsZero() && model.SameOutage(outage, fresh.Outage())
}

// ended is m (a ledger's move of the VM) as the run left the VM: where it went, when, and how
// it ended.
func (v VMReport) ended(m model.VMMove) model.VMMove {
	m.Dest, m.Duration, m.Reason, m.MigrationID = v.Dest, v.Duration, v.Message, v.MigrationID
	if !v.Started.IsZero() {
		m.Started, m.Finished = v.Started, v.Started.Add(v.Duration)
	}
	switch v.Result {
	case MigCompleted:
		m.Status = model.MoveSucceeded
	case MigSkipped:
		m.Status = model.MoveLeft
	case MigInterrupted: // left under way in Nova: a rerun follows it
		m.Status = model.MoveOngoing
	default:
		m.Status = model.MoveFailed
	}
	return m
}
