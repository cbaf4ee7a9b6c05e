package sim

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

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
		specs := map[string]any{}
		for k, v := range s.Flavor.ExtraSpecs {
			if !c.w.opts.HideExtraSpecs {
				specs[k] = v
			}
		}
		flavor = map[string]any{"original_name": s.Flavor.Name, "ram": s.Flavor.RAMMB, "vcpus": s.Flavor.VCPUs,
			"disk": s.Flavor.DiskGB, "ephemeral": 0, "swap": 0, "extra_specs": specs}
	} else {
		flavor = map[string]any{"id": s.Flavor.Name, "links": []any{}}
	}
	hostStatus := "UP"
	if h := c.w.hosts[s.Host]; h != nil && (!h.Up || h.ForcedDown) {
		hostStatus = "DOWN"
	}
	for k, v := range map[string]any{
		"OS-DCF:diskConfig": "MANUAL", "OS-EXT-AZ:availability_zone": c.w.zoneOf(s),
		// null while (or when) the scheduler has placed it nowhere: BUILD, or ERROR after no
		// valid host (a real Nova's answer).
		"OS-EXT-SRV-ATTR:host": nullIfEmpty(s.Host), "OS-EXT-SRV-ATTR:hostname": s.Name,
		"OS-EXT-SRV-ATTR:hypervisor_hostname": nullIfEmpty(s.Host), "OS-EXT-SRV-ATTR:instance_name": s.Instance,
		"OS-EXT-SRV-ATTR:kernel_id": "", "OS-EXT-SRV-ATTR:launch_index": 0, "OS-EXT-SRV-ATTR:ramdisk_id": "",
		"OS-EXT-SRV-ATTR:reservation_id": "r-" + s.ID[:8], "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
		"OS-EXT-SRV-ATTR:user_data": nil, "OS-EXT-STS:power_state": 1, "OS-EXT-STS:task_state": nullIfEmpty(s.TaskState),
		"OS-EXT-STS:vm_state": s.VMState, "OS-SRV-USG:launched_at": novaTime(s.Created), "OS-SRV-USG:terminated_at": nil,
		"accessIPv4": "", "accessIPv6": "", "addresses": map[string]any{}, "config_drive": "",
		"created": s.Created.UTC().Format(time.RFC3339), "description": nil, "flavor": flavor,
		"hostId": "198079a0853eafad4b0dfb53c43fcb02c98090562e912589dc082afd", "host_status": hostStatus,
		"image": map[string]any{"id": "11111111-2222-3333-4444-555555555555"}, "key_name": nil,
		"metadata": metadataJSON(s.Metadata), "os-extended-volumes:volumes_attached": []any{}, "progress": 0,
		"status": s.Status, "tags": []any{}, "tenant_id": s.ProjectID,
		"trusted_image_certificates": nil, "updated": s.Updated.UTC().Format(time.RFC3339), "user_id": s.UserID,
	} {
		out[k] = v
	}
	if s.Image != "" {
		out["image"] = map[string]any{"id": s.Image}
	}
	if s.VolumeBacked {
		out["image"] = "" // booted from a volume
	}
	if s.Status == "SHUTOFF" || s.Status == "ERROR" {
		out["OS-EXT-STS:power_state"] = 4 // SHUTDOWN
	}
	if s.Status == "PAUSED" {
		out["OS-EXT-STS:power_state"] = 3 // PAUSED
	}
	if s.Status == "ERROR" { // Nova shows the fault of a server in ERROR (details to admins)
		out["fault"] = map[string]any{"code": 500, "created": novaTime(s.Updated), "message": s.Fault}
	}
	if c.mv.atLeast(9) {
		out["locked"] = s.Locked
	}
	if c.mv.atLeast(73) {
		out["locked_reason"] = nullIfEmpty(s.LockedReason)
	}
	hideFor(c.s.userOf(c.r), out)
	return out
}

