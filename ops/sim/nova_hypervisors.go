package sim

import (
	"net/url"
	"sort"
	"strconv"
)

// ---- os-hypervisors ----

// hostIndex is computed once per request: each host's servers (newest first) and usage.
type hostIndex struct {
	servers map[string][]*VM
	usage   map[string]usage
}

func (c *call) index() hostIndex {
	idx := hostIndex{servers: map[string][]*VM{}, usage: c.w.usageAll()}
	for _, s := range c.w.sortedServers() {
		idx.servers[s.Host] = append(idx.servers[s.Host], s)
	}
	return idx
}

func (c *call) hypervisorJSON(h *Host, detail, withServers bool, idx hostIndex) map[string]any {
	var id, svcID any = h.HypervisorID, h.ServiceID
	if !c.mv.atLeast(53) {
		id, svcID = h.index, h.index
	}
	state, status := "up", "enabled"
	if !h.Up || h.ForcedDown {
		state = "down"
	}
	if !h.Enabled {
		status = "disabled"
	}
	out := map[string]any{"hypervisor_hostname": h.Name, "id": id, "state": state, "status": status}
	if withServers {
		list := []map[string]any{}
		for _, s := range idx.servers[h.Name] {
			list = append(list, map[string]any{"name": s.Instance, "uuid": s.ID})
		}
		sort.Slice(list, func(i, j int) bool { return list[i]["name"].(string) < list[j]["name"].(string) })
		if len(list) > 0 || c.mv.atLeast(75) {
			out["servers"] = list
		}
	}
	if !detail {
		return out
	}
	out["host_ip"] = "127.0.0.1"
	out["hypervisor_type"] = "QEMU"
	out["hypervisor_version"] = 8002000
	out["service"] = map[string]any{"disabled_reason": nullIfEmpty(h.DisabledReason), "host": h.Name, "id": svcID}
	if c.mv.atLeast(88) {
		out["uptime"] = nil
		return out
	}
	u := idx.usage[h.Name]
	memUsed := u.ramMB + c.w.opts.ReservedHostMemoryMB
	out["vcpus"] = h.VCPUs
	out["vcpus_used"] = u.vcpus
	out["memory_mb"] = h.MemoryMB
	out["memory_mb_used"] = memUsed
	out["free_ram_mb"] = h.MemoryMB - memUsed
	out["local_gb"] = h.DiskGB
	out["local_gb_used"] = u.diskGB
	out["free_disk_gb"] = h.DiskGB - u.diskGB
	out["disk_available_least"] = h.DiskGB - u.diskGB
	out["running_vms"] = u.servers
	out["current_workload"] = 0
	out["cpu_info"] = map[string]any{"arch": "x86_64", "model": "Cascadelake-Server", "vendor": "Intel",
		"features": []string{"pge", "clflush"}, "topology": map[string]any{"cores": h.VCPUs / 2, "sockets": 2, "threads": 1}}
	return out
}

func listHypervisors(detail bool) route {
	return func(c *call) (int, any) {
		withServers, fault := c.withServers()
		if fault != "" {
			return 400, fault
		}
		hosts := make([]*Host, 0, len(c.w.hosts))
		for _, name := range c.w.hostOrder {
			hosts = append(hosts, c.w.hosts[name])
		}
		sort.Slice(hosts, func(i, j int) bool { return hosts[i].index < hosts[j].index })
		page, next, fault := paginate(c, len(hosts), func(i int) string { return hosts[i].HypervisorID },
			func(i int) string { return strconv.Itoa(hosts[i].index) })
		if fault != "" {
			return 400, fault
		}
		out := []map[string]any{}
		idx := c.index()
		for _, i := range page {
			out = append(out, c.hypervisorJSON(hosts[i], detail, withServers, idx))
		}
		body := map[string]any{"hypervisors": out}
		if next != "" {
			body["hypervisors_links"] = []map[string]any{{"href": next, "rel": "next"}}
		}
		return 200, body
	}
}

// paginate applies limit and marker to n items (ids by uuid from 2.53, else by index) and
// returns the indexes of the page and the next link when the page is full.
func paginate(c *call, n int, uuidOf, indexOf func(int) string) ([]int, string, novaFault) {
	q := c.r.URL.Query()
	limit := 1000 // osapi_max_limit
	if v := q.Get("limit"); v != "" {
		l, err := strconv.Atoi(v)
		if err != nil || l < 0 {
			return nil, "", faultf("Invalid input for query parameters limit. Value: %s. '%s' does not match '^[0-9]*$'", v, v)
		}
		limit = min(l, 1000)
	}
	start := 0
	if m := q.Get("marker"); m != "" {
		found := false
		for i := 0; i < n; i++ {
			if uuidOf(i) == m || indexOf(i) == m {
				start, found = i+1, true
				break
			}
		}
		if !found {
			return nil, "", faultf("marker [%s] not found", m)
		}
	}
	end := min(start+limit, n)
	page := make([]int, 0, end-start)
	for i := start; i < end; i++ {
		page = append(page, i)
	}
	next := ""
	if len(page) == limit && limit > 0 {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("limit", strconv.Itoa(limit))
		nq.Set("marker", uuidOf(page[len(page)-1]))
		next = c.s.URL + "/compute" + c.r.URL.Path + "?" + nq.Encode()
	}
	return page, next, ""
}

// showHypervisor is GET /os-hypervisors/{id}: one hypervisor's detail (with its servers from
// 2.53 when asked), by its UUID from 2.53, by its integer ID below.
func showHypervisor(c *call) (int, any) {
	withServers, fault := c.withServers()
	if fault != "" {
		return 400, fault
	}
	id := c.r.PathValue("id")
	for _, name := range c.w.hostOrder {
		h := c.w.hosts[name]
		if (c.mv.atLeast(53) && h.HypervisorID == id) || (!c.mv.atLeast(53) && strconv.Itoa(h.index) == id) {
			return 200, map[string]any{"hypervisor": c.hypervisorJSON(h, true, withServers, c.hostIndex(h.Name))}
		}
	}
	return 404, faultf("Hypervisor with ID %s could not be found.", id)
}

// hostIndex is the index of one host alone: a show need not walk every host's servers.
func (c *call) hostIndex(host string) hostIndex {
	idx := hostIndex{servers: map[string][]*VM{}, usage: map[string]usage{host: c.w.usage(host)}}
	for _, s := range c.w.sortedServers() {
		if s.Host == host {
			idx.servers[host] = append(idx.servers[host], s)
		}
	}
	return idx
}

// withServers reads the with_servers query parameter as Nova does (2.53 and later only).
func (c *call) withServers() (bool, novaFault) {
	v := c.r.URL.Query().Get("with_servers")
	if v == "" {
		return false, ""
	}
	if !c.mv.atLeast(53) {
		return false, faultf("Query parameter with_servers is not supported before microversion 2.53")
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, faultf("Invalid input for query parameters with_servers. Value: %s. Expected 'true' or 'false'.", v)
	}
	return b, ""
}
