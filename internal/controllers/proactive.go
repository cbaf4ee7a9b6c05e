package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
)

// Proactive empties a degrading host before it fails ([proactive]; vSphere Proactive HA's
// quarantine and maintenance modes), in the leader-elected controller: a node on which one of
// the configured conditions holds is told of, quarantined (cordoned, its nova-compute
// disabled: nothing new lands) or evacuated, one node at a time, through the engine's own
// operations: the caps, the leases and the room for the next host failure hold as for a
// person's. Each node's record keeps what marked it and the ledger of its VMs' moves; a node is
// acted on once an episode (until its triggers are seen gone); the way back is a person's.
type Proactive struct {
	Engine *ops.Engine
	Policy policy.Options
	Events NodeEvents // may be nil
	Emit   func(ops.Event)
	Log    func(string)
	Notify func(model.Notice)
	Resync time.Duration // a pass even without changes (default 10 s: Nova's signals are not watched)

	said map[string]string // what was said last, by node: each refusal is said once
	// full: when the cluster was last read whole; recs: the records as that pass left them
	// (they are this controller's own writes); retry: when a refused node is tried again.
	full  time.Time
	recs  map[string]model.Proactive
	retry map[string]time.Time
	inv   model.Inventory // as the pass read it
}

// proactiveGap is the least time between two reads of the whole cluster: a node's changes
// (its pods', while it is evacuated) signal many passes.
const proactiveGap = time.Second

// Serve acts until ctx ends.
func (p *Proactive) Serve(ctx context.Context) error {
	p.Resync = cmp.Or(p.Resync, 10*time.Second)
	if p.Emit == nil {
		p.Emit = func(ops.Event) {}
	}
	if p.Log == nil {
		p.Log = func(string) {}
	}
	if p.Notify == nil {
		p.Notify = func(model.Notice) {}
	}
	p.said, p.recs, p.retry = map[string]string{}, map[string]model.Proactive{}, map[string]time.Time{}
	nodes, cancel := p.Engine.Subscribe()
	defer cancel()
	loop(ctx, p.Resync, []<-chan struct{}{nodes}, p.pass)
	return nil
}

// pass acts on the first degrading node its record does not answer yet, to the end; the
// next pass (at once) takes the next. A node refused (the room, a budget, another's lease)
// does not hold the others back.
func (p *Proactive) pass(ctx context.Context) time.Duration {
	cfg := p.Engine.Config().Proactive
	if len(cfg.Conditions) == 0 {
		return 0
	}
	// The cache first (free): a pass reads the cluster whole only for a node whose conditions
	// its record does not answer yet, or at the resync (Nova's signals; records to clear, a
	// refusal to try again). A node evacuated and still degrading costs nothing more.
	since := time.Since(p.full)
	if since < p.Resync && !slices.ContainsFunc(p.Engine.KubeNodes(), func(k model.KubeNode) bool {
		seen := ops.ProactiveTriggers(model.Node{Name: k.Name, Kube: &k}, cfg.Conditions)
		rec, found := p.recs[k.Name]
		return len(seen) > 0 && !(found && rec.Handled(withNova(seen, rec.Triggers))) && time.Now().After(p.retry[k.Name])
	}) {
		return 0
	}
	if since < proactiveGap {
		return proactiveGap - since
	}
	p.full = time.Now()
	inv, err := p.Engine.Inventory().Read(ctx)
	if err != nil {
		p.Log("proactive: reading the cluster: " + err.Error())
		return 0
	}
	recs, err := p.Engine.Proactives(ctx)
	if err != nil {
		p.Log("proactive: reading the records: " + err.Error())
		return 0
	}
	p.recs, p.inv = recs, inv
	for _, n := range inv.Nodes {
		triggers := ops.ProactiveTriggers(n, cfg.Conditions)
		rec, found := recs[n.Name]
		switch {
		case len(triggers) == 0:
			if found && !rec.Finished.IsZero() && rec.Cleared.IsZero() {
				rec.Cleared = p.Engine.Now() // the episode is over: the next triggers are acted on again
				p.save(ctx, rec)
			}
			delete(p.said, n.Name)
		case found && rec.Handled(triggers):
		case time.Now().Before(p.retry[n.Name]): // refused a moment ago: at the resync
		case p.act(ctx, n, triggers, rec, found):
			return time.Millisecond
		}
	}
	return 0
}

