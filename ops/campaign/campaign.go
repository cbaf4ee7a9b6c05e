package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/shared"
)

// Campaign is a campaign being run: Run works it; Pause and Resume may be called meanwhile
// (the TUI's p). It is the only writer of its record while it holds the campaign's lease.
type Campaign struct {
	e    *ops.Engine
	o    Options
	emit func(ops.Event)

	mu       sync.Mutex
	rec      model.Campaign
	paused   bool
	homing   sync.WaitGroup       // the nodes' VMs being brought home in the background
	writing  sync.WaitGroup       // the phases written behind (setPhase)
	wake     chan struct{}        // closed and replaced when pause is lifted
	stopping error                // a failure or refusal: no new node starts
	pdbZero  map[string]time.Time // PDBs allowing no disruption, since when (fleetHurting)
	gateSaid map[string]bool      // nodes whose gate command has said it started (one goroutine: Run's loop)
	kept     map[string][]string  // node -> the VMs its evacuation left on it on purpose (--skip-vm, stays): not empty
	// admitted are the nodes let start: in flight from then, before their goroutine records
	// it, so the next node's check counts them gone.
	admitted map[string]bool
	inPlace  map[string][]string // node -> those of them stopped for restart-in-place, started at its return
	fc       model.Forecast      // made by New (forecast.go)
	// saves writes the record: the changes of the nodes in flight made while a write is under
	// way share the next write (a record of 1,000 nodes is 150 KB, and twenty nodes change it).
	saves *shared.Calls[struct{}]
	// answering: the VMs moved now as their owners asked (owners_ahead.go); nowAsked, those taken.
	answering sync.WaitGroup
	nowAsked  map[string]bool
	// windowSaid: the owners' windows and answers said of (node/VM): once a campaign. Run's loop
	// and the herald both say them, under saidMu.
	saidMu     sync.Mutex
	windowSaid map[string]bool
}

// recordWriteTimeout bounds one write of the record.
const recordWriteTimeout = 30 * time.Second

// campaignKey is the lease and record key of a campaign.
func campaignKey(name string) string { return "campaign-" + name }

// New resolves the campaign's nodes and reads its record: an unfinished campaign of the
// same name is resumed (its nodes, where each stopped), a finished one starts anew. It
// changes nothing.
func New(ctx context.Context, e *ops.Engine, o Options, emit func(ops.Event)) (*Campaign, error) {
	o, err := withDefaults(o)
	if err != nil {
		return nil, err
	}
	nodes, err := campaignNodes(e, o)
	if err != nil {
		return nil, err
	}
	if o.ParallelPercent > 0 {
		o.Parallel = max(1, (len(nodes)*o.ParallelPercent+99)/100)
	}
	if nodes, err = orderNodes(ctx, e, o, nodes); err != nil {
		return nil, err
	}
	// concurrency.nodes caps every evacuation of the engine (its node slots): nodes above it
	// would only wait cordoned for a slot.
	lowered := ""
	if n := max(1, e.Config().Concurrency.Nodes); o.Parallel > n {
		lowered = fmt.Sprintf(
			"%d nodes at a time lowered to %d: concurrency.nodes caps the nodes emptied at once (raise [concurrency] nodes, "+
				"or this process's cap)",
			o.Parallel,
			n,
		)
		o.Parallel = n
	}
	if o.Name == "" {
		o.Name = campaignName(o.Selector, nodes)
	}
	if o.SpreadBy != "" {
		if err := checkSpreadLabel(e, nodes, o.SpreadBy); err != nil {
			return nil, err
		}
	}
	if err := Collect(ctx, e); err != nil {
		return nil, err
	}
	r := &Campaign{e: e, o: o, emit: emit, wake: make(chan struct{}), gateSaid: map[string]bool{}}
	r.saves = shared.New(recordWriteTimeout, r.write)
	if r.rec, err = campaignRecord(ctx, e, o, nodes); err != nil {
		return nil, err
	}
	if lowered != "" && emit != nil {
		emit(ops.NewCampaignEvent(e.Now(), r.rec, "", "", lowered))
	}
	if again := r.rec.Message; again != "" && emit != nil { // done nodes the nodes do not confirm
		emit(ops.NewCampaignEvent(e.Now(), r.rec, "", "", again))
	}
	if r.fc, err = r.forecast(ctx); err != nil {
		return nil, err
	}
	r.rec.Expected = r.fc.Total
	// The room for the next failure may allow fewer at once than asked: the record (its view's
	// "N nodes at a time", its running ETA) says what runs.
	r.rec.Parallel = min(r.rec.Parallel, r.fc.Parallel)
	for _, nf := range r.fc.Nodes { // the nodes it expects to skip cost the running ETA nothing
		if i := slices.IndexFunc(r.rec.Nodes, func(n model.CampaignNode) bool { return n.Name == nf.Node }); i >= 0 {
			r.rec.Nodes[i].Skip = nf.Skip
			r.rec.Nodes[i].NotBefore = nf.OwnersWindowUntil // its owners' window, until the gate reads it again
			if r.rec.Nodes[i].Expected == 0 {               // the first forecast's: a resumed campaign keeps it
				r.rec.Nodes[i].Expected = nf.Expected
			}
		}
	}
	return r, nil
}

