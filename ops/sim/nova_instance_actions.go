package sim

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
