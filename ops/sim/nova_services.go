package sim

import (
	"encoding/json"
	"time"
)

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
		"updated_at": novaTime(c.w.reported(h, c.now)), "zone": h.Zone}
}

// reportInterval is how often a live nova-compute reports (Nova's report_interval).
const reportInterval = 10 * time.Second

// reported is a service's updated_at: its last report (every reportInterval while its
// nova-compute runs, frozen when it died), or its last change through the API if later.
func (w *World) reported(h *Host, now time.Time) time.Time {
	last := h.died
	if h.Up {
		last = now.Truncate(reportInterval)
	}
	if h.updated.After(last) {
		return h.updated
	}
	return last
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
		return 400, faultf(
			"Invalid input for field/attribute status. Value: %s. '%s' is not one of ['enabled', 'disabled']",
			status,
			status,
		)
	}
	if raw, ok := body["forced_down"]; ok {
		var fd bool
		if json.Unmarshal(raw, &fd) != nil {
			return 400, faultf("Invalid input for field/attribute forced_down.")
		}
		if !fd && h.ForcedDown {
			if f := c.w.forceUpRefused(h); f != "" {
				return 400, f
			}
		}
		h.ForcedDown = fd
	}
	h.updated = c.now
	return 200, map[string]any{"service": c.serviceJSON(h)}
}