// campaignRecord is the campaign's record: an unfinished one of the same name, checked
// against the world and resumed, or a new one; with this run's options.
func campaignRecord(ctx context.Context, e *ops.Engine, o Options, nodes []string) (model.Campaign, error) {
	var rec model.Campaign
	data, found, err := e.Records().Record(ctx, campaignKey(o.Name))
	if err != nil {
		return rec, err
	}
	var old model.Campaign
	if found && json.Unmarshal(data, &old) == nil && old.State.Resumable() {
		// The record is a claim: anyone allowed to write it may have, and the cluster may
		// have moved on since. It is checked against the world before anything runs.
		if err := checkResumable(e, old, o, nodes); err != nil {
			return rec, err
		}
		rec = old // resume: its nodes and where each stopped (each checked again as it starts)
		rec.Message = unprovenDone(e, &rec)
	} else {
		rec = model.Campaign{Name: o.Name, Selector: o.Selector, Started: e.Now(), SpreadBy: o.SpreadBy, Order: o.Order}
		for _, n := range nodes {
			rec.Nodes = append(rec.Nodes, model.CampaignNode{Name: n, Phase: model.PhasePending, Domain: domainOf(e, n, o.SpreadBy)})
		}
	}
	rec.Holder, rec.Parallel, rec.Exec, rec.WaitReady, rec.OnFailure = e.Holder(), o.Parallel, ops.ShownCommand(
		o.Exec,
		"",
	), o.WaitReady, o.OnFailure
	rec.NodeDeadline, rec.Undrainable = o.NodeDeadline, o.Undrainable
	if o.Gates.Window != nil {
		rec.Window = o.Gates.Window.String()
	}
	rec.Budgets = budgetsOf(o.Gates.Budgets)
	for i := range rec.Nodes { // a resumed campaign keeps its domains; a new label re-reads them
		n := &rec.Nodes[i]
		if rec.SpreadBy != "" && n.Domain == "" {
			n.Domain = domainOf(e, n.Name, rec.SpreadBy)
		}
		for _, b := range o.Gates.Budgets { // the ETA counts a per-label budget by the node's value
			if b.Per != "" {
				if n.Budgets == nil {
					n.Budgets = map[string]string{}
				}
				n.Budgets[b.Per] = domainOf(e, n.Name, b.Per)
			}
		}
	}
	return rec, nil
}

// Record is the campaign as it stands.
func (r *Campaign) Record() model.Campaign {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.rec
	c.Nodes = slices.Clone(r.rec.Nodes)
	return c
}

// Pause asks the campaign to start no new node once its current ones are done.
func (r *Campaign) Pause() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = true
}

// Resume lifts a pause.
func (r *Campaign) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused {
		r.paused = false
		close(r.wake)
		r.wake = make(chan struct{})
	}
}

// Paused reports whether a pause was asked for.
func (r *Campaign) Paused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused
}

