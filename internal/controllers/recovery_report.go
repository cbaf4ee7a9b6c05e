package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// What a recovery says when it ends: its notice, its ledger's counts, its Events.

// lastSign says when the node last showed life, as its outage is named.
func lastSign(k model.KubeNode) string {
	if !k.Heartbeat.IsZero() {
		return k.Heartbeat.UTC().Format(time.RFC3339) + " (its kubelet's last Lease renewal)"
	}
	return k.ReadySince.UTC().Format(time.RFC3339) + " (NotReady)"
}

// notify stamps the notice and tells it.
func (r *Recoverer) notify(n model.Notice) {
	if n.At.IsZero() {
		n.At = r.Engine.Now()
	}
	r.Notify(n)
}

// ledger is the recovery's ledger in counts: the plan's VMs by how the run left them.
func ledger(plan model.Plan, rep ops.Report) *model.LedgerCounts {
	c := &model.LedgerCounts{}
	for _, vm := range plan.VMs {
		i := slices.IndexFunc(rep.VMs, func(v ops.VMReport) bool { return v.VMID == vm.ID })
		switch {
		case ops.MoveFactsOf(vm.Method).Stays || (i >= 0 && rep.VMs[i].Result == ops.MigSkipped):
			c.Left++
		case i < 0 || rep.VMs[i].Result == ops.MigInterrupted:
			c.Pending++
		case rep.VMs[i].Result == ops.MigCompleted:
			c.Succeeded++
		default:
			c.Failed++
		}
	}
	return c
}

// summary is the recovery in a line: its outcome and its VMs by how they ended.
func summary(node string, plan model.Plan, rep ops.Report) string {
	c := ledger(plan, rep)
	s := fmt.Sprintf("recovery of %s %s: %d VM(s) rebuilt, %d failed, %d left", node, rep.Result, c.Succeeded, c.Failed, c.Left)
	if c.Pending > 0 {
		s += fmt.Sprintf(", %d not reached", c.Pending)
	}
	if rep.Error != "" {
		s += ": " + rep.Error
	}
	return s
}

func (r *Recoverer) event(ctx context.Context, node, typ, reason, msg string) {
	if r.Events == nil {
		return
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r.Events.NodeEvent(ectx, node, typ, reason, msg)
}
