package sim

import (
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"time"
)

func novaTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000")
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ---- os-services ----

func (c *call) serviceJSON(h *Host) map[string]any {
	var id any = h.ServiceID
	if !c.mv.atLeast(53) {
		id = h.index
	}
	state := "up"
	if !h.Up || h.ForcedDown {
		state = "down"
	}
	status := "enabled"
	if !h.Enabled {
		status = "disabled"
	}
	return map[string]any{"binary": "nova-compute", "disabled_reason": nullIfEmpty(h.DisabledReason),
		"forced_down": h.ForcedDown, "host": h.Name, "id": id, "state": state, "status": status,
		"updated_at": novaTime(h.updated), "zone": h.Zone}
}

func listServices(c *call) (int, any) {
	q := c.r.URL.Query()
	binary, host := q.Get("binary"), q.Get("host")
	out := []map[string]any{}
	if (binary == "" || binary == "nova-scheduler" || binary == "nova-conductor") && (host == "" || host == "controller") {
		for i, b := range []string{"nova-scheduler", "nova-conductor"} {
			if binary != "" && binary != b {
				continue
			}
			var id any = []string{"4dbe9d1b-923c-4253-86bb-923870e3bbaf", "1fa93eac-c14b-4574-a84f-e03c81e8d429"}[i]
			if !c.mv.atLeast(53) {
				id = i + 1
			}
			out = append(out, map[string]any{"binary": b, "disabled_reason": nil, "forced_down": false, "host": "controller",
				"id": id, "state": "up", "status": "enabled", "updated_at": novaTime(c.now), "zone": "internal"})
		}
	}
	if binary == "" || binary == "nova-compute" {
		for _, name := range c.w.hostOrder {
			if host == "" || host == name {
				out = append(out, c.serviceJSON(c.w.hosts[name]))
			}
		}
	}
	return 200, map[string]any{"services": out}
}

