package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/drainctl/drainctl/model"
)

// A recovery's fence is proven once per outage and kept as a record in drainctl's namespace
// (model.FenceRecord): a node cannot write it, as it can its own annotations, and it proves
// only the NotReady episode it was made in. The journal mirrors it for kubectl describe;
// nothing trusts the mirror.

func fenceKey(node string) string { return "fence-" + node }

// provenFence is the node's fence record if it proves the outage the node is in now; why
// says why a record found does not. A person's recovery takes only a record its own
// Kubernetes user wrote: one the controller (or a colleague) wrote is a claim the person did
// not make, and the controller may write records, so it could otherwise steer a person's
// recovery past its fence.
func (e *Engine) provenFence(ctx context.Context, k model.KubeNode, ro RunOptions) (rec *model.FenceRecord, why string, err error) {
	data, writer, found, err := e.kube.RecordWriter(ctx, fenceKey(k.Name))
	if err != nil || !found {
		return nil, "", err
	}
	var f model.FenceRecord
	if json.Unmarshal(data, &f) != nil {
		return nil, "its fence record is unreadable", nil
	}
	if ok, why := f.Proves(k); !ok {
		return nil, "its fence record proves nothing now: " + why, nil
	}
	if me := e.kube.User(ctx); !ro.Automatic && (writer == "" || writer != me) {
		return nil, fmt.Sprintf("its fence record was written by %s, not by you (%s): %s; it proves nothing of yours",
			orUnnamed(writer), orUnnamed(me), f.Text()), nil
	}
	// The same Kubernetes user may run both (a person's terminal beside the controller it runs,
	// the demo): the record's maker says whose fence it is.
	if by := HolderRole(f.By); !ro.Automatic && strings.HasPrefix(by, "drainctl-") && by != HolderRole(e.o.Holder) {
		return nil, fmt.Sprintf("its fence record was made by %s, not by a person's recovery: %s; it proves nothing of yours",
			HolderRole(f.By), f.Text()), nil
	}
	return &f, "", nil
}

// HolderRole is the role a holder runs as: "drainctl" for a person's drainctl,
// "drainctl-controller" for the controller's (an in-cluster role's begins "drainctl-").
func HolderRole(holder string) string {
	role, _, _ := strings.Cut(holder, "/")
	return role
}

// orUnnamed is a Kubernetes user as a reason says it.
func orUnnamed(user string) string {
	if user == "" {
		return "an unnamed Kubernetes user"
	}
	return strconv.Quote(user)
}

// saveFence records the proof for the outage the node is in now.
func (e *Engine) saveFence(ctx context.Context, f model.FenceRecord) error {
	data, _ := json.Marshal(f)
	return e.kube.SaveRecord(ctx, fenceKey(f.Node), data)
}

// ForgetFences deletes the fence records of nodes seen Ready (a node whose journal mirrors a
// fence): once a machine has run again, the next outage needs a proof of its own. The
// record could not prove a later outage anyway (it names its episode); this keeps none
// around. The daemon, the controller and every plan call it; each node's return is
// forgotten once per process.
func (e *Engine) ForgetFences(ctx context.Context) {
	for _, k := range e.kube.Nodes() {
		if !k.Ready {
			continue
		}
		j, ok := ReadJournal(k)
		if !ok || j.Fenced == "" {
			continue
		}
		e.mu.Lock()
		done := e.forgotten[k.Name].Equal(k.ReadySince)
		e.mu.Unlock()
		if done || e.fencedWhileReady(ctx, k) {
			continue
		}
		// Tried once per return: an identity not allowed to delete records (the per-node
		// daemon) does not ask again on every pass. The record proves nothing now anyway.
		_ = e.kube.DeleteRecord(ctx, fenceKey(k.Name))
		e.mu.Lock()
		e.forgotten[k.Name] = k.ReadySince
		e.mu.Unlock()
	}
}

// fenceHolds is checked before each destructive step of a recovery (force-down, the taint,
// each rebuild, a force-delete): the machine must still be in the outage its fence proved,
// as the API server shows the node now (not the cache, which may lag a node's return).
// Life since the fence (the kubelet renewed, the node turned Ready, the machine booted) stops
// the run (ErrHostAlive), as does a new outage or a re-created Node (ErrFenceStale).
func (r *runner) fenceHolds(ctx context.Context) error {
	k, ok, err := r.e.kube.NodeFresh(ctx, r.plan.Node) // the API server's: a node back a moment ago stops the step
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("node %s is gone", r.plan.Node)
	}
	if r.recovery.proof == nil { // the fence step was done by an earlier run of this outage
		rec, why, err := r.e.provenFence(ctx, k, r.ro)
		if err != nil {
			return err
		}
		if rec == nil {
			if k.Ready {
				return ErrHostAlive
			}
			if why == "" {
				why = "no fence record"
			}
			return &RefusedError{Reasons: []model.Reason{{Code: model.NotFenced, Severity: model.Blocks, Object: r.plan.Node,
				Override: model.OverrideFenced, Message: "the machine is not proven off: " + why}}}
		}
		r.recovery.proof = rec
	}
	if ok, why := r.recovery.proof.Proves(k); !ok {
		if r.recovery.proof.Alive(k) {
			return fmt.Errorf("%w (%s)", ErrHostAlive, why)
		}
		return fmt.Errorf("%w (%s)", ErrFenceStale, why)
	}
	return nil
}

// stopUnlessFenced stops the run (as hostAlive did) when the fence no longer holds; true
// when it stopped.
func (r *runner) stopUnlessFenced(ctx context.Context) bool {
	err := r.fenceHolds(ctx)
	if err == nil {
		return false
	}
	r.lease.stop(err)
	return true
}

// fencedWhileReady reports whether the node's fence was made in the Ready episode the node is
// still in: automatic recovery fences a machine whose kubelet stopped before the node lifecycle
// controller marks it NotReady, and that fence proves this outage still (it is not a return).
func (e *Engine) fencedWhileReady(ctx context.Context, k model.KubeNode) bool {
	data, found, err := e.kube.Record(ctx, fenceKey(k.Name))
	var f model.FenceRecord
	if err != nil || !found || json.Unmarshal(data, &f) != nil {
		return false
	}
	return !f.Heartbeat.IsZero() && !k.ReadySince.After(f.At)
}
