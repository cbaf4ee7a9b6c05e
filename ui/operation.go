package ui

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// operations are the operations started from this view: each one's view, built from its
// events, and the batches still running, which quitting waits for.
type operations struct {
	views map[string]*opView
	order []string
	kept  int // earlier operations on a key, kept under keys of their own
	// batches counts the batches running; idle is closed while none runs (a WaitGroup's Wait
	// cannot be bounded without leaving a goroutine behind when the bound passes).
	mu      sync.Mutex
	batches int
	idle    chan struct{}
	// campaignCancel stops the campaign's node operations (they run inside it).
	campaignCancel context.CancelFunc
	campaignName   string // the campaign running, for the quit dialog
}

func newOperations() *operations {
	idle := make(chan struct{})
	close(idle)
	return &operations{views: map[string]*opView{}, idle: idle}
}

// add shows a plan as an operation (queued until the engine starts it).
// An earlier operation on the same node (the evacuation before its uncordon) stays listed in
// its place under a key of its own: the key names the latest, where the events go.
func (o *operations) add(key string, p model.Plan, now time.Time, cancel context.CancelFunc) {
	if old, seen := o.views[key]; seen {
		o.kept++
		earlier := fmt.Sprintf("%s#%d", key, o.kept)
		o.views[earlier] = old
		o.order[slices.Index(o.order, key)] = earlier
	}
	o.order = append(o.order, key)
	v := newOpView(key, p, now)
	v.cancel = cancel
	o.views[key] = v
}

// begin counts a running batch; the returned func says it ended.
func (o *operations) begin() func() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.batches == 0 {
		o.idle = make(chan struct{})
	}
	o.batches++
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.batches--; o.batches == 0 {
				close(o.idle)
			}
		})
	}
}