func updateService(c *call) (int, any) {
	if !c.mv.atLeast(53) {
		return 404, faultf("Not found") // below 2.53 the path is /os-services/{action}
	}
	var h *Host
	for _, x := range c.w.hosts {
		if x.ServiceID == c.r.PathValue("id") {
			h = x
		}
	}
	if h == nil {
		return 404, faultf("Service %s could not be found.", c.r.PathValue("id"))
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(c.r.Body).Decode(&body); err != nil {
		return 400, faultf("Malformed request body")
	}
	for k := range body {
		if k != "status" && k != "disabled_reason" && k != "forced_down" {
			return 400, faultf("Invalid input for field/attribute %s. Additional properties are not allowed ('%s' was unexpected)", k, k)
		}
	}
	var status, reason string
	json.Unmarshal(body["status"], &status)          //nolint:errcheck // checked below
	json.Unmarshal(body["disabled_reason"], &reason) //nolint:errcheck
	if _, ok := body["disabled_reason"]; ok && status != "disabled" {
		return 400, faultf("Specifying a disabled reason is not supported unless disabling the service.")
	}
	switch status {
	case "enabled":
		h.Enabled, h.DisabledReason = true, ""
	case "disabled":
		h.Enabled, h.DisabledReason = false, reason
	case "":
		if _, ok := body["forced_down"]; !ok {
			return 400, faultf("No updates were requested. Fields 'status' or 'forced_down' should be specified.")
		}
	default:
		return 400, faultf("Invalid input for field/attribute status. Value: %s. '%s' is not one of ['enabled', 'disabled']", status, status)
	}
	if raw, ok := body["forced_down"]; ok {
		var fd bool
		if json.Unmarshal(raw, &fd) != nil {
			return 400, faultf("Invalid input for field/attribute forced_down.")
		}
		h.ForcedDown = fd
	}
	h.updated = c.now
	return 200, map[string]any{"service": c.serviceJSON(h)}
}

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
		q := c.r.URL.Query()
		withServers := false
		if v := q.Get("with_servers"); v != "" {
			if !c.mv.atLeast(53) {
				return 400, faultf("Query parameter with_servers is not supported before microversion 2.53")
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return 400, faultf("Invalid input for query parameters with_servers. Value: %s. Expected 'true' or 'false'.", v)
			}
			withServers = b
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

// ---- servers ----

func (c *call) serverJSON(s *VM, detail bool) map[string]any {
	self := c.s.URL + "/compute/v2.1/servers/" + s.ID
	links := []map[string]any{{"href": self, "rel": "self"}, {"href": c.s.URL + "/compute/servers/" + s.ID, "rel": "bookmark"}}
	out := map[string]any{"id": s.ID, "name": s.Name, "links": links}
	if !detail {
		return out
	}
	var flavor any
	if c.mv.atLeast(47) {
		flavor = map[string]any{"original_name": s.Flavor.Name, "ram": s.Flavor.RAMMB, "vcpus": s.Flavor.VCPUs,
			"disk": s.Flavor.DiskGB, "ephemeral": 0, "swap": 0, "extra_specs": map[string]any{}}
	} else {
		flavor = map[string]any{"id": s.Flavor.Name, "links": []any{}}
	}
	hostStatus := "UP"
	if h := c.w.hosts[s.Host]; h != nil && (!h.Up || h.ForcedDown) {
		hostStatus = "DOWN"
	}
	for k, v := range map[string]any{
		"OS-DCF:diskConfig": "MANUAL", "OS-EXT-AZ:availability_zone": "nova",
		"OS-EXT-SRV-ATTR:host": s.Host, "OS-EXT-SRV-ATTR:hostname": s.Name,
		"OS-EXT-SRV-ATTR:hypervisor_hostname": s.Host, "OS-EXT-SRV-ATTR:instance_name": s.Instance,
		"OS-EXT-SRV-ATTR:kernel_id": "", "OS-EXT-SRV-ATTR:launch_index": 0, "OS-EXT-SRV-ATTR:ramdisk_id": "",
		"OS-EXT-SRV-ATTR:reservation_id": "r-" + s.ID[:8], "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
		"OS-EXT-SRV-ATTR:user_data": nil, "OS-EXT-STS:power_state": 1, "OS-EXT-STS:task_state": nullIfEmpty(s.TaskState),
		"OS-EXT-STS:vm_state": s.VMState, "OS-SRV-USG:launched_at": novaTime(s.Created), "OS-SRV-USG:terminated_at": nil,
		"accessIPv4": "", "accessIPv6": "", "addresses": map[string]any{}, "config_drive": "",
		"created": s.Created.UTC().Format(time.RFC3339), "description": nil, "flavor": flavor,
		"hostId": "198079a0853eafad4b0dfb53c43fcb02c98090562e912589dc082afd", "host_status": hostStatus,
		"image": map[string]any{"id": "11111111-2222-3333-4444-555555555555"}, "key_name": nil,
		"metadata": map[string]any{}, "os-extended-volumes:volumes_attached": []any{}, "progress": 0,
		"status": s.Status, "tags": []any{}, "tenant_id": s.ProjectID,
		"trusted_image_certificates": nil, "updated": s.Updated.UTC().Format(time.RFC3339), "user_id": s.UserID,
	} {
		out[k] = v
	}
	if c.mv.atLeast(9) {
		out["locked"] = s.Locked
	}
	if c.mv.atLeast(73) {
		out["locked_reason"] = nil
	}
	return out
}

func listServers(detail bool) route {
	return func(c *call) (int, any) {
		q := c.r.URL.Query()
		// all_tenants matters to a real Nova; the simulated cloud has one project.
		host := q.Get("host")
		list := []*VM{}
		for _, s := range c.w.sortedServers() {
			if host == "" || s.Host == host {
				list = append(list, s)
			}
		}
		page, next, fault := paginate(c, len(list), func(i int) string { return list[i].ID }, func(i int) string { return list[i].ID })
		if fault != "" {
			return 400, fault
		}
		out := make([]map[string]any, 0, len(page))
		for _, i := range page {
			out = append(out, c.serverJSON(list[i], detail))
		}
		body := map[string]any{"servers": out}
		if next != "" {
			body["servers_links"] = []map[string]any{{"href": next, "rel": "next"}}
		}
		return 200, body
	}
}

func (c *call) server() (*VM, novaFault) {
	s := c.w.servers[c.r.PathValue("id")]
	if s == nil {
		return nil, faultf("Instance %s could not be found.", c.r.PathValue("id"))
	}
	return s, ""
}

func showServer(c *call) (int, any) {
	s, f := c.server()
	if f != "" {
		return 404, f
	}
	out := c.serverJSON(s, true)
	if c.mv.atLeast(71) { // only GET /servers/{id} shows server_groups
		out["server_groups"] = []any{}
	}
	return 200, map[string]any{"server": out}
}

func serverAction(c *call) (int, any) {
	s, f := c.server()
	if f != "" {
		return 404, f
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(c.r.Body).Decode(&body); err != nil {
		return 400, faultf("Malformed request body")
	}
	raw, ok := body["os-migrateLive"]
	if !ok {
		return 400, faultf("There is no such action: %v", keys(body))
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(raw, &req); err != nil {
		return 400, faultf("Invalid input for field/attribute os-migrateLive.")
	}
	if _, ok := req["block_migration"]; !ok && c.mv.atLeast(25) {
		return 400, faultf("Invalid input for field/attribute os-migrateLive. Value: %s. 'block_migration' is a required property", raw)
	}
	if _, ok := req["disk_over_commit"]; ok && c.mv.atLeast(25) {
		return 400, faultf("Invalid input for field/attribute os-migrateLive. Value: %s. Additional properties are not allowed ('disk_over_commit' was unexpected)", raw)
	}
	var host string
	if h, ok := req["host"]; ok && string(h) != "null" {
		if json.Unmarshal(h, &host) != nil {
			return 400, faultf("Invalid input for field/attribute host.")
		}
	}
	if s.Locked {
		return 409, faultf("Instance %s is locked", s.ID)
	}
	if s.TaskState != "" {
		return 409, faultf("Cannot 'os-migrateLive' instance %s while it is in task_state %s", s.ID, s.TaskState)
	}
	if s.VMState != "active" && s.VMState != "paused" {
		return 409, faultf("Cannot 'os-migrateLive' instance %s while it is in vm_state %s", s.ID, s.VMState)
	}
	if host != "" {
		h := c.w.hosts[host]
		if h == nil {
			return 400, faultf("Compute host %s could not be found.", host)
		}
		if host == s.Host {
			return 400, faultf("Unable to migrate instance (%s) to current host (%s).", s.ID, host)
		}
		if !h.Up || h.ForcedDown {
			return 400, faultf("Compute service of %s is unavailable at this time.", host)
		}
	}
	c.w.startMigration(s, host, c.now)
	return 202, nil
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// ---- migrations ----

func (c *call) migrationJSON(m *migration, forServer bool) map[string]any {
	out := map[string]any{
		"created_at": novaTime(m.created), "updated_at": novaTime(m.updated), "id": m.id,
		"dest_compute": nullIfEmpty(m.dest), "dest_host": nil, "dest_node": nullIfEmpty(m.dest),
		"source_compute": m.source, "source_node": m.source, "status": m.status,
	}
	if m.status == "accepted" || (m.dest == "" && m.status == "error") {
		out["source_node"] = nil
	}
	if c.mv.atLeast(59) {
		out["uuid"] = m.uuid
	}
	if c.mv.atLeast(80) {
		out["user_id"], out["project_id"] = m.server.UserID, m.server.ProjectID
	}
	if forServer {
		out["server_uuid"] = m.server.ID
		for _, k := range []string{"memory_total_bytes", "memory_processed_bytes", "memory_remaining_bytes",
			"disk_total_bytes", "disk_processed_bytes", "disk_remaining_bytes"} {
			out[k] = nil
		}
		if m.status == "running" || m.status == "post-migrating" {
			p, r := m.counters(c.now, c.w.opts.BandwidthBytesPerSec)
			if m.status == "post-migrating" {
				r = 0
			}
			out["memory_total_bytes"], out["memory_processed_bytes"], out["memory_remaining_bytes"] = int64(m.total), int64(p), int64(r)
		}
		return out
	}
	out["instance_uuid"] = m.server.ID
	out["migration_type"] = "live-migration"
	out["new_instance_type_id"], out["old_instance_type_id"] = 1, 1
	if m.active() && c.mv.atLeast(23) && m.status != "accepted" {
		base := "/servers/" + m.server.ID + "/migrations/" + strconv.FormatInt(m.id, 10)
		out["links"] = []map[string]any{{"href": c.s.URL + "/compute/v2.1" + base, "rel": "self"},
			{"href": c.s.URL + "/compute" + base, "rel": "bookmark"}}
	}
	return out
}

// inServerList: GET /servers/{id}/migrations shows only queued, preparing and running ones.
func inServerList(m *migration) bool {
	return m.status == "queued" || m.status == "preparing" || m.status == "running"
}

func listServerMigrations(c *call) (int, any) {
	if !c.mv.atLeast(23) {
		return 404, faultf("Not found")
	}
	s, f := c.server()
	if f != "" {
		return 404, f
	}
	out := []map[string]any{}
	for _, m := range c.w.migrations {
		if m.server == s && inServerList(m) {
			out = append(out, c.migrationJSON(m, true))
		}
	}
	return 200, map[string]any{"migrations": out}
}

func (c *call) serverMigration() (*migration, int, novaFault) {
	s, f := c.server()
	if f != "" {
		return nil, 404, f
	}
	mid, _ := strconv.ParseInt(c.r.PathValue("mid"), 10, 64)
	for _, m := range c.w.migrations {
		if m.id == mid && m.server == s {
			return m, 0, ""
		}
	}
	return nil, 404, faultf("Migration %s for server %s could not be found.", c.r.PathValue("mid"), s.ID)
}

func showServerMigration(c *call) (int, any) {
	m, code, f := c.serverMigration()
	if f != "" {
		return code, f
	}
	if !inServerList(m) {
		return 404, faultf("In-progress live migration %d is not found for server %s.", m.id, m.server.ID)
	}
	return 200, map[string]any{"migration": c.migrationJSON(m, true)}
}

func forceComplete(c *call) (int, any) {
	if !c.mv.atLeast(22) {
		return 404, faultf("Not found")
	}
	m, code, f := c.serverMigration()
	if f != "" {
		return code, f
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(c.r.Body).Decode(&body); err != nil || body["force_complete"] == nil {
		return 400, faultf("Invalid input for field/attribute force_complete.")
	}
	if m.status != "running" {
		return 400, faultf("Migration %d state of instance %s is %s. Cannot force_complete while the migration is in this state.",
			m.id, m.server.ID, m.status)
	}
	c.w.forceComplete(m, c.now)
	return 202, nil
}

func abortMigration(c *call) (int, any) {
	if !c.mv.atLeast(24) {
		return 404, faultf("Not found")
	}
	m, code, f := c.serverMigration()
	if f != "" {
		return code, f
	}
	ok := m.status == "running" || (c.mv.atLeast(65) && (m.status == "queued" || m.status == "preparing"))
	if !ok {
		return 400, faultf("Migration %d state of instance %s is %s. Cannot abort live migration while the migration is in this state.",
			m.id, m.server.ID, m.status)
	}
	c.w.abort(m, c.now)
	return 202, nil
}

var migrationFilters = map[string]bool{"instance_uuid": true, "host": true, "source_compute": true, "status": true,
	"migration_type": true, "hidden": true, "limit": true, "marker": true, "changes-since": true, "changes-before": true,
	"user_id": true, "project_id": true, "cell_name": true}

func listMigrations(c *call) (int, any) {
	q := c.r.URL.Query()
	if c.mv.atLeast(59) {
		for k := range q {
			if !migrationFilters[k] {
				return 400, faultf("Invalid input for query parameters %s. Additional properties are not allowed ('%s' was unexpected)", k, k)
			}
		}
	} else {
		q.Del("limit")
		q.Del("marker")
	}
	list := []*migration{}
	for i := len(c.w.migrations) - 1; i >= 0; i-- { // newest first
		m := c.w.migrations[i]
		if v := q.Get("instance_uuid"); v != "" && m.server.ID != v {
			continue
		}
		if v := q.Get("host"); v != "" && m.source != v && m.dest != v {
			continue
		}
		if v := q.Get("source_compute"); v != "" && m.source != v {
			continue
		}
		if v := q.Get("status"); v != "" && m.status != v {
			continue
		}
		if v := q.Get("migration_type"); v != "" && v != "live-migration" {
			continue
		}
		list = append(list, m)
	}
	page, next, fault := paginate(c, len(list), func(i int) string { return list[i].uuid },
		func(i int) string { return strconv.FormatInt(list[i].id, 10) })
	if fault != "" {
		return 404, faultf("Marker %s could not be found.", q.Get("marker"))
	}
	out := make([]map[string]any, 0, len(page))
	for _, i := range page {
		out = append(out, c.migrationJSON(list[i], false))
	}
	body := map[string]any{"migrations": out}
	if next != "" && c.mv.atLeast(59) {
		body["migrations_links"] = []map[string]any{{"href": next, "rel": "next"}}
	}
	return 200, body
}

// ---- os-instance-actions ----

func (c *call) actionJSON(s *VM, a *action, events bool) map[string]any {
	out := map[string]any{"action": a.Action, "instance_uuid": s.ID, "message": nullIfEmpty(a.Message),
		"project_id": s.ProjectID, "request_id": a.RequestID, "start_time": novaTime(a.Start), "user_id": s.UserID}
	if c.mv.atLeast(58) {
		out["updated_at"] = novaTime(a.Updated)
	}
	if events {
		list := []map[string]any{}
		for _, e := range a.Events {
			ev := map[string]any{"event": e.Event, "start_time": novaTime(e.Start), "finish_time": novaTime(e.Finish),
				"result": nullIfEmpty(e.Result), "traceback": nil}
			if c.mv.atLeast(62) {
				ev["host"], ev["hostId"] = e.Host, "e93df74ae1f444da6965422a94b7bdbb1e52b309978af2be62f3ce44"
			}
			if c.mv.atLeast(84) {
				ev["details"] = nullIfEmpty(e.Details)
			}
			list = append(list, ev)
		}
		out["events"] = list
	}
	return out
}

func listActions(c *call) (int, any) {
	s, f := c.server()
	if f != "" {
		return 404, f
	}
	acts := c.w.actions[s.ID]
	out := []map[string]any{}
	for i := len(acts) - 1; i >= 0; i-- {
		out = append(out, c.actionJSON(s, acts[i], false))
	}
	return 200, map[string]any{"instanceActions": out}
}

func showAction(c *call) (int, any) {
	s, f := c.server()
	if f != "" {
		return 404, f
	}
	for _, a := range c.w.actions[s.ID] {
		if a.RequestID == c.r.PathValue("req") {
			return 200, map[string]any{"instanceAction": c.actionJSON(s, a, true)}
		}
	}
	return 404, faultf("Action %s on instance %s could not be found.", c.r.PathValue("req"), s.ID)
}