// act answers the node's triggers by [proactive] action, once they are proved at this moment;
// true when something was done (told, or an operation run).
func (p *Proactive) act(ctx context.Context, n model.Node, triggers []string, old model.Proactive, found bool) bool {
	e, cfg := p.Engine, p.Engine.Config().Proactive
	host := ""
	if n.Compute != nil {
		host = n.Compute.Host
	}
	now, err := e.ProactiveNow(ctx, n.Name, host)
	if err != nil {
		p.Log("proactive: reading " + n.Name + ": " + err.Error())
		return false
	}
	if !slices.Equal(now, triggers) { // changed since the read: the next pass sees it
		return false
	}
	action := cmp.Or(cfg.Action, model.ProactiveNotify)
	rec := model.Proactive{Node: n.Name, Triggers: triggers, Action: action, Started: e.Now(), Outcome: "running"}
	if found && old.Outcome == "running" && slices.Equal(old.Triggers, triggers) {
		rec.Started = old.Started // left running by a process gone: resumed
	}
	what := fmt.Sprintf("%s is degrading (%s)", n.Name, strings.Join(triggers, ", "))
	op := cfg.Op()
	if op == "" {
		rec.Outcome, rec.Finished = "notified", e.Now()
		p.save(ctx, rec)
		p.tell(ctx, model.NoticeDegrading, n.Name, "Warning", what+": [proactive] action notify: nothing changed")
		return true
	}
	if why := p.held(n, action); why != "" {
		p.refuse(ctx, rec, what+": "+action+" held, told only: "+why)
		return false
	}
	ro := ops.RunOptions{Policy: p.Policy}
	if !cfg.WaitOwnerLead { // a degrading host does not wait for its owners' lead: they are told, not waited on
		ro.OwnerLead = new(time.Duration)
	}
	plan, err := e.Plan(ctx, op, n.Name, ro)
	if err == nil && len(plan.Blockers()) > 0 {
		err = &ops.RefusedError{Reasons: plan.Blockers()}
	}
	if err != nil {
		p.refuse(ctx, rec, what+": "+action+" refused, nothing changed: "+err.Error())
		return false
	}
	delete(p.said, n.Name)
	delete(p.retry, n.Name)
	p.save(ctx, rec)
	p.tell(ctx, model.NoticeDegrading, n.Name, "Warning", what+": "+action+" begins")
	// Bounded: an evacuation that never ends (a budget that never allows) holds no other
	// degrading node behind it for longer than timeouts.operation; it fails, where it stopped
	// in the node's journal.
	rctx, cancel := context.WithTimeoutCause(ctx, e.Config().Timeouts.Operation.D(), errors.New("timeouts.operation passed"))
	rep, err := e.Run(rctx, plan, ro, recordSteps(ctx, p.Events, p.Emit))
	if cause := context.Cause(rctx); err != nil && rctx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w (%v)", err, cause)
	}
	cancel()
	var held *ops.LeaseHeldError
	switch {
	case ctx.Err() != nil:
		return true // left running: the next leader resumes it
	case errors.As(err, &held):
		p.refuse(ctx, rec, what+": "+action+" refused, nothing changed: "+err.Error())
		return false
	}
	rec.Moves, rec.Finished, rec.Outcome = rep.Ledger(), e.Now(), "done"
	kind, typ, end := model.NoticeProactiveDone, "Normal", what+": "+action+" done; a person brings it back (uncordon) once it is mended"
	if err != nil {
		rec.Outcome, rec.Error = "failed", err.Error()
		kind, typ, end = model.NoticeProactiveFailed, "Warning", what+": "+action+" failed, a person's now: "+err.Error()
	}
	p.save(ctx, rec)
	p.tell(ctx, kind, n.Name, typ, end, ledger(plan, rep))
	return true
}

