package sim

import (
	"encoding/json"
	"strconv"
	"time"
)

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
			t, p, r := m.saved(c.now)
			out["memory_total_bytes"], out["memory_processed_bytes"], out["memory_remaining_bytes"] = int64(t), int64(p), int64(r)
			out["disk_total_bytes"], out["disk_processed_bytes"], out["disk_remaining_bytes"] = 0, 0, 0
		}
		return out
	}
	out["instance_uuid"] = m.server.ID
	out["migration_type"] = m.kind
	out["new_instance_type_id"], out["old_instance_type_id"] = 1, 1
	if m.kind == "evacuation" { // a rebuild keeps the flavor: Nova records none
		out["new_instance_type_id"], out["old_instance_type_id"] = nil, nil
	}
	if m.active() && c.mv.atLeast(23) && m.status != "accepted" {
		base := "/servers/" + m.server.ID + "/migrations/" + strconv.FormatInt(m.id, 10)
		out["links"] = []map[string]any{{"href": c.s.URL + "/compute/v2.1" + base, "rel": "self"},
			{"href": c.s.URL + "/compute" + base, "rel": "bookmark"}}
	}
	return out
}

// inServerList: GET /servers/{id}/migrations shows only queued, preparing and running ones.
func inServerList(m *migration) bool {
	return !m.cold() && (m.status == "queued" || m.status == "preparing" || m.status == "running")
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
		if m.server == s && inServerList(m) && m.seen(c.now) {
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
		if m.id == mid && m.server == s && m.seen(c.now) {
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
	if f := c.lockRefused(m.server); f != "" {
		return 409, f
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
	if f := c.lockRefused(m.server); f != "" {
		return 409, f
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
				return 400, faultf(
					"Invalid input for query parameters %s. Additional properties are not allowed ('%s' was unexpected)",
					k,
					k,
				)
			}
		}
	} else {
		q.Del("limit")
		q.Del("marker")
	}
	since := time.Time{}
	if c.mv.atLeast(59) {
		var f novaFault
		if since, f = changesSince(q.Get("changes-since")); f != "" {
			return 400, f
		}
	}
	list := []*migration{}
	for i := len(c.w.migrations) - 1; i >= 0; i-- { // newest first
		m := c.w.migrations[i]
		if !m.seen(c.now) || m.updated.Before(since) {
			continue
		}
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
		if v := q.Get("migration_type"); v != "" && v != m.kind {
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
