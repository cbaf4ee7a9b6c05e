package campaign

import (
	"context"
	"slices"
	"sync"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/poll"
)

// --return-vms in a campaign: a node's VMs are brought home once it is back and verified, in
// the background, so the next node starts without waiting for them; the campaign ends once
// every return has. What left a node is copied from its journal into the record before the
// node returns (its release clears the journal), so a campaign resumed after a crash still
// knows what to bring home; each VM's outcome is recorded as it ends.

// keepLeft copies the VMs that left node i from its journal into the record, each pending.
func (r *Campaign) keepLeft(i int, name string) {
	if !r.o.ReturnVMs {
		return
	}
	k, ok := r.e.KubeNode(name)
	if !ok {
		return
	}
	j, ok := ops.ReadJournal(k)
	if !ok || len(j.Left) == 0 {
		return
	}
	r.mu.Lock()
	n := &r.rec.Nodes[i]
	if len(n.Left) > 0 { // kept already (a resumed return phase)
		r.mu.Unlock()
		return
	}
	// A VM that came here from an earlier node of the campaign belongs there: that node's
	// return brings it home, from wherever the campaign has put it since.
	// Its move is kept either way: where the campaign put it is no colleague's doing.
	n.Left = j.Left
	for _, l := range j.Left {
		if ours := slices.Contains(n.Home, l.ID); ours || (n.Home == nil && !r.leftEarlier(i, l)) {
			n.Returns = append(n.Returns, model.VMReturn{ID: l.ID, Name: l.Name, Pending: true})
		}
	}
	r.mu.Unlock() // written with the returning phase, which follows at once (before the release)
}

// bringHomeLater starts bringing node i's pending VMs home, in the background.
func (r *Campaign) bringHomeLater(ctx context.Context, i int) {
	if !r.o.ReturnVMs {
		return
	}
	r.mu.Lock()
	n := r.rec.Nodes[i]
	r.mu.Unlock()
	if _, _, pending := model.ReturnsDone(n.Returns); pending == 0 || n.Phase != model.PhaseDone {
		return
	}
	r.homing.Add(1)
	go func() {
		defer r.homing.Done()
		r.bringHome(ctx, i)
	}()
}

// bringHome brings node i's pending VMs home, each at once (under the engine's caps: a
// source's and the cluster's), recording each as it ends: home again, or why not.
func (r *Campaign) bringHome(ctx context.Context, i int) {
	r.mu.Lock()
	name, left, returns := r.rec.Nodes[i].Name, r.rec.Nodes[i].Left, slices.Clone(r.rec.Nodes[i].Returns)
	r.mu.Unlock()
	ro := r.o.Run
	ro.Leaving, ro.Later, ro.ReturnVMs = nil, nil, false
	var wg sync.WaitGroup
	for k, ret := range returns {
		if !ret.Pending {
			continue
		}
		at := slices.IndexFunc(left, func(l model.VMLeft) bool { return l.ID == ret.ID })
		if at < 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.bringOneHome(ctx, i, k, name, left[at], ro)
		}()
	}
	wg.Wait()
}

// bringOneHome brings one VM that left node name home, and records how it ended as node i's
// k-th return; a VM whose return ctx ended before it was home stays pending (a resume tries
// it again).
func (r *Campaign) bringOneHome(ctx context.Context, i, k int, name string, l model.VMLeft, ro ops.RunOptions) {
	if ctx.Err() != nil || !r.waitOutOfFlight(ctx, l.ID) {
		return
	}
	res := r.e.ReturnVM(ctx, name, l, r.putOn(l.ID), ro, r.emit)
	if ctx.Err() != nil && !res.Home {
		return
	}
	res.Why = bounded(res.Why)
	r.mu.Lock()
	r.rec.Nodes[i].Returns[k] = res
	r.mu.Unlock()
	r.save(ctx)
	if res.Home {
		r.note(name, model.PhaseDone, "VM "+l.Name+" home again")
	} else {
		r.note(name, model.PhaseDone, "VM "+l.Name+" not brought home: "+res.Why)
	}
}

// noteHome records which VMs a node not yet started holds: their home, for --return-vms.
func (r *Campaign) noteHome(node string, ph model.NodePhase, vms []model.VM) {
	if !r.o.ReturnVMs || ph != model.PhasePending {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.rec.Nodes {
		if n := &r.rec.Nodes[i]; n.Name == node && n.Home == nil {
			n.Home = make([]string, 0, len(vms))
			for _, vm := range vms {
				n.Home = append(n.Home, vm.ID)
			}
		}
	}
}

// leftEarlier (a record begun without --return-vms: no Home) says whether another node of the campaign saw the VM leave before node i did
// (under mu).
func (r *Campaign) leftEarlier(i int, l model.VMLeft) bool {
	for k, n := range r.rec.Nodes {
		for _, o := range n.Left {
			if k != i && o.ID == l.ID && o.At.Before(l.At) {
				return true
			}
		}
	}
	return false
}

// putOn are the hosts the campaign has sent the VM to: by its record, and by the journals of
// its nodes not yet returned (a node in flight has moved it and not recorded it yet).
func (r *Campaign) putOn(id string) []string {
	r.mu.Lock()
	nodes := slices.Clone(r.rec.Nodes)
	r.mu.Unlock()
	var out []string
	for _, n := range nodes {
		left := n.Left
		// A node not started has moved nothing; one whose moves the record keeps has nothing
		// more in its journal.
		if n.Phase.Started() && len(left) == 0 {
			if k, ok := r.e.KubeNode(n.Name); ok {
				if j, ok := ops.ReadJournal(k); ok && j.Campaign == r.o.Name {
					left = j.Left
				}
			}
		}
		for _, l := range left {
			if l.ID == id {
				out = append(out, l.To)
			}
		}
	}
	return out
}

// waitOutOfFlight waits while the VM sits on a node of the campaign being worked (its
// evacuation would move it anyway; a return then would race it), or was last moved off one
// (Nova's record: that node's journal may not say so yet). false: ctx ended.
func (r *Campaign) waitOutOfFlight(ctx context.Context, id string) bool {
	return poll.Until(ctx, r.e.PollInterval(), nil, func(ctx context.Context) (bool, string, error) {
		r.mu.Lock()
		var inFlight []string
		for _, n := range r.rec.Nodes {
			if n.Phase.Started() && !n.Phase.Finished() {
				inFlight = append(inFlight, n.Name)
			}
		}
		r.mu.Unlock()
		if len(inFlight) == 0 {
			return true, "", nil // no node is being worked: nothing to race
		}
		busy := false
		if vm, err := r.e.Server(ctx, id); err == nil {
			hosts := r.e.Inventory().HostsOf(inFlight)
			busy = hosts[vm.Host]
			if ms, err := r.e.MigrationsOf(ctx, id); err == nil && len(ms) > 0 {
				busy = busy || hosts[ms[0].SourceCompute]
			}
		}
		return !busy, "", nil
	}) == nil
}
