package ops

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	"github.com/drainctl/drainctl/model"
)

// When each VM's owner was first told is drainctl's own record, on the VM's node
// (OwnersToldAnnotation), where no tenant writes: the notice in the server's metadata is the
// owner's to read, and the owner may edit or delete it. The lead is counted from the record,
// so a notice deleted, garbled or dated ahead neither restarts nor stretches it; a notice
// removed before the act is written again, for the owner's information only.

// OwnersToldAnnotation is the node annotation that keeps, by VM ID, when drainctl first told
// the owner of a VM on the node (Unix seconds).
const OwnersToldAnnotation = "drainctl.io/owners-told"

// toldRecord reads the node's record of owners told, entries past noticeStale dropped: an
// owner told a day ago of an act that never came is told again.
func toldRecord(k model.KubeNode, now time.Time) map[string]time.Time {
	var raw map[string]int64
	if json.Unmarshal([]byte(k.Annotations[OwnersToldAnnotation]), &raw) != nil {
		return map[string]time.Time{}
	}
	out := make(map[string]time.Time, len(raw))
	for id, s := range raw {
		if t := time.Unix(s, 0); !t.After(now) && now.Sub(t) < model.NoticeStale {
			out[id] = t
		}
	}
	return out
}

// firstTold is when the VM's owner was first told, as the node's record says (the process's
// own writes first: the cache may not show them yet).
func (e *Engine) firstTold(node, vmID string) (time.Time, bool) {
	e.mu.Lock()
	t, ok := e.told[node][vmID]
	e.mu.Unlock()
	if ok {
		return t, true
	}
	k, found := e.kube.Node(node)
	if !found {
		return time.Time{}, false
	}
	t, ok = toldRecord(k, e.now())[vmID]
	return t, ok
}

// noteTold records on the node when the owners of vms were first told (at), and forgets the
// VMs in gone (their acts ended): one write of the node's annotation.
func (e *Engine) noteTold(ctx context.Context, node string, at map[string]time.Time, gone ...string) error {
	k, found, err := e.kube.NodeFresh(ctx, node)
	if err != nil || !found {
		return err
	}
	rec := toldRecord(k, e.now())
	e.mu.Lock()
	if e.told[node] == nil {
		e.told[node] = map[string]time.Time{}
	}
	maps.Copy(rec, e.told[node])
	maps.Copy(rec, at)
	for _, id := range gone {
		delete(rec, id)
	}
	e.told[node] = maps.Clone(rec)
	e.mu.Unlock()
	raw := make(map[string]int64, len(rec))
	for id, t := range rec {
		raw[id] = t.Unix()
	}
	value := ""
	if len(raw) > 0 {
		data, _ := json.Marshal(raw)
		value = string(data)
	} else if k.Annotations[OwnersToldAnnotation] == "" {
		return nil
	}
	return e.kube.SetAnnotation(ctx, node, OwnersToldAnnotation, value)
}
