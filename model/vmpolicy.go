package model

import (
	"fmt"
	"strconv"
	"strings"
)

// A VM's own maintenance policy: how it asks to be treated when its host is emptied. Its
// owner sets it in the server's Nova metadata (VMPolicyKey); else the operator's [policy.
// maintenance] says, by flavor, image or project; else it is migrate.

// VMPolicy is one of the policies.
type VMPolicy string

// The policies.
const (
	PolicyMigrate        VMPolicy = "migrate"          // live when running, cold when stopped (the default)
	PolicyStopStart      VMPolicy = "stop-start"       // stopped, moved cold, started: a clean restart rather than a long live migration
	PolicyRestartInPlace VMPolicy = "restart-in-place" // stopped before the node's step, started on the same host once it returns
	PolicyStays          VMPolicy = "stays"            // its owner asks that it not be moved
)

// VMPolicies are the policies, in the order they are listed to a person.
var VMPolicies = []VMPolicy{PolicyMigrate, PolicyStopStart, PolicyRestartInPlace, PolicyStays}

// VMPolicyKey is the Nova metadata key a VM's owner sets its policy with.
const VMPolicyKey = "drainctl:maintenance"

// Known reports whether p is one of the policies.
func (p VMPolicy) Known() bool {
	for _, k := range VMPolicies {
		if p == k {
			return true
		}
	}
	return false
}

// VMPolicyNames lists the policies for a message: "migrate, stop-start, …".
func VMPolicyNames() string {
	names := make([]string, len(VMPolicies))
	for i, p := range VMPolicies {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// MaintenanceConfig is [policy.maintenance]: the operator's policies for the VMs whose
// metadata names none, by flavor (name), image (ID) or project (ID), in that order, else Default.
type MaintenanceConfig struct {
	Default  VMPolicy            `toml:"default"`
	Flavors  map[string]VMPolicy `toml:"flavors"`
	Images   map[string]VMPolicy `toml:"images"`
	Projects map[string]VMPolicy `toml:"projects"`
	// Honour is whose metadata drainctl takes: "all" (the default), "none", or a list of
	// project IDs. A tenant's word must not hold the operator's fleet.
	Honour Honour `toml:"honour"`
	// StaysFor bounds an owner's stays: it counts for this many days after the owner last
	// changed the server (setting the metadata is a change); after that the VM is treated by
	// the operator's policy, noted. 0: no bound.
	StaysFor int `toml:"stays_for"`
}

// Honour is [policy.maintenance] honour: every project's metadata (All), none, or the
// listed projects'.
type Honour struct {
	None     bool
	Projects []string
}

// UnmarshalTOML reads "all", "none" or a list of project IDs.
func (h *Honour) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		switch v {
		case "all":
			*h = Honour{}
			return nil
		case "none":
			*h = Honour{None: true}
			return nil
		}
		return fmt.Errorf(`must be "all", "none" or a list of project IDs, got %q`, v)
	case []any:
		h.Projects = nil
		for _, p := range v {
			s, ok := p.(string)
			if !ok || s == "" {
				return fmt.Errorf("a list of project IDs holds %v", p)
			}
			h.Projects = append(h.Projects, s)
		}
		if len(h.Projects) == 0 {
			h.None = true // an empty list honours no one
		}
		return nil
	}
	return fmt.Errorf(`must be "all", "none" or a list of project IDs, got %v`, v)
}

// Of says whether the VM's owner's metadata is taken.
func (h Honour) Of(vm VM) bool {
	switch {
	case h.None:
		return false
	case h.Projects == nil:
		return true
	}
	for _, p := range h.Projects {
		if p == vm.ProjectID {
			return true
		}
	}
	return false
}

// Of is the operator's policy for vm and where it comes from ("policy.maintenance.flavors" …;
// "" with PolicyMigrate when nothing names one).
func (c MaintenanceConfig) Of(vm VM) (VMPolicy, string) {
	for _, by := range []struct {
		table map[string]VMPolicy
		key   string
		from  string
	}{{c.Flavors, vm.Flavor, "policy.maintenance.flavors"}, {c.Images, vm.Image, "policy.maintenance.images"}, {c.Projects,
		vm.ProjectID, "policy.maintenance.projects"}} {
		if p, ok := by.table[by.key]; ok && by.key != "" {
			return p, by.from
		}
	}
	if c.Default != "" {
		return c.Default, "policy.maintenance.default"
	}
	return PolicyMigrate, ""
}

// validate refuses a policy that is none of the policies, naming where it is set.
func (c MaintenanceConfig) validate() error {
	bad := func(key string, p VMPolicy) error {
		return &FieldError{key, "unknown policy " + strconv.Quote(string(p)), "use one of " + VMPolicyNames()}
	}
	if c.Default != "" && !c.Default.Known() {
		return bad("policy.maintenance.default", c.Default)
	}
	if c.StaysFor < 0 || c.StaysFor > 3650 {
		return &FieldError{"policy.maintenance.stays_for", fmt.Sprintf("is %d days", c.StaysFor), "give 0 (no bound) to 3650 days"}
	}
	for _, t := range []struct {
		key   string
		table map[string]VMPolicy
	}{{"policy.maintenance.flavors", c.Flavors}, {"policy.maintenance.images", c.Images}, {"policy.maintenance.projects", c.Projects}} {
		for name, p := range t.table {
			if !p.Known() {
				return &FieldError{
					t.key,
					"unknown policy " + strconv.Quote(string(p)) + " for " + strconv.Quote(name),
					"use one of " + VMPolicyNames(),
				}
			}
		}
	}
	return nil
}
