package sim

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"sort"
	"time"
)

// The Placement API, as Nova's scheduler keeps it: one resource provider per compute node
// (its uuid is the hypervisor's id, its name the hypervisor hostname), inventories of VCPU,
// MEMORY_MB and DISK_GB with Nova's allocation ratios and reserved memory, and allocations
// per consumer. A server's allocation is on its host; while it live-migrates, the migration
// (consumer: the migration's uuid) holds the source's share and the server the
// destination's, as Nova moves them; the end of the migration drops one of the two.

// placementMax is the highest Placement microversion served.
const placementMax = "1.39"

func (s *Server) placementRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"versions": []map[string]any{{"id": "v1.0", "min_version": "1.0",
			"max_version": placementMax, "status": "CURRENT", "links": []map[string]any{{"rel": "self", "href": ""}}}}})
	})
	handle := func(pattern string, f func(c *call) (int, any)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { s.servePlacement(w, r, pattern, f) })
	}
	handle("GET /resource_providers", listProviders)
	handle("GET /resource_providers/{uuid}", showProvider)
	handle("GET /resource_providers/{uuid}/inventories", providerInventories)
	handle("GET /resource_providers/{uuid}/usages", providerUsages)
	handle("GET /resource_providers/{uuid}/allocations", providerAllocations)
	handle("GET /allocations/{consumer}", consumerAllocations)
	return mux
}

func (s *Server) servePlacement(w http.ResponseWriter, r *http.Request, pattern string, f func(c *call) (int, any)) {
	world := s.world
	world.mu.Lock()
	world.stats.Requests++
	world.stats.ByRoute["placement "+pattern]++
	if !s.authorized(r) {
		world.mu.Unlock()
		placementError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
		return
	}
	if rule := s.refusedRule(r, []string{placementRules[pattern]}); rule != "" {
		world.mu.Unlock()
		placementError(w, http.StatusForbidden, "Policy does not allow "+rule+" to be performed.")
		return
	}
	now := world.clock.Now()
	world.advance(now)
	w.Header().Set("OpenStack-API-Version", "placement 1.0")
	status, body := f(&call{r: r, now: now, w: world, s: s})
	world.mu.Unlock()
	if msg, ok := body.(novaFault); ok {
		placementError(w, status, string(msg))
		return
	}
	writeJSON(w, status, body)
}

func placementError(w http.ResponseWriter, code int, detail string) {
	writeJSON(w, code, map[string]any{"errors": []map[string]any{{"status": code, "title": http.StatusText(code), "detail": detail}}})
}

func (c *call) provider() (*Host, bool) {
	id := c.r.PathValue("uuid")
	if h, ok := c.w.byHypervisorID[id]; ok {
		return h, true
	}
	c.w.byHypervisorID = make(map[string]*Host, len(c.w.hosts)) // hosts came since: index again
	for _, h := range c.w.hosts {
		c.w.byHypervisorID[h.HypervisorID] = h
	}
	h, ok := c.w.byHypervisorID[id]
	return h, ok
}

func providerJSON(h *Host, generation int) map[string]any {
	return map[string]any{"uuid": h.HypervisorID, "name": h.Name, "generation": generation,
		"parent_provider_uuid": nil, "root_provider_uuid": h.HypervisorID,
		"links": []map[string]any{{"rel": "self", "href": "/resource_providers/" + h.HypervisorID}}}
}

func listProviders(c *call) (int, any) {
	name := c.r.URL.Query().Get("name")
	out := []map[string]any{}
	for _, hn := range c.w.hostOrder {
		h := c.w.hosts[hn]
		if name != "" && h.Name != name {
			continue
		}
		out = append(out, providerJSON(h, c.w.generation(h)))
	}
	return 200, map[string]any{"resource_providers": out}
}

func showProvider(c *call) (int, any) {
	h, ok := c.provider()
	if !ok {
		return 404, faultf("No resource provider with uuid %s found", c.r.PathValue("uuid"))
	}
	return 200, providerJSON(h, c.w.generation(h))
}