func listServers(detail bool) route {
	return func(c *call) (int, any) {
		q := c.r.URL.Query()
		// all_tenants matters to a real Nova; the simulated cloud has one project.
		host := q.Get("host")
		since, f := changesSince(q.Get("changes-since"))
		if f != "" {
			return 400, f
		}
		list := []*VM{}
		for _, s := range c.w.sortedServers() {
			if (host == "" || s.Host == host) && !s.Updated.Before(since) {
				list = append(list, s)
			}
		}
		if !since.IsZero() { // a changes-since list shows the servers deleted since, too
			for _, s := range c.w.deleted {
				if (host == "" || s.Host == host) && !s.Updated.Before(since) {
					list = append(list, s)
				}
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
		out["server_groups"] = c.w.groupsOf(s)
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
	switch {
	case body["migrate"] != nil:
		return coldMigrate(c, s, body["migrate"])
	case body["confirmResize"] != nil:
		return confirmResize(c, s)
	case body["revertResize"] != nil:
		return revertResize(c, s)
	case body["evacuate"] != nil:
		return evacuate(c, s, body["evacuate"])
	case body["os-getConsoleOutput"] != nil:
		return consoleOutput(c, s, body["os-getConsoleOutput"])
	case body["lock"] != nil:
		return lockAction(c, s, body["lock"], true)
	case body["unlock"] != nil:
		return lockAction(c, s, body["unlock"], false)
	}
	for action := range powerActions {
		if body[action] != nil {
			return powerAction(c, s, action)
		}
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
		return 400, faultf(
			"Invalid input for field/attribute os-migrateLive. Value: %s. Additional properties are not allowed "+
				"('disk_over_commit' was unexpected)",
			raw,
		)
	}
	host, f := hostField(req)
	if f != "" {
		return 400, f
	}
	if f := cmp.Or(c.lockRefused(s), refused(s, "os-migrateLive", "active", "paused")); f != "" {
		return 409, f
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
	c.w.startMigration(s, host, c.now, c.reqID)
	return 202, nil
}

// hostField is an action's optional "host" ("" when absent or null).
func hostField(req map[string]json.RawMessage) (string, novaFault) {
	var host string
	if h, ok := req["host"]; ok && string(h) != "null" && json.Unmarshal(h, &host) != nil {
		return "", faultf("Invalid input for field/attribute host.")
	}
	return host, ""
}

// refused is Nova's 409 for an action on a server busy with a task, or in a vm_state the
// action does not accept (check_instance_state); "" when it may proceed.
func refused(s *VM, action string, vmStates ...string) novaFault {
	switch {
	case s.TaskState != "":
		return faultf("Cannot '%s' instance %s while it is in task_state %s", action, s.ID, s.TaskState)
	case !slices.Contains(vmStates, s.VMState):
		return faultf("Cannot '%s' instance %s while it is in vm_state %s", action, s.ID, s.VMState)
	}
	return ""
}

// lockRefused is Nova's check_instance_lock: a locked server refuses the action (409) to every
// context but an admin's (nova/compute/api.py). It guards live_migrate, its force-complete and
// abort, resize (the cold migrate) and confirm_resize; evacuate has none. A user with policy
// rules of its own (a member granted them) is no admin.
func (c *call) lockRefused(s *VM) novaFault {
	if s.Locked && c.s.userOf(c.r).Rules != nil {
		return faultf("Instance %s is locked", s.ID)
	}
	return ""
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// coldMigrate is the migrate action: 202, then the server moves through RESIZE to
// VERIFY_RESIZE. Nova lets ACTIVE and SHUTOFF (stopped) servers cold-migrate; a host may be
// named from 2.56 (the scheduler still validates it).
func coldMigrate(c *call, s *VM, raw json.RawMessage) (int, any) {
	var host string
	if string(raw) != "null" {
		var req map[string]json.RawMessage
		if err := json.Unmarshal(raw, &req); err != nil {
			return 400, faultf("Invalid input for field/attribute migrate.")
		}
		if h, ok := req["host"]; ok && string(h) != "null" && !c.mv.atLeast(56) {
			return 400, faultf(
				"Invalid input for field/attribute migrate. Value: %s. Additional properties are not allowed ('host' was unexpected)",
				raw,
			)
		}
		var f novaFault
		if host, f = hostField(req); f != "" {
			return 400, f
		}
	}
	if f := cmp.Or(c.lockRefused(s), refused(s, "migrate", "active", "stopped")); f != "" {
		return 409, f
	}
	if src := c.w.hosts[s.Host]; src != nil && (!src.Up || src.ForcedDown) {
		return 409, faultf("Service is unavailable at this time.") // resize's check_instance_host(check_is_up=True)
	}
	if host != "" {
		h := c.w.hosts[host]
		if h == nil {
			return 400, faultf("Compute host %s could not be found.", host)
		}
		if host == s.Host {
			return 400, faultf("No valid host was found. No valid host found for cold migrate")
		}
	}
	c.w.startCold(s, host, c.now, c.reqID)
	return 202, nil
}

// confirmResize ends a cold migration waiting in VERIFY_RESIZE (204).
func confirmResize(c *call, s *VM) (int, any) {
	if f := c.lockRefused(s); f != "" {
		return 409, f
	}
	m := c.w.lastCold(s)
	if s.Status != "VERIFY_RESIZE" || m == nil || m.status != coldStatusOK {
		return 409, faultf("Cannot 'confirmResize' instance %s while it is in vm_state %s", s.ID, s.VMState)
	}
	m.setStatus("confirming", c.now)
	return 204, nil
}

// revertResize sends a cold migration waiting in VERIFY_RESIZE back to its source (202).
func revertResize(c *call, s *VM) (int, any) {
	m := c.w.lastCold(s)
	if s.Status != "VERIFY_RESIZE" || m == nil || m.status != coldStatusOK {
		return 409, faultf("Cannot 'revertResize' instance %s while it is in vm_state %s", s.ID, s.VMState)
	}
	m.setStatus("reverting", c.now)
	s.Status, s.TaskState = "REVERT_RESIZE", "resize_reverting"
	return 202, nil
}

// changesSince parses a changes-since filter (ISO 8601); zero when absent. Nova compares it
// with updated_at: what changed at or after it.
func changesSince(v string) (time.Time, novaFault) {
	if v == "" {
		return time.Time{}, ""
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, ""
		}
	}
	return time.Time{}, faultf("Invalid input for query parameters changes-since. Value: %s. '%s' is not a 'date-time'", v, v)
}

// metadataJSON is a server's metadata as Nova shows it: {} when it has none.
func metadataJSON(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m) // encoded after the world's lock is let go
}
