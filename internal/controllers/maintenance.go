package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// MaintenanceController reconciles NodeMaintenance resources (node-maintenance-operator's
// controller, on the engine): created, the node is leased, tainted, cordoned, its
// nova-compute disabled and everything on it moved (VMs live-migrated, pods evicted), with
// the status kept current; deleted, the node is put back (compute enabled, uncordoned,
// taint removed, lease released) before the finalizer lets the resource go. Errors are
// retried with backoff and recorded in lastError. The reconcile is level-based, so a
// restart resumes from what the cluster records.
type MaintenanceController struct {
	Engine *ops.Engine
	Store  ops.Maintenances
	Run    ops.RunOptions
	Resync time.Duration // full reconcile even without changes (default 30 s)
	// LeaseTTL: how long the node's lease outlives a controller that stopped renewing it
	// (default 1 h, as node-maintenance-operator's; renewed at every resync).
	LeaseTTL time.Duration
	Backoff  time.Duration // first retry delay after a failure (default 1 s, doubling to 5 min)
	Emit     func(ops.Event)
	Events   NodeEvents // may be nil

	mu       sync.Mutex
	active   map[string]work // NodeMaintenance name -> its running work
	retry    map[string]retryState
	restored map[string]bool // done and not yet seen by the watch: true restored (until gone), false maintained (until Succeeded shows)
	wg       sync.WaitGroup
	trigger  chan struct{}
}

// work is what runs for a NodeMaintenance: its evacuation, or its restore.
type work struct {
	cancel    context.CancelFunc
	restoring bool
}

type retryState struct {
	failures int
	next     time.Time
}

// Serve reconciles until ctx ends, then waits for the work it started to stop at a safe
// point (recorded on the node and in the status).
func (c *MaintenanceController) Serve(ctx context.Context) error {
	if c.Resync == 0 {
		c.Resync = 30 * time.Second
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = time.Hour
	}
	if c.Backoff == 0 {
		c.Backoff = time.Second
	}
	if c.Emit == nil {
		c.Emit = func(ops.Event) {}
	}
	c.active, c.retry, c.restored, c.trigger = map[string]work{}, map[string]retryState{}, map[string]bool{}, make(chan struct{}, 1)
	changes, cancel := c.Store.Subscribe()
	defer cancel()
	nodes, cancelNodes := c.Engine.Subscribe()
	defer cancelNodes()
	defer c.wg.Wait()
	loop(ctx, c.Resync, []<-chan struct{}{changes, nodes, c.trigger}, func(ctx context.Context) time.Duration {
		c.Engine.ForgetFences(ctx) // a node seen Ready: its last fence proves nothing now
		return c.reconcileAll(ctx)
	})
	return nil
}

// reconcileAll reconciles every resource and returns when the earliest retry is due (0: none).
func (c *MaintenanceController) reconcileAll(ctx context.Context) time.Duration {
	all := c.Store.List()
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	c.mu.Lock()
	for name := range c.restored {
		if !slices.ContainsFunc(all, func(nm model.NodeMaintenance) bool { return nm.Name == name }) {
			delete(c.restored, name)
		}
	}
	c.mu.Unlock()
	owners := ownersOf(all)
	var wait time.Duration
	for _, nm := range all {
		if w := c.reconcile(ctx, nm, owners[nm.NodeName]); w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
	}
	return wait
}

// ownersOf picks, for each node, the one NodeMaintenance that acts on it among those not
// being deleted: the one already acting (it carries the finalizer), else the oldest. A
// second resource for the same node is told so and does nothing; deleting it must not put
// back a node that the first still holds.
func ownersOf(all []model.NodeMaintenance) map[string]string {
	best := map[string]model.NodeMaintenance{}
	for _, nm := range all {
		if nm.Deleting {
			continue
		}
		b, ok := best[nm.NodeName]
		if !ok || (nm.Guarded && !b.Guarded) || (nm.Guarded == b.Guarded && (nm.Created.Before(b.Created) ||
			nm.Created.Equal(b.Created) && nm.Name < b.Name)) {
			best[nm.NodeName] = nm
		}
	}
	owners := make(map[string]string, len(best))
	for node, nm := range best {
		owners[node] = nm.Name
	}
	return owners
}