func providerInventories(c *call) (int, any) {
	h, ok := c.provider()
	if !ok {
		return 404, faultf("No resource provider with uuid %s found", c.r.PathValue("uuid"))
	}
	o := c.w.opts
	inv := func(total, reserved int64, ratio float64) map[string]any {
		return map[string]any{
			"total":            total,
			"reserved":         reserved,
			"min_unit":         1,
			"max_unit":         total,
			"step_size":        1,
			"allocation_ratio": ratio,
		}
	}
	return 200, map[string]any{"resource_provider_generation": c.w.generation(h), "inventories": map[string]any{
		"VCPU":      inv(int64(h.VCPUs), 0, o.CPUAllocationRatio),
		"MEMORY_MB": inv(h.MemoryMB, o.ReservedHostMemoryMB, o.RAMAllocationRatio),
		"DISK_GB":   inv(h.DiskGB, 0, 1.0),
	}}
}

func providerUsages(c *call) (int, any) {
	h, ok := c.provider()
	if !ok {
		return 404, faultf("No resource provider with uuid %s found", c.r.PathValue("uuid"))
	}
	usage := map[string]int64{"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}
	for _, a := range c.w.allocationsOn(h.Name) {
		for k, v := range a {
			usage[k] += v
		}
	}
	return 200, map[string]any{"resource_provider_generation": c.w.generation(h), "usages": usage}
}

func providerAllocations(c *call) (int, any) {
	h, ok := c.provider()
	if !ok {
		return 404, faultf("No resource provider with uuid %s found", c.r.PathValue("uuid"))
	}
	out := map[string]any{}
	for consumer, res := range c.w.allocationsOn(h.Name) {
		out[consumer] = map[string]any{"resources": res}
	}
	return 200, map[string]any{"resource_provider_generation": c.w.generation(h), "allocations": out}
}

// consumerAllocations is a consumer's allocations on every provider (none: an empty map, as
// Placement answers for a consumer it does not know).
func consumerAllocations(c *call) (int, any) {
	consumer := c.r.PathValue("consumer")
	out := map[string]any{}
	for _, hn := range c.w.hostOrder {
		h := c.w.hosts[hn]
		if res, ok := c.w.allocationsOn(hn)[consumer]; ok {
			out[h.HypervisorID] = map[string]any{"generation": c.w.generation(h), "resources": res}
		}
	}
	return 200, map[string]any{"allocations": out}
}

// allocationsOn is every consumer's allocation on the host's provider.
func (w *World) allocationsOn(host string) map[string]map[string]int64 {
	return w.allocations().byHost[host]
}

// allocIndex is every provider's allocations, built in one pass over the servers and kept
// until the world changes (a refresh reads every provider: a pass per request would be
// quadratic at thousands of hosts).
type allocIndex struct {
	key    allocKey
	byHost map[string]map[string]map[string]int64
}

type allocKey struct {
	lastEvent  time.Time
	migrations int
	changes    int
	mutations  int
}

func (w *World) allocations() *allocIndex {
	key := allocKey{w.lastEvent, len(w.migrations), w.changes, w.stats.Mutations}
	if w.alloc != nil && w.alloc.key == key {
		return w.alloc
	}
	idx := &allocIndex{key: key, byHost: map[string]map[string]map[string]int64{}}
	add := func(host, consumer string, s *VM) {
		if idx.byHost[host] == nil {
			idx.byHost[host] = map[string]map[string]int64{}
		}
		idx.byHost[host][consumer] = map[string]int64{
			"VCPU":      int64(s.Flavor.VCPUs),
			"MEMORY_MB": s.Flavor.RAMMB,
			"DISK_GB":   s.Flavor.DiskGB,
		}
	}
	// Each server's newest live or cold move that holds allocations, and every evacuation
	// that still does: a server rebuilt twice holds a share on each dead host not yet back
	// (Nova frees a dead host's share when its nova-compute starts again, that host's only),
	// until a live or cold move of it carries all its allocations away (measured on a real
	// Nova: a VM rebuilt twice, its second host back, then moved live).
	holding := map[string]*migration{}
	evacuated := map[string][]*migration{}
	movedOn := map[string]time.Time{} // the server's newest live or cold move begun or done
	for _, m := range w.migrations {
		switch {
		case m.kind == "evacuation":
			if m.holdsAllocations() {
				evacuated[m.server.ID] = append(evacuated[m.server.ID], m)
			}
		case m.holdsAllocations():
			holding[m.server.ID] = m
			movedOn[m.server.ID] = m.created
		case m.status == "completed" || m.status == "confirmed":
			movedOn[m.server.ID] = m.created
		}
	}
	for _, s := range w.servers {
		if m := holding[s.ID]; m != nil {
			add(m.source, m.uuid, s) // the source's share, held by the migration
			add(m.dest, s.ID, s)     // the destination's, held by the server
		} else {
			add(s.Host, s.ID, s)
		}
		for _, m := range evacuated[s.ID] { // the dead host's share, the server's own
			if m.created.Before(movedOn[s.ID]) {
				continue // a later move took it
			}
			add(m.source, s.ID, s)
			if m.status == "pre-migrating" { // its destination's, claimed before the rebuild
				add(m.dest, s.ID, s)
			}
		}
	}
	for host, byConsumer := range w.leaked {
		for consumer, f := range byConsumer {
			add(host, consumer, &VM{Flavor: f})
		}
	}
	w.alloc = idx
	return idx
}

// holdsAllocations reports whether the move holds allocations on both hosts, as Nova's
// (measured on a real Nova): a live migration once its destination is chosen until it
// ends, the source's share under the migration's UUID; a cold one from then until its
// confirm or revert ends (VERIFY_RESIZE included); an evacuation's server on both hosts
// until the dead host's nova-compute starts again and cleans up ("done" → "completed").
func (m *migration) holdsAllocations() bool {
	if m.dest == "" {
		return false
	}
	switch m.kind {
	case "live-migration":
		return m.active()
	case "migration":
		return m.active() || m.status == "finished" || m.status == "confirming" || m.status == "reverting" ||
			(m.status == "confirmed" && !m.freed)
	case "evacuation":
		return m.status == "pre-migrating" || m.status == "done"
	}
	return false
}

// LeakAllocation leaves an allocation on host's provider that no server holds, as a move
// Nova failed to clean up after does (an orphaned allocation, a consumer Nova does not list).
func (w *World) LeakAllocation(host, consumer string, f Flavor) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.leaked == nil {
		w.leaked = map[string]map[string]Flavor{}
	}
	if w.leaked[host] == nil {
		w.leaked[host] = map[string]Flavor{}
	}
	w.leaked[host][consumer] = f
	w.changes++
}

