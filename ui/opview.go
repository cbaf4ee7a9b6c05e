package ui

import (
	"context"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// opView is what the operation screen shows of one operation, built from its events.
type opView struct {
	key     string
	plan    model.Plan
	started time.Time
	cancel  context.CancelFunc
	step    model.StepKind
	steps   map[model.StepKind]string
	vms     map[string]*vmView
	vmOrder []string
	pods    map[string]*podView
	podKeys []string
	log     []logLine
	report  *ops.Report
}

type vmView struct {
	id, name, state, source, dest, msg string
	total, processed, remaining        int64
	rate                               float64
	eta                                time.Duration
	stalled                            bool
	attempt                            int
}

type podView struct {
	key, state, pdb string
	attempts        int
}

type logLine struct {
	at   time.Time
	text string
	bad  bool
}

func newOpView(key string, p model.Plan, now time.Time) *opView {
	v := &opView{key: key, plan: p, started: now, steps: map[model.StepKind]string{}, vms: map[string]*vmView{}, pods: map[string]*podView{}}
	for _, vm := range p.VMs {
		v.vm(vm.ID, vm.Name).source = vm.Host
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
	v.log = append(v.log, logLine{at, fmt.Sprintf(format, a...), bad})
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

// record applies one engine event to the operation it belongs to.
func (m *Model) record(ev ops.Event) {
	key := ev.NodeName()
	if t, ok := ev.(tagged); ok {
		key, ev = t.key, t.Event
	}
	v, ok := m.ops[key]
	if !ok {
		return
	}
	at := ev.Time()
	switch e := ev.(type) {
	case ops.PlanReady:
		v.plan = e.Plan
	case ops.StepEvent:
		v.steps[e.Step] = e.State
		if e.State == ops.StepStarted {
			v.step = e.Step
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
		if e.Source != "" {
			vm.source = e.Source
		}
		if e.Dest != "" {
			vm.dest = e.Dest
		}
		if e.Progress() {
			vm.total, vm.processed, vm.remaining, vm.rate, vm.eta, vm.stalled = e.Total, e.Processed, e.Remaining, e.Rate, e.ETA, e.Stalled
			vm.state = "running"
			return
		}
		if vm.state != e.State {
			vm.state = e.State
			if e.Message != "" {
				vm.msg = e.Message
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
	case ops.RunDone:
		r := e.Report
		v.report = &r
		v.logf(at, r.Result != ops.ResultDone, "%s %s %s", r.Op, r.Result, r.Error)
	}
}
