package model

import (
	"fmt"
	"strconv"
	"strings"
)

// A VM's recovery priority: when its host dies and the other hosts cannot take every VM, the
// higher are rebuilt first and the lowest left (named in the ledger), never a random one.
// Its owner sets it in the server's Nova metadata (RecoveryPriorityKey, 0–9); else the
// operator's [recover.priority] says, by flavor (name) or project (ID); else its default.

// RecoveryPriorityKey is the Nova metadata key a VM's owner sets its recovery priority with.
const RecoveryPriorityKey = "drainctl:recovery-priority"

// The priorities a VM may have, and the default when nothing names one.
const (
	PriorityLowest  = 0
	PriorityHighest = 9
	PriorityDefault = 5
)

// PriorityConfig is [recover.priority]: the operator's priorities for the VMs whose metadata
// names none (or one that is no priority).
type PriorityConfig struct {
	Default  *int           `toml:"default"`
	Flavors  map[string]int `toml:"flavors"`
	Projects map[string]int `toml:"projects"`
	// OwnerMax bounds what an owner's metadata may ask (nil: 9): an owner's 9 outranks no VM
	// the operator put above OwnerMax.
	OwnerMax *int `toml:"owner_max"`
}

// Of is the VM's recovery priority and where it comes from; bad says why its metadata was
// not taken ("": it was, or it has none). The owner's word is heard only as honour says, and
// never above OwnerMax.
func (c PriorityConfig) Of(vm VM, honour Honour) (priority int, from, bad string) {
	if raw := vm.PriorityAsked; raw != "" {
		p, err := strconv.Atoi(strings.TrimSpace(raw))
		switch {
		case !honour.Of(vm):
			bad = fmt.Sprintf("its metadata %s = %s is not honoured for its project ([policy.maintenance] honour): the operator's "+
				"is taken", RecoveryPriorityKey, Quoted(raw))
		case err != nil || p < PriorityLowest || p > PriorityHighest:
			bad = fmt.Sprintf("its metadata %s = %s is no priority (0–9): the operator's is taken", RecoveryPriorityKey, Quoted(raw))
		case c.OwnerMax != nil && p > *c.OwnerMax:
			return *c.OwnerMax, fmt.Sprintf("its metadata %s = %d, bounded by recover.priority.owner_max", RecoveryPriorityKey, p), ""
		default:
			return p, "its metadata " + RecoveryPriorityKey, ""
		}
	}
	for _, by := range []struct {
		table map[string]int
		key   string
		from  string
	}{{c.Flavors, vm.Flavor, "recover.priority.flavors"}, {c.Projects, vm.ProjectID, "recover.priority.projects"}} {
		if p, ok := by.table[by.key]; ok && by.key != "" {
			return p, by.from, bad
		}
	}
	if c.Default != nil {
		return *c.Default, "recover.priority.default", bad
	}
	return PriorityDefault, "the default", bad
}

// validate refuses a priority outside 0–9, naming where it is set.
func (c PriorityConfig) validate() error {
	bad := func(key string, p int) error {
		return &FieldError{key, fmt.Sprintf("must be 0 to 9, got %d", p), "9 is rebuilt first; the default is 5"}
	}
	if c.Default != nil && (*c.Default < PriorityLowest || *c.Default > PriorityHighest) {
		return bad("recover.priority.default", *c.Default)
	}
	if c.OwnerMax != nil && (*c.OwnerMax < PriorityLowest || *c.OwnerMax > PriorityHighest) {
		return bad("recover.priority.owner_max", *c.OwnerMax)
	}
	for _, t := range []struct {
		key   string
		table map[string]int
	}{{"recover.priority.flavors", c.Flavors}, {"recover.priority.projects", c.Projects}} {
		for _, p := range t.table {
			if p < PriorityLowest || p > PriorityHighest {
				return bad(t.key, p)
			}
		}
	}
	return nil
}