// wait returns once every batch has ended, or after timeout.
func (o *operations) wait(timeout time.Duration) {
	o.mu.Lock()
	idle := o.idle
	o.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

func (o *operations) running(key string) bool {
	v, ok := o.views[key]
	return ok && v.report == nil
}

func (o *operations) runningKeys() []string {
	var out []string
	for _, k := range o.order {
		if o.running(k) {
			out = append(out, k)
		}
	}
	return out
}

// cancelAll stops every running operation at its next safe point.
func (o *operations) cancelAll() {
	for _, k := range o.runningKeys() {
		o.views[k].cancel()
	}
	if o.campaignCancel != nil { // between its nodes' operations a campaign runs too
		o.campaignCancel()
	}
}

// record applies one engine event to the operation it belongs to; true when it ended one.
func (o *operations) record(t tagged, now time.Time) bool {
	if pr, ok := t.ev.(ops.PlanReady); ok && t.campaign {
		o.add(t.key, pr.Plan, now, o.campaignCancel)
		o.views[t.key].campaign = true
	}
	v, ok := o.views[t.key]
	if !ok {
		return false
	}
	return v.record(t.ev)
}

// opView is what the operation screen shows of one operation, built from its events.
type opView struct {
	key     string
	plan    model.Plan
	started time.Time
	queued  bool // waiting for a slot under concurrency.nodes
	cancel  context.CancelFunc
	step    model.StepKind
	steps   map[model.StepKind]ops.StepState
	vms     map[string]*vmView
	vmOrder []string
	pods    map[string]*podView
	podKeys []string
	log     []logLine
	report  *ops.Report
	flags   string // the overrides it runs with, as flags: a resume needs them too
	// campaign: a node of the campaign running (its cancel stops the campaign too).
	campaign bool
}

type vmView struct {
	id, name, source, dest, msg string
	asked                       string // a running copy's: what was asked of Nova, not done yet
	method                      model.MoveMethod
	state                       ops.MigState
	task                        model.VMTask // the task Nova shows, when state is its word
	total, processed, remaining int64
	rate, converge              float64
	eta                         time.Duration
	stalled                     bool
	attempt                     int
}

type podView struct {
	key, pdb string
	state    ops.PodState
	attempts int
}

type logLine struct {
	at   time.Time
	text string
	bad  bool
}

func newOpView(key string, p model.Plan, now time.Time) *opView {
	v := &opView{
		key:     key,
		plan:    p,
		started: now,
		queued:  true,
		steps:   map[model.StepKind]ops.StepState{},
		vms:     map[string]*vmView{},
		pods:    map[string]*podView{},
	}
	for _, vm := range p.VMs {
		view := v.vm(vm.ID, vm.Name)
		view.source, view.method = vm.Host, vm.Method
	}
	return v
}

func (v *opView) finished() bool { return v.report != nil }

func (v *opView) vm(id, name string) *vmView {
	if vm, ok := v.vms[id]; ok {
		return vm
	}
	vm := &vmView{id: id, name: name, state: "pending"}
	v.vms[id] = vm
	v.vmOrder = append(v.vmOrder, id)
	return vm
}

func (v *opView) logf(at time.Time, bad bool, format string, a ...any) {
	v.log = append(v.log, logLine{at, text.Sprintf(format, a...), bad})
	if len(v.log) > 200 {
		v.log = v.log[len(v.log)-200:]
	}
}

// counts are done/total for the row's inline status.
func (v *opView) counts() (vmsDone, vms, podsDone, pods int) {
	for _, vm := range v.vms {
		vms++
		if vm.state == ops.MigCompleted || vm.state == ops.MigSkipped {
			vmsDone++
		}
	}
	pods = len(v.plan.Pods) + len(v.plan.Carriers)
	for _, p := range v.pods {
		if p.state == ops.PodGone {
			podsDone++
		}
	}
	return
}

// record applies one of the operation's events; true when it ended the operation.
func (v *opView) record(ev ops.Event) (ended bool) {
	at := ev.Time()
	switch e := ev.(type) {
	case ops.PlanReady:
		if v.nested(e.Plan.Op) { // a VM's return inside an uncordon: a step of this operation, not a new one
			v.logf(at, false, "%s of %s planned", e.Plan.Op, e.Plan.VM)
			return
		}
		v.plan, v.queued = e.Plan, false
	case ops.StepEvent:
		v.steps[e.Step] = e.State
		if e.State == ops.StepStarted {
			v.step = e.Step
		}
		if e.Step == model.StepSlot { // cordoned, compute disabled, waiting for a node slot
			v.queued = e.State == ops.StepQueued
		}
		bad := e.State == ops.StepFailed
		if e.Detail != "" {
			v.logf(at, bad, "%s %s: %s", e.Step, e.State, e.Detail)
		} else {
			v.logf(at, bad, "%s %s", e.Step, e.State)
		}
	case ops.PodEvent:
		p, ok := v.pods[e.Pod]
		if !ok {
			p = &podView{key: e.Pod}
			v.pods[e.Pod] = p
			v.podKeys = append(v.podKeys, e.Pod)
		}
		p.state, p.attempts = e.State, e.Attempt
		if e.PDB != "" {
			p.pdb = e.PDB
		}
		switch e.State {
		case ops.PodBlocked:
			v.logf(at, false, "pod %s blocked by PDB %s (attempt %d)", e.Pod, e.PDB, e.Attempt)
		case ops.PodFailed:
			v.logf(at, true, "pod %s failed: %s", e.Pod, e.Message)
		case ops.PodGone:
			v.logf(at, false, "pod %s gone", e.Pod)
		}
	case ops.MigrationEvent:
		vm := v.vm(e.VMID, e.VM)
		vm.attempt = e.Attempt
		if e.Method != "" {
			vm.method = e.Method
		}
		if e.Source != "" {
			vm.source = e.Source
		}
		if e.Dest != "" {
			vm.dest = e.Dest
		}
		if e.Progress() {
			vm.total, vm.processed, vm.remaining = e.Total, e.Processed, e.Remaining
			vm.rate, vm.converge, vm.eta, vm.stalled = e.Rate, e.Converge, e.ETA, e.Stalled
			vm.state = ops.MigRunning
			vm.asked = e.Message // what the stall policy asked of Nova and how long ago

			return
		}
		if vm.state != e.State {
			vm.state, vm.task = e.State, e.Task
			switch {
			case e.Message != "":
				vm.msg = e.Message
			case e.State == ops.MigRequested || e.State == ops.MigCompleted:
				vm.msg = "" // a retry or the end: the last attempt's error no longer holds
			}
			bad := e.State == ops.MigFailed || e.State == ops.MigAborted
			if e.Message != "" {
				v.logf(at, bad, "vm %s %s: %s", e.VM, e.State, e.Message)
			} else {
				v.logf(at, bad, "vm %s %s", e.VM, e.State)
			}
		}
		if e.State == ops.MigCompleted {
			vm.remaining = 0
		}
	case ops.NodeChanged:
		v.logf(at, false, "%s", e.What)
	case ops.CampaignEvent:
		if e.Node != "" {
			v.logf(at, e.Phase == model.PhaseFailed, "campaign %s: %s %s", e.Node, e.Phase, e.Message)
		} else {
			v.logf(at, e.State == model.CampaignFailed, "campaign %s %s", e.State, e.Message)
		}
	case ops.RunDone:
		r := e.Report
		if !v.nested(r.Op) { // a nested one is the return of one VM, not the operation's end
			v.report, v.queued, ended = &r, false, true
		}
		v.logf(at, r.Result != ops.ResultDone, "%s %s %s", r.Op, r.Result, r.Error)
	}
	return ended
}

// nested says whether an operation of kind op, seen in this operation's events, runs inside
// it (an uncordon with --return-vms runs a migrate a VM): it neither replaces nor ends it.
func (v *opView) nested(op model.OpKind) bool {
	return !v.queued && v.plan.Op != "" && op != v.plan.Op
}