// held says why [proactive] may not take n out now ("": it may): its storm guard (max_out,
// max_out_per_domain), counted from its own records of the nodes it took out that are out of
// service still (cordoned: no person has brought them back), or, for a quarantine, the room
// for the next host failure ([capacity]), which an evacuation's plan proves itself.
func (p *Proactive) held(n model.Node, action string) string {
	cfg := p.Engine.Config()
	domainKey := cfg.Recover.FailureDomain
	domain := func(m model.Node) string {
		if m.Kube == nil || domainKey == "" {
			return ""
		}
		return m.Kube.Labels[domainKey]
	}
	var out, inDomain []string
	compute, domainSize := 0, 0
	for _, m := range p.inv.Nodes {
		if m.Compute == nil {
			continue
		}
		compute++
		same := domainKey != "" && domain(m) == domain(n)
		if same {
			domainSize++
		}
		rec, ok := p.recs[m.Name]
		if m.Name == n.Name || !ok || rec.Action == model.ProactiveNotify || rec.Outcome == "refused" || rec.Outcome == "notified" ||
			m.Kube == nil || m.Kube.Schedulable {
			continue
		}
		out = append(out, m.Name)
		if same {
			inDomain = append(inDomain, m.Name)
		}
	}
	if limit := cfg.Proactive.OutLimit(compute); len(out) >= limit {
		return fmt.Sprintf("the storm guard: %d node(s) already out by [proactive] (%s), max_out %d; a person brings one back "+
			"(uncordon) or raises [proactive] max_out", len(out), strings.Join(out, ", "), limit)
	}
	if limit := cfg.Proactive.DomainOutLimit(domainSize); limit > 0 && len(inDomain) >= limit {
		return fmt.Sprintf("the storm guard: %d node(s) of %s=%s already out by [proactive] (%s), max_out_per_domain %d",
			len(inDomain), domainKey, domain(n), strings.Join(inDomain, ", "), limit)
	}
	if action == model.ProactiveQuarantine {
		if r := p.Engine.QuarantineRoom(p.inv, n.Name, p.Policy); r != nil && r.Severity == model.Blocks {
			return "quarantined, it " + r.Message + " ([capacity])"
		}
	}
	return ""
}

// refuse records and says, once while it stays the same, that the node's action was refused;
// it is tried again at every pass while its triggers hold.
func (p *Proactive) refuse(ctx context.Context, rec model.Proactive, msg string) {
	p.retry[rec.Node] = time.Now().Add(p.Resync)
	if p.said[rec.Node] == msg {
		return
	}
	p.said[rec.Node] = msg
	rec.Outcome, rec.Error, rec.Finished = "refused", msg, p.Engine.Now()
	p.save(ctx, rec)
	p.tell(ctx, model.NoticeProactiveRefused, rec.Node, "Warning", msg)
}

// tell notifies, logs and posts an Event on the node.
func (p *Proactive) tell(ctx context.Context, kind model.NoticeKind, node, typ, msg string, counts ...*model.LedgerCounts) {
	n := model.Notice{Kind: kind, Node: node, Message: msg, At: p.Engine.Now()}
	if len(counts) > 0 {
		n.Ledger = counts[0]
	}
	p.Log("proactive: " + msg)
	p.Notify(n)
	if p.Events != nil {
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		p.Events.NodeEvent(ectx, node, typ, NoticeEventReason(kind), msg)
	}
}

// save writes the node's record; a failure is logged (the node's journal still says where it
// stands).
func (p *Proactive) save(ctx context.Context, rec model.Proactive) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.Engine.SaveProactive(wctx, rec); err != nil {
		p.Log("proactive: the record of " + rec.Node + " could not be written: " + err.Error())
		return
	}
	p.recs[rec.Node] = rec
}

// withNova is the node's triggers the cache shows (its conditions) with the Nova signals its
// record holds: what the record would answer, were Nova's the same (read at the resync).
func withNova(seen, recorded []string) []string {
	out := slices.Clone(seen)
	for _, t := range recorded {
		if strings.HasPrefix(t, "nova:") {
			out = append(out, t)
		}
	}
	return out
}