// FreeLeaked takes away an allocation LeakAllocation left (an operator's cleanup).
func (w *World) FreeLeaked(host, consumer string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.leaked[host], consumer)
	w.changes++
}

// providerGen is a provider's generation and the allocations it was last seen with.
type providerGen struct {
	gen int
	sig uint64
}

// generation is the provider's generation as Placement keeps it: an integer that moves on
// whenever its inventories or allocations change, and never goes back (a consumer that
// leaves and returns moves it twice). Computed when asked: a change since the last answer
// moves it on by one.
func (w *World) generation(h *Host) int {
	allocs := w.allocationsOn(h.Name)
	keys := make([]string, 0, len(allocs))
	for k := range allocs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := fnv.New64a()
	fmt.Fprintf(f, "%d/%d/%d;", h.VCPUs, h.MemoryMB, h.DiskGB)
	for _, k := range keys {
		a := allocs[k]
		fmt.Fprintf(f, "%s:%d/%d/%d;", k, a["VCPU"], a["MEMORY_MB"], a["DISK_GB"])
	}
	sig := f.Sum64()
	if w.generations == nil {
		w.generations = map[string]providerGen{}
	}
	g, seen := w.generations[h.Name]
	if !seen {
		g.gen = 1
	} else if g.sig != sig {
		g.gen++
	}
	g.sig = sig
	w.generations[h.Name] = g
	return g.gen
}
