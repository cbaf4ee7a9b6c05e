package model

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// VM groups kept whole (#57): a group is a Nova server group, or the VMs whose metadata name
// one (GroupKey). Its budget is how many of its members may be disrupted at once, by their
// metadata (MaxDisruptedKey: "N", or "N%" of the group rounded up, at least 1): a live
// migration in flight (its pause), a cold move moving, a rebuild. Where members name
// different budgets the smallest holds: no owner is given less than they asked.

const (
	// GroupKey is the Nova metadata key that puts a VM in a group of its owner's naming.
	GroupKey = "drainctl:group"
	// MaxDisruptedKey is the Nova metadata key that sets a group's disruption budget.
	MaxDisruptedKey = "drainctl:max-disrupted"
)

// Source says whose word sets the budget: the operator's ([policy.groups]) or a member's
// metadata ("drainctl:max-disrupted of db-1").
func (b GroupBudget) Source() string {
	if b.From == "[policy.groups]" {
		return b.From
	}
	return MaxDisruptedKey + " of " + b.From
}

// GroupRules are the operator's words on groups: [policy.groups]' budgets by group name, and
// whose owners' metadata is heard at all ([policy.maintenance] honour).
type GroupRules struct {
	Budgets map[string]string
	Honour  Honour
}

// metadataGroups names the groups owners' drainctl:group form, by VM ID: a name is its
// project's, so another tenant's VMs naming the same one form a group of their own, and can
// neither join nor tighten it. A name one project alone uses is said bare ("group db"); one
// several use is said with each project ("group db (project 72fb…)").
func metadataGroups(vms []VM, honour Honour) map[string]string {
	projects := map[string]map[string]bool{}
	for _, vm := range vms {
		if name := strings.TrimSpace(vm.GroupAsked); name != "" && honour.Of(vm) {
			if projects[name] == nil {
				projects[name] = map[string]bool{}
			}
			projects[name][vm.ProjectID] = true
		}
	}
	out := map[string]string{}
	for _, vm := range vms {
		name := strings.TrimSpace(vm.GroupAsked)
		if name == "" || !honour.Of(vm) {
			continue
		}
		out[vm.ID] = "group " + name
		if len(projects[name]) > 1 {
			out[vm.ID] += " (project " + vm.ProjectID + ")"
		}
	}
	return out
}

// bareGroupName is a group's name as [policy.groups] names it.
func bareGroupName(name string) string {
	name = strings.TrimPrefix(strings.TrimPrefix(name, "server group "), "group ")
	if i := strings.LastIndex(name, " (project "); i >= 0 && strings.HasSuffix(name, ")") {
		name = name[:i]
	}
	return name
}

// GroupBudget is one group's disruption budget.
type GroupBudget struct {
	Name    string          // "server group NAME" or "group NAME"
	Members map[string]bool // the members' VM IDs
	Max     int             // how many may be disrupted at once
	From    string          // the member whose metadata sets it
}

// GroupBudgets are the budgets of the groups that vms and the server groups form, by name;
// a group none of whose members names a valid budget, and the operator ([policy.groups])
// none either, has none. An owner's word may only tighten the operator's, and is heard only
// as rules.Honour says; a metadata group is its project's.
func GroupBudgets(vms []VM, groups []ServerGroup, rules GroupRules) map[string]*GroupBudget {
	members := map[string]map[string]bool{}
	add := func(group, id string) {
		if members[group] == nil {
			members[group] = map[string]bool{}
		}
		members[group][id] = true
	}
	for _, g := range groups {
		for _, id := range g.Members {
			add("server group "+g.Name, id)
		}
	}
	for id, group := range metadataGroups(vms, rules.Honour) {
		add(group, id)
	}
	byID := make(map[string]VM, len(vms))
	for _, vm := range vms {
		byID[vm.ID] = vm
	}
	out := map[string]*GroupBudget{}
	for name, ids := range members {
		if n, ok := maxDisrupted(rules.Budgets[bareGroupName(name)], len(ids)); ok {
			out[name] = &GroupBudget{Name: name, Members: ids, Max: n, From: "[policy.groups]"}
		}
		for id := range ids {
			vm, ok := byID[id]
			if !ok || !rules.Honour.Of(vm) {
				continue
			}
			n, ok := maxDisrupted(vm.MaxDisruptedAsked, len(ids))
			if b := out[name]; ok && (b == nil || n < b.Max || (n == b.Max && b.From != "[policy.groups]" && vm.Name < b.From)) {
				out[name] = &GroupBudget{Name: name, Members: ids, Max: n, From: vm.Name}
			}
		}
	}
	return out
}

// ValidBudget says whether raw is a disruption budget: "N" (N ≥ 1) or "P%" (1–100).
func ValidBudget(raw string) bool {
	_, ok := maxDisrupted(raw, 1)
	return ok
}

// maxDisrupted reads a budget: "N" (N ≥ 1) or "P%" (1–100) of members, rounded up.
func maxDisrupted(raw string, members int) (int, bool) {
	raw = strings.TrimSpace(raw)
	if p, ok := strings.CutSuffix(raw, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 {
			return 0, false
		}
		return max(1, (n*members+99)/100), true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// GroupFloor is what a VM group's budget does to a campaign's forecast: its members on the
// nodes the campaign empties go Max at once whatever the nodes' parallelism, so they take at
// least their copy time over Max.
type GroupFloor struct {
	Group   string        `json:"group"`
	Members int           `json:"members"` // on the nodes the campaign empties
	Max     int           `json:"max"`
	Least   time.Duration `json:"least"`
}

// GroupFloors are the groups whose members on the nodes emptied (moving) are more than their
// budget, each with its least time at rateMiBps a move, the longest first.
func GroupFloors(inv Inventory, moving []string, rateMiBps float64, rules GroupRules) []GroupFloor {
	var all []VM
	ram, emptied := map[string]int64{}, map[string]bool{}
	for _, n := range moving {
		emptied[n] = true
	}
	for _, n := range inv.Nodes {
		all = append(all, n.VMs...)
		for _, vm := range n.VMs {
			if emptied[n.Name] {
				ram[vm.ID] = vm.RAMMB
			}
		}
	}
	var out []GroupFloor
	for _, b := range GroupBudgets(all, inv.ServerGroups, rules) {
		f := GroupFloor{Group: b.Name, Max: b.Max}
		var mib int64
		for id := range b.Members {
			if m, ok := ram[id]; ok {
				f.Members++
				mib += m
			}
		}
		if f.Members <= f.Max || rateMiBps <= 0 {
			continue
		}
		f.Least = time.Duration(float64(mib) / rateMiBps / float64(f.Max) * float64(time.Second))
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b GroupFloor) int { return cmp.Or(cmp.Compare(b.Least, a.Least), cmp.Compare(a.Group, b.Group)) })
	return out
}
