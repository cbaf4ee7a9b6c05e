package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/drainctl/drainctl/model"
)

// Bringing VMs home (--return-vms): once a node is back and proven, the VMs its evacuation
// moved away (its journal's Left) move back, each as a one-VM migrate to its home, under the
// same caps, live or cold as its state and its own policy say. The journal is a claim: each
// VM is read again first, and one moved, resized or deleted since stays where it is, said so.

// ReturnVM brings one VM that left home back to node's host, and says what became of it.
// putOn are the hosts the caller itself put it on since (a campaign's later nodes may have
// moved it again); found elsewhere, someone else moved it and it stays.
func (e *Engine) ReturnVM(
	ctx context.Context,
	node string,
	l model.VMLeft,
	putOn []string,
	ro RunOptions,
	emit func(Event),
) model.VMReturn {
	out := model.VMReturn{ID: l.ID, Name: l.Name}
	not := func(format string, a ...any) model.VMReturn {
		out.Why = fmt.Sprintf(format, a...)
		return out
	}
	home := e.inv.HostOf(node)
	if home == "" {
		return not("node %s has no compute host", node)
	}
	// Home takes VMs again only while its service is enabled and up, read now (someone may
	// have disabled it since it returned).
	svc, ok, err := e.serviceOn(ctx, home)
	switch {
	case err != nil:
		return not("reading nova-compute on %s: %v", home, err)
	case !ok:
		return not("%s has no nova-compute service", home)
	case !svc.Enabled:
		return not("nova-compute on %s is disabled again (%q)", home, svc.DisabledReason)
	case !svc.Up:
		return not("nova-compute on %s is down", home)
	}
	vm, err := e.nova.Server(ctx, l.ID)
	switch {
	case statusOf(err) == 404:
		return not("deleted since it left")
	case err != nil:
		return not("reading it: %v", err)
	case vm.Host == home:
		out.Home = true // someone brought it back already
		return out
	case vm.Host != l.To && !slices.Contains(putOn, vm.Host):
		return not("moved since it left (sent to %s, now on %s): left where its owner or a colleague put it", l.To, vm.Host)
	case l.Flavor != "" && vm.Flavor != l.Flavor:
		return not("resized since it left (%s, was %s)", vm.Flavor, l.Flavor)
	case vm.Phase == model.PhaseBroken:
		return not("in ERROR since it left")
	case vm.Busy():
		return not("busy (task %s)", vm.TaskState)
	}
	// The record is a claim (a node's annotation, a campaign's ConfigMap: anyone who may write
	// them could name any VM). Nova's own record must show the VM's last move ending where it
	// is, from home or from a host the caller sent it on to.
	// Its newest completed move must be the one the record names (or the caller's own later
	// move from a host it sent it on to): any move from home, by anyone, at any time, is no proof.
	newest, ok := e.newestMove(ctx, l.ID)
	ours := ok && ((l.MigrationID != 0 && newest.ID == l.MigrationID) || (l.MigrationUUID != "" && newest.UUID == l.MigrationUUID))
	if !ok || newest.DestCompute != vm.Host || (!ours && !slices.Contains(putOn, newest.SourceCompute)) {
		return not(
			"Nova's newest completed move of it (%s) is not the move the record names (%s): the record is no proof, it stays",
			moveText(newest, ok),
			leftText(l),
		)
	}
	// The node it is on now may be someone else's to work (a colleague emptying it): its lease
	// says so, read now; a return would race their move.
	if on := e.inv.NodeOf(vm.Host); on != "" {
		if holder, _, err := e.kube.LeaseHolder(ctx, on); err == nil && holder != "" && holder != e.o.Holder {
			return not("its node %s is being worked by %s: left there", on, holder)
		}
	}
	// Planned on a fresh read: the view's cache (FromCache) was read before the step that
	// brought home back enabled its nova-compute, and would judge home disabled. A campaign's
	// (ByHost) reads home afresh on its last whole read, with the VM as just read.
	ro.To, ro.Returning, ro.Seen, ro.Leaving, ro.Later, ro.FromCache = node, true, &vm, nil, nil, false
	p, err := e.Plan(ctx, model.OpMigrate, l.ID, ro)
	if err != nil {
		return not("planning its move: %v", err)
	}
	if b := p.Blockers(); len(b) > 0 {
		texts := make([]string, len(b))
		for i, r := range b {
			texts[i] = r.Text()
		}
		return not("%s", strings.Join(texts, "; "))
	}
	if _, err := e.Run(ctx, p, ro, emit); err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) && len(refused.Reasons) > 0 {
			return not("%s", refused.Reasons[0].Text())
		}
		return not("its move failed: %v", err)
	}
	if vm, err := e.nova.Server(ctx, l.ID); err != nil || vm.Host != home {
		return not("its move ended, but Nova does not show it on %s", home)
	}
	out.Home = true
	return out
}

// lastMove is the source of the VM's newest completed move, and whether it ended on host.
func (e *Engine) newestMove(ctx context.Context, id string) (model.Migration, bool) {
	ms, err := e.nova.MigrationsOf(ctx, id)
	if err != nil {
		return model.Migration{}, false
	}
	for _, m := range ms { // newest first
		if m.Status == model.MigrationCompleted {
			return m, true
		}
	}
	return model.Migration{}, false
}

// moveText and leftText say which move Nova shows and which one a record names.
func moveText(m model.Migration, ok bool) string {
	if !ok {
		return "none"
	}
	return fmt.Sprintf("#%d %s → %s", m.ID, m.SourceCompute, m.DestCompute)
}

func leftText(l model.VMLeft) string {
	switch {
	case l.MigrationID != 0:
		return fmt.Sprintf("#%d", l.MigrationID)
	case l.MigrationUUID != "":
		return l.MigrationUUID
	}
	return "none: a record that names no migration"
}

// returnVMs is uncordon's step with --return-vms: the VMs its journal says left, brought home
// one after the other (the return never outruns the caps an evacuation keeps).
func (r *runner) returnVMs(ctx context.Context) (string, error) {
	e, p := r.e, r.plan
	k, _ := e.kube.Node(p.Node)
	j, ok := ReadJournal(k)
	if !ok || len(j.Left) == 0 {
		return "no VM left this node (by its journal)", nil
	}
	var home, not []string
	for _, l := range j.Left {
		if ctx.Err() != nil {
			return "", &Interrupted{Node: p.Node, Phase: "return-vms", Cause: context.Cause(ctx)}
		}
		res := e.ReturnVM(ctx, p.Node, l, nil, r.ro, r.emit)
		r.report.Returns = append(r.report.Returns, res)
		if res.Home {
			home = append(home, l.Name)
			r.nodeChanged("VM " + l.Name + " home again")
		} else {
			not = append(not, l.Name+": "+res.Why)
			r.nodeChanged("VM " + l.Name + " not brought home: " + res.Why)
		}
	}
	s := fmt.Sprintf("%d of %d VM(s) home again", len(home), len(j.Left))
	if len(not) > 0 {
		s += "; not brought home: " + strings.Join(not, "; ")
	}
	return s, nil
}