// Run works the campaign to its end: for each node, at most Parallel at once, in order: a
// capacity check (the rest must absorb its pods and VMs, with the nodes in flight counted
// as gone), the evacuation, the operator's step, uncordon, and a check that the node takes
// work again. Each phase is recorded on the cluster before it starts. A refused capacity
// check or a failed node stops new nodes from starting; the nodes in flight finish, so at
// most the failed one is left half-done (its journal says where). Cancelling ctx stops at
// the next safe point; a rerun resumes.
func (r *Campaign) Run(ctx context.Context) error {
	e := r.e
	key := campaignKey(r.o.Name)
	ctx, release, err := e.HoldKey(ctx, key)
	if err != nil {
		var held *ops.LeaseHeldError
		if errors.As(err, &held) {
			held.Reason = "another drainctl runs campaign " + r.o.Name
		}
		return err
	}
	defer func() {
		release()
		rctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		_ = e.ReleaseKey(rctx, key)
	}()

	if err := r.Refusal(ctx); err != nil {
		r.setState(context.WithoutCancel(ctx), model.CampaignStopped, err.Error())
		return err
	}
	r.setState(ctx, model.CampaignRunning, "")
	hctx, stopHerald := context.WithCancel(ctx)
	heralded := make(chan struct{})
	go func() { defer close(heralded); r.herald(hctx) }() // owners_ahead.go: the owners told ahead, their answers
	heraldDone := sync.OnceFunc(func() { stopHerald(); <-heralded; r.answering.Wait() })
	defer heraldDone()
	slots := make(chan struct{}, max(1, r.fc.Parallel)) // --parallel, or fewer for the failover room
	var wg sync.WaitGroup
	errs := make([]error, len(r.rec.Nodes))
	busy := &domains{inFlight: map[string]bool{}}
	spreadBy := r.Record().SpreadBy
	queue, put := inOrder(len(r.Record().Nodes)), map[int]bool{} // put: after the others, for their owners' windows
	for k := 0; k < len(queue); k++ {
		i := queue[k]
		n := r.Record().Nodes[i]
		if n.Phase.Finished() {
			r.bringHomeLater(ctx, i) // a resumed campaign: what was pending is tried again
			continue
		}
		if r.putAfterOthers(ctx, &queue, k, put) { // owners_ahead.go: one owner's window holds no other node
			continue
		}
		if !r.waitTurn(ctx, slots) {
			break
		}
		if !busy.wait(ctx, n.Domain, func(d string) {
			r.note(n.Name, model.PhasePending, "waiting: another node of "+spreadBy+"="+d+" is in flight")
		}) {
			<-slots
			break
		}
		if !r.gateOpen(ctx, n.Name) {
			busy.done(n.Domain)
			<-slots
			break
		}
		plan, err := r.admit(ctx, i)
		for errors.Is(err, errWaitRoom) {
			if !r.waitFewerInFlight(ctx, n.Name) {
				err = &ops.Interrupted{Node: n.Name, Phase: "waiting for the failover room", Cause: context.Cause(ctx)}
				break
			}
			plan, err = r.admit(ctx, i)
		}
		if errors.Is(err, errSkipped) { // refused at its check, left untouched: the next node
			busy.done(n.Domain)
			<-slots
			continue
		}
		if err != nil {
			busy.done(n.Domain)
			<-slots
			errs[i] = err
			break
		}
		r.mu.Lock()
		if r.admitted == nil {
			r.admitted = map[string]bool{}
		}
		r.admitted[n.Name] = true
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { busy.done(n.Domain); <-slots }()
			errs[i] = r.node(ctx, i, plan)
		}()
	}
	wg.Wait()
	heraldDone() // a move its owner asked for ends before the campaign does
	r.homing.Wait()
	r.writing.Wait()
	err = ops.Worst(errs)
	if cause := context.Cause(ctx); err == nil && ctx.Err() != nil {
		err = &ops.Interrupted{Node: r.o.Name, Phase: "campaign", Cause: cause}
	}
	var skipped []string
	for _, n := range r.Record().Nodes {
		switch {
		case n.Phase == model.PhaseSkipped && strings.HasPrefix(n.Error, model.HeldByOwners):
			skipped = append(skipped, n.Name+" ("+n.Error+")")
		case n.Phase == model.PhaseSkipped && strings.HasPrefix(n.Error, skippedUntouched):
			skipped = append(skipped, n.Name+" (refused at its check, left untouched)")
		case n.Phase == model.PhaseSkipped:
			skipped = append(skipped, n.Name+" (failed, rolled back)")
		case n.Phase == model.PhaseQuarantined:
			skipped = append(skipped, n.Name+" (quarantined)")
		}
	}
	switch {
	case err == nil && len(skipped) == 0 && r.notEmpty() != "":
		// Done, each node worked, but not every one emptied: said, never a bare "done", and
		// its own exit code as an evacuation's (6).
		r.setState(context.WithoutCancel(ctx), model.CampaignDone, r.notEmpty())
		if r.leftAway() { // a VM restarted in place is the node's again: only one left as asked is
			err = &ops.NotEmptyError{Node: "campaign " + r.o.Name, Left: []string{r.notEmpty()}}
		}
	case err == nil && len(skipped) > 0:
		// Finished, but not every node was worked: a script must know (exit 1).
		err = &SkippedError{Campaign: r.o.Name, Nodes: skipped}
		r.setState(context.WithoutCancel(ctx), model.CampaignDone, err.Error())
	case err == nil:
		r.setState(context.WithoutCancel(ctx), model.CampaignDone, "")
	case errors.As(err, new(*ops.RefusedError)):
		r.setState(context.WithoutCancel(ctx), model.CampaignStopped, err.Error())
	case errors.As(err, new(*ops.Interrupted)), errors.Is(err, context.Canceled):
		r.setState(context.WithoutCancel(ctx), model.CampaignInterrupted, err.Error())
	default:
		r.setState(context.WithoutCancel(ctx), model.CampaignFailed, err.Error())
	}
	return err
}