// reconcile starts what the resource calls for, unless its work already runs or its next
// retry is not due; it returns how long until that retry. owner is the resource acting on
// its node ("" when none but deleted ones).
func (c *MaintenanceController) reconcile(ctx context.Context, nm model.NodeMaintenance, owner string) time.Duration {
	c.mu.Lock()
	if w, running := c.active[nm.Name]; running {
		if nm.Deleting && !w.restoring {
			w.cancel() // deleted mid-evacuation: stop it at a safe point, then restore
		}
		c.mu.Unlock()
		return 0
	}
	if r := c.retry[nm.Name]; !r.next.IsZero() && time.Now().Before(r.next) && !nm.Deleting {
		c.mu.Unlock()
		return time.Until(r.next)
	}
	if c.restored[nm.Name] { // done; the watch has not shown it gone yet
		c.mu.Unlock()
		return 0
	}
	if _, maintained := c.restored[nm.Name]; maintained && !nm.Deleting {
		// Emptied by this controller: until the watch shows the Succeeded it wrote, a
		// "Running" seen here is its own past, not work to start again.
		if nm.Status.Phase == model.MaintenanceRunning {
			c.mu.Unlock()
			return 0
		}
		delete(c.restored, nm.Name)
	}
	c.mu.Unlock()
	switch {
	case nm.Deleting && !nm.Guarded:
		return 0 // someone else's finalizer holds it: not ours to restore
	case nm.Deleting && owner != "":
		// Another NodeMaintenance holds the node: it stays in maintenance, this one just goes.
		if err := c.Store.SetFinalizer(ctx, nm.Name, false); err != nil {
			c.failed(ctx, nm, nm.Status, fmt.Errorf("removing the finalizer: %w", err))
		}
	case nm.Deleting:
		c.start(ctx, nm, true, c.restore)
	case owner != nm.Name:
		msg := fmt.Sprintf("node %s is already under NodeMaintenance %s: this one does nothing", nm.NodeName, owner)
		if nm.Status.Phase != model.MaintenanceFailed || nm.Status.LastError != msg {
			c.write(nm.Name, model.MaintenanceStatus{Phase: model.MaintenanceFailed, LastError: msg, LastUpdate: c.Engine.Now(),
				PendingPods: []string{}, PendingVMs: []string{}})
		}
	case !nm.Guarded:
		if err := c.Store.SetFinalizer(ctx, nm.Name, true); err != nil {
			c.failed(ctx, nm, nm.Status, fmt.Errorf("adding the finalizer: %w", err))
		}
		// The update comes back through the watch and reconciles again.
	case nm.Status.Phase == model.MaintenanceSucceeded:
		// Held out of service: keep the lease alive for as long as the resource exists.
		if err := c.Engine.HoldLease(ctx, nm.NodeName, c.LeaseTTL); err != nil {
			c.failed(ctx, nm, nm.Status, fmt.Errorf("renewing the node's lease: %w", err))
		}
	default:
		c.start(ctx, nm, false, c.maintain)
	}
	return 0
}

// start runs work for the resource in the background, one piece of work per resource.
func (c *MaintenanceController) start(
	ctx context.Context,
	nm model.NodeMaintenance,
	restoring bool,
	do func(context.Context, model.NodeMaintenance) error,
) {
	wctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.active[nm.Name] = work{cancel: cancel, restoring: restoring}
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := do(wctx, nm)
		cancel()
		c.mu.Lock()
		delete(c.active, nm.Name)
		if err == nil {
			delete(c.retry, nm.Name)
			c.restored[nm.Name] = restoring
		}
		c.mu.Unlock()
		select { // reconcile again: a deletion may have come while this ran
		case c.trigger <- struct{}{}:
		default:
		}
	}()
}

