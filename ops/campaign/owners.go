package campaign

import (
	"context"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
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
	lead := r.e.Config().Notify.OwnerLead.D()
	if lead <= 0 {
		return
	}
	told := map[string]bool{}
	for {
		r.tellDue(ctx, lead, told)
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
		count, err := r.e.TellOwners(ctx, n.Name, "campaign "+r.o.Name, at, ro)
		if err != nil {
			r.note(n.Name, model.PhasePending, "its VMs' owners could not all be told ahead: "+err.Error()+"; told at its start instead")
			continue
		}
		told[n.Name] = true
		if count > 0 {
			r.note(n.Name, model.PhasePending, fmt.Sprintf("%d VM owner(s) told ahead in their metadata: due at %s",
				count, at.UTC().Format(time.RFC3339)))
		}
	}
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
