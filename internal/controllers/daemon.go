package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// Daemon reacts to cordon and uncordon, whoever does them (kubectl, an autoscaler, an
// upgrade): a node becoming unschedulable gets its nova-compute disabled and its VMs
// live-migrated away; schedulable again, its nova-compute is re-enabled if drainctl disabled
// it. This is nova-kubernetes-drain's daemon mode, on the engine: caps, watchdog, journal,
// lease. A restart resumes from what the cluster records: the reconcile is level-based.
type Daemon struct {
	Engine *ops.Engine
	Node   string          // only this node (a DaemonSet pod's own); "" for every node
	Run    ops.RunOptions  // policy for the migrations
	Resync time.Duration   // full reconcile even without changes (default 30 s)
	Emit   func(ops.Event) // progress (logs, metrics)
	Events NodeEvents      // Kubernetes Events on the Node; may be nil

	mu      sync.Mutex
	active  map[string]bool
	planErr map[string]string // node -> the planning error last reported
	wg      sync.WaitGroup
}

// Serve reconciles until ctx ends, then waits for the operations it started to stop at a
// safe point (recording where).
func (d *Daemon) Serve(ctx context.Context) error {
	if d.Resync == 0 {
		d.Resync = 30 * time.Second
	}
	if d.Emit == nil {
		d.Emit = func(ops.Event) {}
	}
	d.active, d.planErr = map[string]bool{}, map[string]string{}
	changes, cancel := d.Engine.Subscribe()
	defer cancel()
	defer d.wg.Wait()
	loop(ctx, d.Resync, []<-chan struct{}{changes}, func(ctx context.Context) time.Duration {
		d.Engine.ForgetFences(ctx) // a node seen Ready: its last fence proves nothing now
		d.reconcileAll(ctx)
		return 0
	})
	return nil
}

func (d *Daemon) reconcileAll(ctx context.Context) {
	names := []string{d.Node}
	if d.Node == "" {
		names = d.Engine.KubeNodeNames()
	}
	for _, name := range names {
		k, ok := d.Engine.KubeNode(name)
		if !ok {
			continue
		}
		d.reconcile(ctx, k)
	}
}

// reaction is what a node's state calls for: its op (the Nova half of it) and the Event
// that says it started.
type reaction struct {
	op   model.OpKind
	what string
}

// reactions, by whether the node is schedulable.
var reactions = map[bool]reaction{
	false: {model.OpEvacuate, "cordoned: disabling nova-compute and live-migrating its VMs"},
	true:  {model.OpUncordon, "schedulable again: re-enabling nova-compute"},
}

// reconcile starts what the node's state calls for, unless something already runs on it.
func (d *Daemon) reconcile(ctx context.Context, k model.KubeNode) {
	d.mu.Lock()
	if d.active[k.Name] {
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	react := reactions[k.Schedulable]
	ro := d.Run
	ro.VMsOnly = true // the Nova half: the planner plans only it
	plan, err := d.Engine.Plan(ctx, react.op, k.Name, ro)
	if err != nil {
		d.planFailed(ctx, k.Name, err) // Nova unreachable, a node gone: said once, tried at the next reconcile
		return
	}
	d.planFailed(ctx, k.Name, nil)
	if !plan.Pending() {
		return
	}
	d.mu.Lock()
	d.active[k.Name] = true
	d.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() { d.mu.Lock(); delete(d.active, k.Name); d.mu.Unlock() }()
		d.event(ctx, k.Name, "Normal", EventStarted, react.what)
		rep, err := d.Engine.Run(ctx, plan, ro, recordSteps(ctx, d.Events, d.Emit))
		switch {
		case errors.As(err, new(*ops.LeaseHeldError)):
			// Another actor (a drainctl evacuate, node-maintenance) works this node: theirs.
		case err == nil:
			d.event(
				ctx,
				k.Name,
				"Normal",
				EventDone,
				fmt.Sprintf("%s: %d VM(s) migrated", react.op, countResult(rep, ops.MigCompleted)),
			)
		case ctx.Err() != nil:
		default:
			d.event(ctx, k.Name, "Warning", EventFailed, err.Error())
		}
	}()
}

// planFailed reports a node's planning error once (a Warning Event and the log), not at every
// reconcile, and forgets it once a plan succeeds.
func (d *Daemon) planFailed(ctx context.Context, node string, err error) {
	d.mu.Lock()
	last := d.planErr[node]
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == last {
		d.mu.Unlock()
		return
	}
	if msg == "" {
		delete(d.planErr, node)
	} else {
		d.planErr[node] = msg
	}
	d.mu.Unlock()
	if err != nil {
		d.Emit(ops.NewNodeChanged(d.Engine.Now(), node, "cannot plan: "+msg))
		d.event(ctx, node, "Warning", EventPlanFailed, msg)
	}
}

func (d *Daemon) event(ctx context.Context, node, typ, reason, msg string) {
	if d.Events != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		d.Events.NodeEvent(ctx, node, typ, reason, msg)
	}
}

func countResult(r ops.Report, result ops.MigState) int {
	n := 0
	for _, v := range r.VMs {
		if v.Result == result {
			n++
		}
	}
	return n
}