// maintain empties the node, keeping the status current.
func (c *MaintenanceController) maintain(ctx context.Context, nm model.NodeMaintenance) error {
	st := nm.Status
	k, ok := c.Engine.KubeNode(nm.NodeName)
	if !ok {
		return c.failed(ctx, nm, st, fmt.Errorf("no node named %q", nm.NodeName))
	}
	ro := c.Run
	ro.KeepLease = true
	ro.Why = cmp.Or(nm.Reason, ro.Why)
	plan, err := c.Engine.Plan(ctx, model.OpEvacuate, nm.NodeName, ro)
	if err != nil {
		return c.failed(ctx, nm, st, err)
	}
	if b := plan.Blockers(); len(b) > 0 {
		return c.failed(ctx, nm, st, &ops.RefusedError{Reasons: b}) // nothing began: nothing counted
	}
	counted := st.TotalPods > 0 || st.EvictionPods > 0 || st.TotalVMs > 0
	st.Phase, st.LastUpdate = model.MaintenanceRunning, c.Engine.Now()
	if !counted { // the totals are counted once, when the maintenance begins
		st.TotalPods = 0
		for _, p := range c.Engine.PodsOn(nm.NodeName) {
			if !p.Terminating { // one already leaving (deleted by someone) is not the maintenance's
				st.TotalPods++
			}
		}
		st.EvictionPods = len(plan.Pods) + len(plan.Carriers)
		st.TotalVMs = len(plan.VMs)
		c.event(
			ctx,
			k.Name,
			"Normal",
			EventMaintenanceStart,
			fmt.Sprintf("NodeMaintenance %s: %s", nm.Name, cmp.Or(nm.Reason, "no reason given")),
		)
	}
	st.PendingPods, st.PendingVMs = []string{}, []string{}
	for _, p := range append(plan.Pods, plan.Carriers...) {
		st.PendingPods = append(st.PendingPods, p.Key())
	}
	for _, vm := range plan.VMs {
		st.PendingVMs = append(st.PendingVMs, vm.Name)
	}
	if counted { // resumed: a VM that left the node meanwhile (it finished migrating while no one watched) has moved
		st.MigratedVMs = max(st.MigratedVMs, st.TotalVMs-len(plan.VMs))
	}
	st.Progress()
	w := c.statusWriter(ctx, nm.Name, st)
	rep, err := c.Engine.Run(ctx, plan, ro, recordSteps(ctx, c.Events, func(ev ops.Event) { w.observe(ev); c.Emit(ev) }))
	st = w.stop()
	if err != nil {
		if ctx.Err() != nil {
			// Stopped (shutdown, or deleted mid-way): the journal records where; the status
			// says so for whoever looks before the next reconcile.
			st.LastError = "interrupted: " + err.Error()
			c.write(nm.Name, st)
			return nil
		}
		return c.failed(ctx, nm, st, err)
	}
	st.Phase, st.LastError, st.PendingPods, st.PendingVMs = model.MaintenanceSucceeded, "", []string{}, []string{}
	// Every VM that had to go is gone (verified): one that finished its move while no one
	// watched (a restart between two reads) has moved too.
	st.MigratedVMs = max(st.MigratedVMs, st.TotalVMs-len(rep.Left))
	st.Progress()
	c.write(nm.Name, st)
	c.event(
		ctx,
		k.Name,
		"Normal",
		EventMaintenanceDone,
		fmt.Sprintf("NodeMaintenance %s: %d pod(s) evicted, %d VM(s) migrated", nm.Name, st.EvictionPods, st.MigratedVMs),
	)
	return nil
}

// restore puts the node back and lets the resource go.
func (c *MaintenanceController) restore(ctx context.Context, nm model.NodeMaintenance) error {
	if _, ok := c.Engine.KubeNode(nm.NodeName); ok {
		plan, err := c.Engine.Plan(ctx, model.OpUncordon, nm.NodeName, c.Run)
		if err == nil {
			_, err = c.Engine.Run(ctx, plan, c.Run, recordSteps(ctx, c.Events, c.Emit))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return c.failed(ctx, nm, nm.Status, fmt.Errorf("restoring the node: %w", err))
		}
		c.event(ctx, nm.NodeName, "Normal", EventMaintenanceEnded, fmt.Sprintf("NodeMaintenance %s deleted: node restored", nm.Name))
	}
	// The lease was the maintenance's (renewed while it lasted): released with it, even when
	// the node (or its journal) is gone and the plan had nothing to release.
	if err := c.Engine.ReleaseLease(ctx, nm.NodeName); err != nil {
		return c.failed(ctx, nm, nm.Status, fmt.Errorf("releasing the node's lease: %w", err))
	}
	if err := c.Store.SetFinalizer(ctx, nm.Name, false); err != nil {
		return c.failed(ctx, nm, nm.Status, fmt.Errorf("removing the finalizer: %w", err))
	}
	return nil
}

