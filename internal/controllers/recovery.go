package controllers

import (
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

// Recoverer is automatic recovery ([recover] automatic = true, in the leader-elected
// controller): a compute node whose machine is dead (its kubelet and its nova-compute silent
// for heartbeat_timeout: heartbeats.go) is recovered as `drainctl --auto recover` would, fence command first,
// through the engine's recover: no second implementation. Masakari and InstanceHA taught the
// storm guard: while more compute nodes than [recover] max_unhealthy are unhealthy (a
// partition looks like many dead hosts) nothing is fenced, and for storm_cooldown after it
// ended. One recovery runs at a time, cluster-wide (a lease every drainctl process sees).
// Each recovery keeps a ledger of its VMs' moves in a record no node can write; the way back
// stays a person's (uncordon).
type Recoverer struct {
	Engine *ops.Engine
	Policy policy.Options
	Events NodeEvents // may be nil
	Emit   func(ops.Event)
	Log    func(string) // a line for the controller's log (may be nil)
	// Notify tells the person on call (the [notify] webhook, the metrics). May be nil.
	Notify func(model.Notice)
	// Paused hears, each pass, since when automatic recovery is paused (zero: it is not; the
	// metrics). May be nil.
	Paused func(since time.Time)
	Resync time.Duration // a pass even without changes (default 10 s: Nova's view of a service is not watched)

	inStorm   bool
	stormSaid bool
	// storm is the guard's record on the cluster (read at the first pass): its end starts the
	// cooldown, for this process and any that follows it (a restart, a new leader).
	storm     *model.Storm
	stormRead bool
	said      map[string]string // what was said last, by subject (sayOnce): each thing is said once
	beats     watched           // each node's NotReady and nova-compute report, on drainctl's own clock (heartbeats.go)
	kubelets  kubelets          // each kubelet's Lease renewals, as the watch tells them
	// kubeletsWatched: the watch of the Leases runs; computesRead: the last read of Nova's services.
	kubeletsWatched bool
	watchTried      time.Time
	computesRead    time.Time
	records         map[string]recordRead // the recovery records read this pass, by node (each read once a pass)
	stopped         map[string]time.Time  // node -> the outage (its NotReady since) whose ladder stopped: a person's now
	pauseSeen       time.Time             // the first pass that saw recovery held by a pause (zero: not held)
}

// PauseAnnotation on a node holds its automatic recovery (NodeHealthCheck's pause request).
const PauseAnnotation = "drainctl.io/recover-pause"

// recoveryKey is the lease that lets one recovery run at a time, cluster-wide.
const recoveryKey = "recovery"

// Serve recovers until ctx ends.
func (r *Recoverer) Serve(ctx context.Context) error {
	if r.Resync == 0 {
		r.Resync = 10 * time.Second
	}
	if r.Emit == nil {
		r.Emit = func(ops.Event) {}
	}
	if r.Log == nil {
		r.Log = func(string) {}
	}
	if r.Notify == nil {
		r.Notify = func(model.Notice) {}
	}
	r.said, r.stopped, r.beats, r.kubelets.beats = map[string]string{}, map[string]time.Time{}, watched{}, watched{}
	// On its resync only: a node is dead after not_ready_for (a minute), so a pass on every
	// change the informers signal (each pod's, at 150,000 pods) would only read more often.
	loop(ctx, r.Resync, nil, r.pass)
	return nil
}

// pass looks at every compute node once: the storm guard first, then the first dead node.
func (r *Recoverer) pass(ctx context.Context) time.Duration {
	cfg := r.Engine.RecoverConfig()
	if !cfg.Automatic {
		return 0
	}
	now := r.Engine.Now()
	r.records = map[string]recordRead{}
	// Pinned while alive, so that a fence is keyed on what the machine was, not on what its
	// Node says once it is dead (ops/machines.go); a few a pass.
	if err := r.Engine.PinMachines(ctx, 50); err != nil && r.sayOnce("pins", err.Error()) {
		r.Log("automatic recovery: the machines' identities cannot be pinned: " + err.Error())
	}
	if !r.readStorm(ctx) {
		return 0
	}
	quiet := cfg.HeartbeatTimeout.D()
	if err := r.watchKubelets(ctx); err != nil {
		if r.sayOnce("heartbeats", err.Error()) {
			r.Log("automatic recovery: held: the kubelets' heartbeats cannot be read: " + err.Error())
		}
		return 0
	}
	// A node to judge: NotReady, or its kubelet silent for heartbeat_timeout (the node
	// lifecycle controller marks it NotReady only 40 s later). None: nothing can be dead and no
	// storm holds anything; Nova's reports are read once a resync, the cluster not at all. The
	// next pass is when the next kubelet would have been silent that long.
	silent, next := r.kubelets.silentNow(now, quiet)
	judge := len(silent) > 0
	for _, k := range r.Engine.KubeNodes() { // the cache: free
		if !k.Ready { // watched from the first pass that sees it, paused or held too
			r.beats.observe("notready/"+k.Name, k.ReadySince, now)
			judge = true
		}
	}
	if !judge {
		if now.Sub(r.computesRead) >= r.Resync {
			services, err := r.Engine.ComputeServices(ctx, "")
			if err != nil {
				if r.sayOnce("heartbeats", err.Error()) {
					r.Log("automatic recovery: held: nova-compute's reports cannot be read: " + err.Error())
				}
				return 0
			}
			r.observeComputes(services, now)
			if r.Paused != nil {
				r.paused(ctx) // said for the metrics once a resync, nothing to judge or not: a lifted pause too
			}
		}
		delete(r.said, "heartbeats")
		r.calmed(ctx, now, cfg.StormCooldown.D())
		return next
	}
	// The cluster's read holds Nova's services as just read: the reports are observed from it.
	inv, err := r.Engine.Inventory().Read(ctx)
	if err != nil {
		r.Log("automatic recovery: reading the cluster: " + err.Error())
		return 0
	}
	var services []model.ComputeService
	for _, n := range inv.Nodes {
		if n.Compute != nil {
			services = append(services, *n.Compute)
		}
	}
	r.observeComputes(services, now)
	delete(r.said, "heartbeats")
	var compute, unhealthy []model.Node
	for _, n := range inv.Nodes {
		if n.Compute == nil || n.Kube == nil {
			continue
		}
		// The node as this pass judges it: with its kubelet's last renewal (what names its
		// outage), on a copy: the cache's is shared.
		k := *n.Kube
		if kb, ok := r.kubelets.of(n.Name); ok {
			k.Heartbeat = kb.value
		}
		n.Kube = &k
		compute = append(compute, n)
		if !n.Kube.Ready || !n.Compute.Up || silent[n.Name] {
			unhealthy = append(unhealthy, n)
		}
	}
	// The storm guard counts the failures nobody explains: a node recovered already (still
	// dead), or one a person has taken, is no sign of a partition.
	var unexplained []model.Node
	var known []string
	for _, n := range unhealthy {
		if why := r.explained(ctx, n); why != "" {
			known = append(known, n.Name+" ("+why+")")
		} else {
			unexplained = append(unexplained, n)
		}
	}
	if storm := stormOf(cfg, compute, unexplained); storm != "" {
		if len(known) > 0 {
			storm += "; not counted: " + strings.Join(known, ", ")
		}
		r.inStorm = true // held at once: a partition's nodes do not all go NotReady in the same second
		// Said once a node would have been recovered: two kubelets restarting together
		// page no one.
		if !r.stormSaid && slices.ContainsFunc(unhealthy, func(n model.Node) bool {
			return silent[n.Name] || !n.Kube.Ready && now.Sub(n.Kube.ReadySince) >= cfg.NotReadyFor.D()
		}) {
			r.stormSaid = true
			r.stormBegan(ctx, now, unexplained, storm)
		}
		return 0
	}
	if limit := cfg.UnhealthyLimit(len(compute)); limit == 0 && r.sayOnce("limit", fmt.Sprint(len(compute))) {
		r.Log(
			fmt.Sprintf(
				"automatic recovery: [recover] max_unhealthy %q of %d compute nodes is 0: every dead node is a storm, none "+
					"is recovered by itself",
				cfg.MaxUnhealthy,
				len(compute),
			),
		)
	}
	r.calmed(ctx, now, cfg.StormCooldown.D())
	if s := r.storm; s != nil && !s.Ended.IsZero() {
		if wait := s.Ended.Add(cfg.StormCooldown.D()).Sub(now); wait > 0 {
			if r.sayOnce("cooldown", s.Ended.String()) {
				r.Log(fmt.Sprintf("automatic recovery: held until %s: storm_cooldown after the storm that ended %s",
					s.Ended.Add(cfg.StormCooldown.D()).Format(time.RFC3339), s.Ended.Format(time.RFC3339)))
			}
			return wait
		}
	}
	if held := r.paused(ctx); held != "" {
		if r.sayOnce("pause", held) {
			r.Log("automatic recovery " + held)
		}
		return 0
	}
	delete(r.said, "pause")
	var due time.Duration // the soonest a NotReady node could be proven dead: a pass then, not a resync later
	for _, n := range unhealthy {
		why := r.notDead(n, silent)
		if why == "" {
			why = r.someonesRecovery(ctx, n)
		}
		if why == "" {
			var wait time.Duration
			var stuck bool
			if why, wait, stuck = r.deadFor(n, now, cfg); wait > 0 && (due == 0 || wait < due) {
				due = wait
			}
			if stuck {
				r.refuse(ctx, n, why)
			}
		}
		if why != "" {
			if (!n.Kube.Ready || silent[n.Name]) && r.sayOnce("waits/"+n.Name, why) { // why an unhealthy node waits
				r.Log("automatic recovery: " + n.Name + " is not taken up: " + why)
			}
			continue
		}
		r.recover(ctx, n)
		return time.Second // the next one, one at a time
	}
	if next > 0 && (due == 0 || next < due) {
		due = next
	}
	return due
}

// sayOnce reports whether msg is new for subject (and remembers it): a reason that holds pass
// after pass is said once, and again only once it changed.
func (r *Recoverer) sayOnce(subject, msg string) bool {
	if r.said[subject] == msg {
		return false
	}
	r.said[subject] = msg
	return true
}

// notDead says why the node is no candidate ("": it may be one, its signals decide):
// Ready with its kubelet renewing; paused; or another operation's (cordoned by
// someone, or under a drainctl operation that is no recovery). A recovery left unfinished is
// resumed.
func (r *Recoverer) notDead(n model.Node, silent map[string]bool) string {
	k := *n.Kube
	j, journaled := ops.ReadJournal(k)
	switch {
	case k.Ready && !silent[n.Name]:
		return "Ready"
	case k.Annotations[PauseAnnotation] != "":
		return "paused"
	case stoppedIn(r.stopped, n.Name, k.Outage()):
		return "its recovery stopped in this outage (a failed fence, a failed rebuild): a person's now"
	case journaled && ops.RowOf(j.Op).DeadNode && j.Phase == ops.PhaseDone:
		return "recovered already: the way back is a person's (uncordon)"
	case journaled && !ops.RowOf(j.Op).DeadNode:
		return "under another operation"
	case !journaled && !k.Schedulable:
		return "cordoned by someone else"
	}
	return ""
}

// explained says why an unhealthy node is no new failure ("": it is one, the storm guard
// counts it): recovered, or being recovered, in this outage (its journal and its recovery
// record agreeing: neither alone is proof); under a person's drainctl operation (its journal);
// paused.
func (r *Recoverer) explained(ctx context.Context, n model.Node) string {
	k := *n.Kube
	if k.Annotations[PauseAnnotation] != "" {
		return "its recovery paused"
	}
	j, ok := ops.ReadJournal(k)
	if !ok {
		return ""
	}
	if !ops.RowOf(j.Op).DeadNode {
		return "under " + string(j.Op) + " by " + j.Holder
	}
	rec, found, err := r.recovery(ctx, n.Name)
	if err != nil || !found || rec.Outage.IsZero() || !model.SameOutage(rec.Outage, k.Outage()) || rec.APersons() {
		return ""
	}
	if j.Phase == ops.PhaseDone {
		return "recovered"
	}
	return "being recovered"
}

// recordRead is one read of a node's recovery record.
type recordRead struct {
	rec   model.Recovery
	found bool
	err   error
}

// recovery is the node's recovery record as this pass read it: the storm guard and the
// candidates' checks ask for the same record, and one GET a pass serves both.
func (r *Recoverer) recovery(ctx context.Context, node string) (model.Recovery, bool, error) {
	read, ok := r.records[node]
	if !ok {
		read.rec, read.found, read.err = r.Engine.Recovery(ctx, node)
		r.records[node] = read
	}
	return read.rec, read.found, read.err
}

// refuse says, once, that automatic recovery of the node is refused and why, and records the
// refusal: a person's now, in this outage, for this process and any that follows.
func (r *Recoverer) refuse(ctx context.Context, n model.Node, msg string) {
	if !r.sayOnce("refused/"+n.Name, msg) {
		return
	}
	e := r.Engine
	r.event(ctx, n.Name, "Warning", EventRecoveryRefused, "automatic recovery refused: "+msg)
	r.Log("automatic recovery of " + n.Name + " refused: " + msg)
	r.notify(model.Notice{Kind: model.NoticeRecoveryRefused, Node: n.Name, Message: "automatic recovery refused: " + msg})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	now := e.Now()
	if err := e.SaveRecovery(wctx, model.Recovery{Node: n.Name, Host: n.Host, Automatic: true, By: "automatic recovery",
		Started: now, Finished: now, Outage: n.Kube.Outage(), Outcome: string(ops.ResultRefused), Error: msg}); err != nil {
		r.Log("automatic recovery: the refusal could not be recorded: " + err.Error())
	}
}

// stoppedIn reports whether the node's ladder stopped in the outage that began at since.
func stoppedIn(stopped map[string]time.Time, node string, since time.Time) bool {
	t, ok := stopped[node]
	return ok && model.SameOutage(t, since)
}

// recover runs the engine's recovery of the node under the cluster-wide recovery lease,
// with the fence command, and keeps its ledger.
func (r *Recoverer) recover(ctx context.Context, n model.Node) {
	e, cfg := r.Engine, r.Engine.RecoverConfig()
	ctx, release, err := e.HoldKey(ctx, recoveryKey)
	if err != nil {
		// Another process recovers a node now (the next pass tries again), or something
		// holds or refuses the lease for longer: said once, with its holder, never silent.
		var held *ops.LeaseHeldError
		msg := "the cluster-wide recovery lease cannot be taken: " + err.Error()
		if errors.As(err, &held) {
			msg = "the cluster-wide recovery lease (drainctl/drainctl-" + recoveryKey + ") is held by " + held.Holder
		}
		if r.sayOnce("recovery-lease", msg) {
			r.Log("automatic recovery: held: " + msg + "; no node is recovered while it is")
		}
		return
	}
	delete(r.said, "recovery-lease")
	defer func() {
		release()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = e.ReleaseKey(rctx, recoveryKey)
	}()
	// A VM whose local disk a rebuild would lose is a person's to decide: it stays, in the
	// ledger with its reason.
	ro := ops.RunOptions{
		Policy:        r.Policy,
		Why:           "automatic recovery",
		RecoverParams: ops.RecoverParams{FenceCmd: cfg.FenceCmd, Automatic: true},
	}
	ro.Policy.KeepLocalDisks = true
	plan, err := e.Plan(ctx, model.OpRecover, n.Name, ro)
	if err == nil && len(plan.Blockers()) > 0 {
		err = &ops.RefusedError{Reasons: plan.Blockers()}
	}
	if err != nil {
		r.refuse(ctx, n, err.Error())
		return
	}
	delete(r.said, "refused/"+n.Name)
	left := 0
	for _, vm := range plan.VMs {
		if ops.MoveFactsOf(vm.Method).Stays {
			left++
		}
	}
	started := fmt.Sprintf("automatic recovery: %s dead since %s, fencing it, then %d VM(s) rebuilt elsewhere, %d left (see the ledger)",
		n.Name, lastSign(*n.Kube), len(plan.VMs)-left, left)
	var stays []string
	for _, x := range plan.Reasons {
		if x.Code == model.VMAsksToStay && x.Severity == model.Notes {
			stays = append(stays, x.Object)
		}
	}
	if len(stays) > 0 {
		started += fmt.Sprintf(
			"; %d whose owner asks that it stay, rebuilt all the same (its host is dead): %s",
			len(stays),
			strings.Join(stays, ", "),
		)
	}
	r.event(ctx, n.Name, "Warning", EventRecoveryStarted, started)
	r.notify(model.Notice{Kind: model.NoticeRecoveryStarted, Node: n.Name, Message: started})
	r.Log(started)
	// The engine's recover keeps the ledger (ops/recoveries.go), as for a recovery by hand;
	// the run's events say what a person on call must know on the way.
	var lastRunning time.Time // the last VM's rebuild done: every VM running elsewhere
	emit := recordSteps(ctx, r.Events, r.Emit)
	rep, err := e.Run(ctx, plan, ro, func(ev ops.Event) {
		emit(ev)
		switch ev := ev.(type) {
		case ops.StepEvent:
			if ev.Step == model.StepFence && ev.State == ops.StepFailed {
				r.notify(model.Notice{Kind: model.NoticeFenceFailed, Node: n.Name,
					Message: "fencing " + n.Name + " failed: nothing is rebuilt: " + ev.Detail})
			}
		case ops.MigrationEvent:
			if ev.State == ops.MigCompleted {
				lastRunning = ev.At
			}
		case ops.PlanReady, ops.PodEvent, ops.NodeChanged, ops.RunDone, ops.CampaignEvent: // the ledger and the Events say these
		}
	})
	if rep.Result != ops.ResultDone && rep.Result != ops.ResultInterrupted {
		r.stopped[n.Name] = n.Kube.Outage() // never again by itself in this outage: no fence loop
	}
	if rep.Result != ops.ResultInterrupted {
		// Ended: the node is a person's from here (its uncordon, a rerun by hand), at once,
		// not once the lease a person's recovery keeps has lapsed. Its journal says where it is.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = e.ReleaseLease(rctx, n.Name)
		cancel()
	}
	for _, v := range rep.VMs {
		if v.Result != ops.MigCompleted && v.Result != ops.MigSkipped && v.Result != ops.MigInterrupted {
			r.notify(model.Notice{Kind: model.NoticeVMNotRebuilt, Node: n.Name,
				Message: fmt.Sprintf("VM %s (%s) of %s was not rebuilt: %s", v.VM, v.VMID, n.Name, v.Message)})
		}
	}
	done := model.Notice{Kind: model.NoticeRecoveryDone, Node: n.Name, Message: summary(n.Name, plan, rep), Ledger: ledger(plan, rep)}
	typ, reason := "Normal", EventRecoveryDone
	if err != nil {
		typ, reason, done.Kind = "Warning", EventRecoveryFailed, model.NoticeRecoveryFailed
	}
	if c := done.Ledger; err == nil && c.Failed+c.Pending == 0 && c.Succeeded > 0 {
		done.VMsRunningAfter = lastRunning.Sub(n.Kube.Outage())
	}
	r.event(ctx, n.Name, typ, reason, done.Message)
	r.notify(done)
	r.Log("automatic recovery of " + n.Name + ": " + done.Message)
}
