package model

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// MachinePin is the machine identity drainctl saw first for a Node object: the system UUID
// its kubelet reported then. A Node's status is its kubelet's to write, so the UUID it shows
// at a fence is the node's own word; the pin is drainctl's, in a record no node can write,
// and a fence is refused when the Node, the same object, now names another machine.
type MachinePin struct {
	Node       string    `json:"node"`
	NodeUID    string    `json:"nodeUID"`
	SystemUUID string    `json:"systemUUID"`
	At         time.Time `json:"at"`
	By         string    `json:"by"`
}

var uuidForm = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsUUID says whether s is a UUID in its canonical text form (a system UUID, a boot ID):
// anything else is no machine's identity and never reaches a command.
func IsUUID(s string) bool { return uuidForm.MatchString(s) }

// MachineIdentity is what a fence or fence check command is told of the machine: its system
// UUID and boot ID, each only when it is a UUID; Notes say what was left out and why.
type MachineIdentity struct {
	SystemUUID, BootID string
	Notes              []string
}

// IdentityFor is the machine identity a fence may act on for k, given drainctl's pin (nil:
// none yet). A pin of the same Node object that names another system UUID refuses the fence:
// the node rewrote its machine's identity, and a fence keyed on it could power off another.
func IdentityFor(k KubeNode, pin *MachinePin) (MachineIdentity, error) {
	var id MachineIdentity
	if pin != nil && pin.NodeUID == k.UID && !strings.EqualFold(pin.SystemUUID, k.SystemUUID) {
		return id, fmt.Errorf("node %s now reports system UUID %s, but drainctl pinned %s for this Node object (%s by %s): "+
			"its kubelet rewrote the machine's identity, so no fence is keyed on it; check the machine, then fence it yourself "+
			"and recover with --confirm-fenced", k.Name, Quoted(k.SystemUUID), pin.SystemUUID, stamp(pin.At), pin.By)
	}
	if IsUUID(k.SystemUUID) {
		id.SystemUUID = k.SystemUUID
	} else if k.SystemUUID != "" {
		id.Notes = append(id.Notes, "DRAINCTL_SYSTEM_UUID left empty: the node reports "+Quoted(k.SystemUUID)+", no UUID")
	}
	if IsUUID(k.BootID) {
		id.BootID = k.BootID
	} else if k.BootID != "" {
		id.Notes = append(id.Notes, "DRAINCTL_BOOT_ID left empty: the node reports "+Quoted(k.BootID)+", no UUID")
	}
	return id, nil
}

// Quoted is untrusted text in a message: quoted, escaped and cut at 80 bytes.
func Quoted(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}