// failed records the error, schedules the retry with backoff and returns the error.
func (c *MaintenanceController) failed(ctx context.Context, nm model.NodeMaintenance, st model.MaintenanceStatus, err error) error {
	c.mu.Lock()
	r := c.retry[nm.Name]
	delay := min(c.Backoff<<min(r.failures, 16), 5*time.Minute)
	r.failures++
	r.next = time.Now().Add(delay)
	c.retry[nm.Name] = r
	c.mu.Unlock()
	if st.Phase == "" || errors.As(err, new(*ops.RefusedError)) {
		st.Phase = model.MaintenanceFailed // refused by policy: it waits for someone to lift a blocker
	}
	if nm.Deleting {
		st.Phase = model.MaintenanceFailed
	}
	st.LastError = fmt.Sprintf("%v (attempt %d, next in %s)", err, r.failures, delay.Round(time.Second))
	st.LastUpdate = c.Engine.Now()
	c.write(nm.Name, st)
	if r.failures == 1 && nm.NodeName != "" {
		c.event(ctx, nm.NodeName, "Warning", EventMaintenanceError, fmt.Sprintf("NodeMaintenance %s: %v", nm.Name, err))
	}
	return err
}

// write sends a status; it outlives a cancelled operation so the last word is recorded.
func (c *MaintenanceController) write(name string, st model.MaintenanceStatus) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = c.Store.UpdateStatus(ctx, name, st) // the next reconcile writes again
}

func (c *MaintenanceController) event(ctx context.Context, node, typ, reason, msg string) {
	if c.Events != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		c.Events.NodeEvent(ctx, node, typ, reason, msg)
	}
}

// statusWriter follows an operation's events and writes the status when it changed, at
// most every 250 ms: a node of 110 pods is not 110 writes.
type statusWriter struct {
	mu    sync.Mutex
	st    model.MaintenanceStatus
	dirty chan struct{}
	done  chan struct{}
	c     *MaintenanceController
	name  string
}

func (c *MaintenanceController) statusWriter(ctx context.Context, name string, st model.MaintenanceStatus) *statusWriter {
	w := &statusWriter{st: st, dirty: make(chan struct{}, 1), done: make(chan struct{}), c: c, name: name}
	c.write(name, st)
	go func() {
		defer close(w.done)
		for range w.dirty {
			w.mu.Lock()
			st := w.st
			w.mu.Unlock()
			c.write(name, st)
			select {
			case <-time.After(250 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}()
	return w
}

func (w *statusWriter) observe(ev ops.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := false
	switch ev := ev.(type) {
	case ops.PodEvent:
		if ev.State == ops.PodGone && slices.Contains(w.st.PendingPods, ev.Pod) {
			w.st.PendingPods, changed = without(w.st.PendingPods, ev.Pod), true
		}
	case ops.MigrationEvent:
		if ev.State == ops.MigCompleted && slices.Contains(w.st.PendingVMs, ev.VM) {
			w.st.PendingVMs, changed = without(w.st.PendingVMs, ev.VM), true
			w.st.MigratedVMs++
		}
	case ops.StepEvent:
		changed = ev.State == ops.StepDone || ev.State == ops.StepFailed
		if ev.Step == model.StepSlot {
			c := model.MaintenanceCondition{Type: model.ConditionQueued, Status: "True", Reason: "WaitingForNodeSlot",
				Message: ev.Detail, LastTransitionTime: ev.At}
			if ev.State != ops.StepQueued {
				c.Status, c.Reason, c.Message = "False", "NodeSlotHeld", ev.Detail
			}
			w.st.Conditions = slices.Clone(w.st.Conditions) // the writer may be marshalling the old one
			w.st.SetCondition(c)
			changed = true
		}
	case ops.PlanReady, ops.NodeChanged, ops.RunDone, ops.CampaignEvent:
	}
	if changed {
		w.st.LastUpdate = w.c.Engine.Now()
		w.st.Progress()
		select {
		case w.dirty <- struct{}{}:
		default:
		}
	}
}

// stop ends the writer and returns the status as the events left it.
func (w *statusWriter) stop() model.MaintenanceStatus {
	close(w.dirty)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

// without is s less v, in a new slice: the writer may be marshalling the old one.
func without(s []string, v string) []string {
	out := make([]string, 0, len(s))
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
