package sim

import "strconv"

// Server groups (os-server-groups) and the scheduler's rules for them and for zones, as
// Nova's ServerGroupAntiAffinityFilter, ServerGroupAffinityFilter and AvailabilityZoneFilter
// apply them to live and cold migrations: a member of a hard anti-affinity group never lands
// on a host that holds another member; a server stays in its zone.

// serverGroup is a Nova server group.
type serverGroup struct {
	ID, Name, Policy string
	Members          []string // server IDs
	ProjectID        string
}

// AddServerGroup creates a server group with those servers (by name) as members.
func (w *World) AddServerGroup(name, policy string, members ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := &serverGroup{ID: w.uuid(), Name: name, Policy: policy, ProjectID: "72fb02d64abf44308848350085dcaae2"}
	for _, m := range members {
		for _, s := range w.servers {
			if s.Name == m {
				g.Members = append(g.Members, s.ID)
			}
		}
	}
	w.groups = append(w.groups, g)
	w.changes++
}

// SetZone puts a host in an availability zone (an aggregate with availability_zone set).
func (w *World) SetZone(host, zone string) {
	w.Update(func(hosts map[string]*Host, _ map[string]*VM) {
		if h := hosts[host]; h != nil {
			h.Zone = zone
		}
	})
}

// allowed reports whether s may go to h: h in s's zone (the zone of the host s is on), and
// no other member of s's hard anti-affinity groups on h (nor, for affinity, a member
// elsewhere).
func (w *World) allowed(s *VM, h *Host) bool {
	if cur := w.hosts[s.Host]; cur != nil && cur.Zone != h.Zone {
		return false
	}
	for _, g := range w.groups {
		if g.Policy != "anti-affinity" && g.Policy != "affinity" {
			continue
		}
		member := false
		for _, id := range g.Members {
			member = member || id == s.ID
		}
		if !member {
			continue
		}
		for _, id := range g.Members {
			o := w.servers[id]
			if o == nil || o == s {
				continue
			}
			if g.Policy == "anti-affinity" && o.Host == h.Name {
				return false
			}
			if g.Policy == "affinity" && o.Host != h.Name {
				return false
			}
		}
	}
	return true
}

func (w *World) groupsOf(s *VM) []any {
	out := []any{}
	for _, g := range w.groups {
		for _, id := range g.Members {
			if id == s.ID {
				out = append(out, g.ID)
			}
		}
	}
	return out
}

// listServerGroups is GET /os-server-groups: the caller's project's groups, every project's
// with all_projects (admin); limit and offset page it.
func listServerGroups(c *call) (int, any) {
	q := c.r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 1000
	}
	out := []map[string]any{}
	for i, g := range c.w.groups {
		if i < offset || len(out) >= limit {
			continue
		}
		members := append([]string{}, g.Members...)
		m := map[string]any{"id": g.ID, "name": g.Name, "members": members, "project_id": g.ProjectID,
			"user_id": "af0b6723cc4a4ab18203d089bc34dd16"}
		if c.mv.atLeast(64) {
			m["policy"], m["rules"] = g.Policy, map[string]any{}
		} else {
			m["policies"], m["metadata"] = []string{g.Policy}, map[string]any{}
		}
		out = append(out, m)
	}
	return 200, map[string]any{"server_groups": out}
}

// zoneOf is the availability zone of the server's host ("nova" when it has none).
func (w *World) zoneOf(s *VM) string {
	if h := w.hosts[s.Host]; h != nil && h.Zone != "" {
		return h.Zone
	}
	return "nova"
}
