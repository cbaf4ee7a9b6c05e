package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/drainctl/drainctl/model"
)

// A machine's identity (its system UUID) is pinned the first time drainctl sees its Node,
// in a record no node can write (model.MachinePin): the controller pins every Ready node on
// its passes, a fence pins the node it fences when none is pinned yet. A fence is keyed only
// on what the pin allows.

func machineKey(node string) string { return "machine-" + node }

// machinePin is the node's pin (nil: none, or one that cannot be read).
func (e *Engine) machinePin(ctx context.Context, node string) (*model.MachinePin, error) {
	data, found, err := e.kube.Record(ctx, machineKey(node))
	if err != nil || !found {
		return nil, err
	}
	var p model.MachinePin
	if json.Unmarshal(data, &p) != nil {
		return nil, nil
	}
	return &p, nil
}

// pinMachine writes k's pin: its system UUID, when it is one.
func (e *Engine) pinMachine(ctx context.Context, k model.KubeNode) error {
	if !model.IsUUID(k.SystemUUID) {
		return nil
	}
	data, _ := json.Marshal(model.MachinePin{Node: k.Name, NodeUID: k.UID, SystemUUID: k.SystemUUID, At: e.now(), By: e.o.Holder})
	return e.kube.SaveRecord(ctx, machineKey(k.Name), data)
}

// PinMachines pins the machines of Ready nodes not pinned yet (or re-created since), at most
// limit of them a call: the controller calls it every pass, so that a fleet is pinned over a
// few passes, not in one burst of writes. The pins are read once a process.
func (e *Engine) PinMachines(ctx context.Context, limit int) error {
	e.mu.Lock()
	pinned := e.pinned
	e.mu.Unlock()
	if pinned == nil {
		records, err := e.kube.Records(ctx, "machine")
		if err != nil {
			return err
		}
		pinned = make(map[string]string, len(records))
		for name, data := range records {
			var p model.MachinePin
			if json.Unmarshal(data, &p) == nil {
				pinned[strings.TrimPrefix(name, "machine-")] = p.NodeUID
			}
		}
	}
	for _, k := range e.kube.Nodes() {
		if limit <= 0 {
			break
		}
		if !k.Ready || pinned[k.Name] == k.UID || !model.IsUUID(k.SystemUUID) {
			continue
		}
		if old, err := e.machinePin(ctx, k.Name); err == nil && old != nil && old.NodeUID == k.UID {
			pinned[k.Name] = k.UID // pinned by another process since this one listed
			continue
		}
		if err := e.pinMachine(ctx, k); err != nil {
			return fmt.Errorf("pinning node %s's machine: %w", k.Name, err)
		}
		pinned[k.Name] = k.UID
		limit--
	}
	e.mu.Lock()
	e.pinned = pinned
	e.mu.Unlock()
	return nil
}

// fenceIdentity is the machine identity a fence of k may be keyed on (model.IdentityFor), the
// pin written first when there is none for this Node object. A command that reads a variable
// left empty is refused: keyed on nothing, it could act on any machine.
func (e *Engine) fenceIdentity(ctx context.Context, k model.KubeNode, cmds ...string) (model.MachineIdentity, error) {
	pin, err := e.machinePin(ctx, k.Name)
	if err != nil {
		return model.MachineIdentity{}, err
	}
	if pin == nil || pin.NodeUID != k.UID {
		if err := e.pinMachine(ctx, k); err != nil {
			return model.MachineIdentity{}, fmt.Errorf("pinning node %s's machine: %w", k.Name, err)
		}
	}
	id, err := model.IdentityFor(k, pin)
	if err != nil {
		return id, err
	}
	for _, cmd := range cmds {
		for v, val := range map[string]string{"DRAINCTL_SYSTEM_UUID": id.SystemUUID, "DRAINCTL_BOOT_ID": id.BootID} {
			if val == "" && strings.Contains(cmd, v) {
				why := "it reports none"
				if len(id.Notes) > 0 {
					why = strings.Join(id.Notes, "; ")
				}
				return id, fmt.Errorf("the fence would read %s, but node %s gives no UUID for it (%s): not run", v, k.Name, why)
			}
		}
	}
	return id, nil
}
