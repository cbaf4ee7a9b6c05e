package campaign

import (
	"context"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
	"github.com/drainctl/drainctl/text"
)

// The owners told ahead (#57.3): with [notify] owner_lead, the campaign tells the owners of
// each node's VMs as its forecast says the node will start, so that the node finds its VMs'
// notices due when it starts rather than waiting the lead there. The nodes in flight end as
// forecast (their VMs' copy time), the rest start in order, Parallel at a time. A forecast
// runs early (the pods, the operator's step and the gates are not in it): an owner is told
// early, never late; a node that starts before its owners' lead is up waits the rest of it
// at its VMs' requests.

// heraldEvery is how often the campaign looks for the nodes whose owners are due a notice.
const heraldEvery = time.Second

// herald tells the owners of the nodes due within the lead, until ctx ends.
func (r *Campaign) herald(ctx context.Context) {
	lead := r.e.OwnerLead(r.o.Run)
	if lead <= 0 {
		return
	}
	told := map[string]bool{}
	for {
		r.tellDue(ctx, lead, told)
		r.answerNow(ctx, told)
		if !poll.Sleep(ctx, heraldEvery) {
			return
		}
	}
}

// tellDue tells the owners of each pending node forecast to start within the lead.
func (r *Campaign) tellDue(ctx context.Context, lead time.Duration, told map[string]bool) {
	now, rec := r.e.Now(), r.Record()
	expected := map[string]time.Duration{}
	for _, nf := range r.fc.Nodes {
		expected[nf.Node] = nf.Expected
	}
	free := make([]time.Time, max(1, r.fc.Parallel)) // when each of the campaign's slots frees
	inFlight := 0
	for _, n := range rec.Nodes {
		if n.Phase.Started() && !n.Phase.Finished() && inFlight < len(free) {
			free[inFlight] = latest(now, n.Started.Add(expected[n.Name]))
			inFlight++
		}
	}
	for i := inFlight; i < len(free); i++ {
		free[i] = now
	}
	for _, n := range rec.Nodes {
		if n.Phase != model.PhasePending || n.Skip {
			continue
		}
		slot := 0
		for i := range free {
			if free[i].Before(free[slot]) {
				slot = i
			}
		}
		start := free[slot]
		if start.After(now.Add(lead)) {
			return // the rest start later still
		}
		free[slot] = start.Add(expected[n.Name])
		if told[n.Name] {
			continue
		}
		at := latest(start, now.Add(lead))
		ro := r.o.Run
		ro.Campaign = r.o.Name
		count, err := r.e.TellOwners(ctx, n.Name, r.e.MaintenanceRef("campaign "+r.o.Name), at, ro)
		if err != nil {
			r.note(n.Name, model.PhasePending, "its VMs' owners could not all be told ahead: "+err.Error()+"; told at its start instead")
			continue
		}
		told[n.Name] = true
		if count > 0 {
			r.holdUntil(n.Name, at)
			r.note(n.Name, model.PhasePending, fmt.Sprintf("%d VM owner(s) told ahead in their metadata: due at %s",
				count, at.UTC().Format(time.RFC3339)))
		}
	}
}

// answerNow moves at once the VMs of the told nodes not started yet whose owners answered
// drainctl:move-now (as [policy.maintenance] honour takes their word): each a one-VM migrate
// under the engine's caps and budgets, in the background, and only while the campaign is not
// paused and the node's gates hold (its window, the rate budgets, the fleet's health, the gate
// command, the alerts): an owner's word moves their VM sooner, never past the operator's
// bounds. The owners' answers are read from the process's read of what changed, once a node's
// host is listed.
func (r *Campaign) answerNow(ctx context.Context, told map[string]bool) {
	rec := r.Record()
	for _, n := range rec.Nodes {
		if !told[n.Name] || n.Phase != model.PhasePending {
			continue
		}
		vms, err := r.e.NodeServers(ctx, n.Name)
		if err != nil {
			continue // asked again at the next look
		}
		held := "" // the node's gates, read once a look and only for an answer to act on
		for _, vm := range vms {
			if !vm.MovesNow() || !r.o.Run.Policy.Maintenance.Honour.Of(vm) {
				continue
			}
			r.mu.Lock()
			taken := r.nowAsked[vm.ID]
			r.mu.Unlock()
			if taken {
				continue
			}
			if held == "" {
				held = "-"
				if r.Paused() {
					held = "the campaign is paused"
				} else if why, _ := r.gateClosed(ctx, n.Name); why != "" {
					held = why
				}
			}
			if held != "-" {
				r.sayOnce(n.Name, vm.ID+"/now", "VM "+vm.Name+"'s owner asked it be moved now ("+model.MoveNowKey+"): held by the "+
					"campaign's gates: "+held)
				continue
			}
			r.mu.Lock()
			if r.nowAsked == nil {
				r.nowAsked = map[string]bool{}
			}
			r.nowAsked[vm.ID] = true
			r.mu.Unlock()
			r.note(n.Name, model.PhasePending, "VM "+vm.Name+"'s owner asked it be moved now ("+model.MoveNowKey+"): moving it")
			r.answering.Add(1)
			go func() {
				defer r.answering.Done()
				ro := r.o.Run
				ro.Campaign = r.o.Name
				if err := r.e.MoveNow(ctx, vm, ro, r.emit); err != nil {
					r.note(n.Name, model.PhasePending, "VM "+vm.Name+" asked to move now: "+err.Error()+"; it goes with its node")
					return
				}
				r.note(n.Name, model.PhasePending, "VM "+vm.Name+" moved now, as its owner asked")
			}()
		}
	}
}