// setState records the campaign's state (and why) and reports it.
func (r *Campaign) setState(ctx context.Context, s model.CampaignState, msg string) {
	r.mu.Lock()
	r.rec.State, r.rec.Message = s, bounded(msg)
	r.mu.Unlock()
	r.save(ctx)
	r.emit(ops.NewCampaignEvent(r.e.Now(), r.Record(), "", "", msg))
}

// setPhase records node i's phase before the phase starts (or when it ends).
func (r *Campaign) setPhase(ctx context.Context, i int, ph model.NodePhase, errText string) {
	now := r.e.Now()
	r.mu.Lock()
	n := &r.rec.Nodes[i]
	if !n.Phase.Started() && ph.Started() {
		n.Started = now
	}
	if ph.Finished() {
		n.Finished = now
	}
	n.Phase, n.Error = ph, bounded(errText)
	name := n.Name
	r.mu.Unlock()
	if ph.RecordedFirst() {
		r.save(ctx)
	} else { // written behind: twenty nodes' phases cost a write each, not a wait each
		r.writing.Add(1)
		go func() { defer r.writing.Done(); r.save(ctx) }()
	}
	r.emit(ops.NewCampaignEvent(now, r.Record(), name, ph, errText))
}

// note reports a line about a node without changing the record.
func (r *Campaign) note(node string, ph model.NodePhase, msg string) {
	r.emit(ops.NewCampaignEvent(r.e.Now(), r.Record(), node, ph, msg))
}

// save writes the record, every change made before it asked included, and returns once it
// is written; a failed write is reported and retried at the next change (the nodes' own
// journals still say where each stands).
func (r *Campaign) save(ctx context.Context) {
	if _, err := r.saves.Do(ctx); err != nil && ctx.Err() == nil {
		r.emit(ops.NewCampaignEvent(r.e.Now(), r.Record(), "", "", "could not record the campaign: "+err.Error()))
	}
}

// write is one write of the record as it stands when the write begins.
func (r *Campaign) write(ctx context.Context) (struct{}, error) {
	r.mu.Lock()
	r.rec.Updated = r.e.Now()
	data, _ := json.Marshal(r.rec)
	r.mu.Unlock()
	return struct{}{}, r.e.Records().SaveRecord(ctx, campaignKey(r.o.Name), data)
}

// SkippedError: a campaign ran to its end, but failed nodes were rolled back and skipped
// (--on-failure skip).
type SkippedError struct {
	Campaign string
	Nodes    []string
}

func (e *SkippedError) Error() string {
	return fmt.Sprintf("campaign %s finished with %d node(s) not worked: %s; rerun the campaign's command for them after fixing them",
		e.Campaign, len(e.Nodes), strings.Join(e.Nodes, ", "))
}