// ownersWindow is the gate of the owners' windows (drainctl:maintenance-window): a node whose
// VM's owner asks for a window that the campaign's overlaps starts only while both are open.
// The campaign takes such a node after its others (the loop in campaign.go), so one owner's
// window holds no other node.
func (r *Campaign) ownersWindow(ctx context.Context, node string) string {
	vms, err := r.e.NodeServers(ctx, node)
	if err != nil {
		return "reading the owners' windows: " + err.Error()
	}
	hold := r.ownersHold(vms)
	for _, n := range hold.notes {
		r.sayOnce(node, n.vm, n.what)
	}
	r.holdUntil(node, hold.until)
	return hold.why
}

// holdUntil keeps the latest moment the node's VMs' owners asked it not to start before
// (their window's opening, the end of their lead), for the running ETA.
func (r *Campaign) holdUntil(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.rec.Nodes {
		if n := &r.rec.Nodes[i]; n.Name == node {
			n.NotBefore = latest(n.NotBefore, at)
		}
	}
}

// inOrder is the queue of a campaign's n nodes, in the record's order.
func inOrder(n int) []int {
	queue := make([]int, n)
	for i := range queue {
		queue[i] = i
	}
	return queue
}

// putAfterOthers puts the k-th node of the queue after the campaign's other nodes, once, when
// its VMs' owners' windows hold it now; true when it did.
func (r *Campaign) putAfterOthers(ctx context.Context, queue *[]int, k int, put map[int]bool) bool {
	i := (*queue)[k]
	if put[i] || k == len(*queue)-1 {
		return false
	}
	node := r.Record().Nodes[i].Name
	why := r.ownersWindow(ctx, node)
	if why == "" {
		return false
	}
	put[i] = true
	*queue = append(*queue, i)
	r.note(node, model.PhasePending, "put after the campaign's other nodes: "+why)
	return true
}

// ownersHold is what the owners' windows of vms do to their node now: why they hold it and
// until when ("": they do not), and what is said of each window set aside. A window the
// campaign's never overlaps, one a campaign without a window is asked, or one that opens
// later than [roll] owners_window_max holds nothing: the operator's bounds come first. A
// value that is no window is set aside; a project whose word is not taken is not read.
func (r *Campaign) ownersHold(vms []model.VM) (hold struct {
	why   string
	until time.Time
	notes []struct{ vm, what string }
}) {
	now, ours, most := r.e.Now(), r.o.Gates.Window, r.e.Config().Campaign.OwnersWindowMax.D()
	note := func(vm model.VM, what string) {
		hold.notes = append(hold.notes, struct{ vm, what string }{vm.ID, what})
	}
	for _, vm := range vms {
		if vm.WindowAsked == "" || !r.o.Run.Policy.Maintenance.Honour.Of(vm) {
			continue
		}
		theirs, err := ParseWindow(vm.WindowAsked)
		asked := fmt.Sprintf("VM %s's owner asks for the window %s (%s)", vm.Name, model.Quoted(vm.WindowAsked), model.WindowKey)
		switch {
		case err != nil:
			note(vm, asked+": it is no window ("+model.Quoted(err.Error())+"): set aside")
			continue
		case ours == nil:
			note(vm, asked+": the campaign has no window, so it is taken when its node's turn comes")
			continue
		}
		at, ok := jointOpen(ours, theirs, now)
		switch {
		case !ok:
			note(vm, fmt.Sprintf("%s: it never overlaps the campaign's window %s, so it is taken in the campaign's", asked, ours))
		case most > 0 && at.Sub(now) > most:
			note(vm, fmt.Sprintf("%s: both open %s, later than [roll] owners_window_max (%s) from now, so it is taken in the "+
				"campaign's", asked, at.In(theirs.loc).Format("Mon 2006-01-02 15:04 MST"), text.Duration(most)))
		case at.After(now) && at.After(hold.until):
			hold.why = fmt.Sprintf("%s: both open %s", asked, at.In(theirs.loc).Format("Mon 2006-01-02 15:04 MST"))
			hold.until = at
		}
	}
	return hold
}

// sayOnce notes a node's VM's owner's word once a campaign.
func (r *Campaign) sayOnce(node, vm, what string) {
	key := node + "/" + vm
	r.saidMu.Lock()
	said := r.windowSaid[key]
	if r.windowSaid == nil {
		r.windowSaid = map[string]bool{}
	}
	r.windowSaid[key] = true
	r.saidMu.Unlock()
	if !said {
		r.note(node, model.PhasePending, what)
	}
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
