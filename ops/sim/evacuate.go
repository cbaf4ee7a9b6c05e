package sim

import (
	"encoding/json"
	"time"
)

// A dead host and Nova's evacuate, as a real Nova did them (shared/notes/nova-api.md,
// "Stopped VMs and dead hosts"): evacuate is refused with 400 while the source's nova-compute
// is up; accepted (200), the server is rebuilt on another host, REBUILD/rebuilding → ACTIVE
// (about 3 s on the fake driver); its record, migration_type "evacuation", says "done" until
// the dead host's nova-compute starts again and cleans up, then "completed". Forcing the
// service up is refused while "done" records remain.

const evacuateRebuild = 3 * time.Second // REBUILD → ACTIVE on the destination

// KillHost stops a host's nova-compute as a dead machine does: the service goes down (its
// heartbeat stops), its servers stay recorded on it.
func (w *World) KillHost(name string) {
	w.Update(func(hosts map[string]*Host, _ map[string]*VM) {
		if h := hosts[name]; h != nil {
			h.Up, h.died = false, w.clock.Now() // its last report
		}
	})
}

// ReviveHost starts the host's nova-compute again: it cleans up after the evacuations from
// it ("done" → "completed") and reports up (unless it is forced down).
func (w *World) ReviveHost(name string) {
	w.Update(func(hosts map[string]*Host, _ map[string]*VM) {
		if h := hosts[name]; h != nil {
			h.Up = true
		}
		for _, m := range w.migrations {
			if m.kind == "evacuation" && m.source == name && m.status == "done" {
				m.setStatus("completed", w.clock.Now())
			}
		}
	})
}

// evacuate is the evacuate action (2.68+: no force, no onSharedStorage; host optional).
func evacuate(c *call, s *VM, raw json.RawMessage) (int, any) {
	var req struct {
		Host *string `json:"host"`
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &req); err != nil {
			return 400, faultf("Invalid input for field/attribute evacuate.")
		}
	}
	// The API looks a named host up first (404), then the source's service (400).
	if req.Host != nil && *req.Host != "" && c.w.hosts[*req.Host] == nil {
		return 404, faultf("Compute host %s not found.", *req.Host)
	}
	src := c.w.hosts[s.Host]
	if src != nil && src.Up && !src.ForcedDown {
		return 400, faultf("Compute service of %s is still in use.", s.Host)
	}
	// Nova's compute API evacuates ACTIVE, stopped and ERROR servers with no task, locked
	// or not (check_instance_state, no check_instance_lock).
	if f := refused(s, "evacuate", "active", "stopped", "error"); f != "" {
		return 409, f
	}
	// Whether a named host may take the server is the scheduler's, after the answer
	// (evacuateSchedule), as for a host left to it.
	m := &migration{kind: "evacuation", id: c.w.nextMigID, uuid: c.w.uuid(), server: s, source: s.Host, created: c.now,
		requestID: c.reqID}
	if req.Host != nil {
		m.requestedHost = *req.Host
	}
	c.w.nextMigID++
	m.origStatus, m.origVMState = s.Status, s.VMState
	m.setStatus("pre-migrating", c.now)
	m.updated = time.Time{} // Nova leaves a new record's updated_at null until its first change
	s.Status, s.TaskState, s.Updated = "REBUILD", "rebuilding", c.now
	c.w.migrations = append(c.w.migrations, m)
	c.w.recordNamedAction(s, "evacuate", "conductor_rebuild_server", m.requestID, c.now)
	c.w.countConcurrency()
	return 200, map[string]any{}
}

// evacuateSchedule is the conductor's scheduling of an accepted evacuation: the requested
// host if its filters pass it (enabled, up, room, the server's rules), else the scheduler's
// pick. None: Nova turns it down after the answer, as a real Nova did (shared/notes,
// TestConformanceEvacuationToANamedHost): the record in error, the server ERROR on its dead
// host with NoValidHost as its fault and its action's error. An ERROR server may be
// evacuated again.
func (w *World) evacuateSchedule(m *migration, at time.Time) {
	s := m.server
	var dest *Host
	if h := w.hosts[m.requestedHost]; h != nil {
		if !w.noValidHost && h.schedulable() && w.fits(h, s) && w.allowed(s, h) {
			dest = h
		}
	} else if h, ok := w.schedule(s); ok {
		dest = h
	}
	if dest == nil {
		m.dest = m.requestedHost // Nova's record names the host it was asked for
		m.setStatus("error", at)
		s.Status, s.VMState, s.TaskState, s.Fault, s.Updated = "ERROR", "error", "", "No valid host was found. ", at
		w.finishAction(s, m.requestID, at, "conductor_rebuild_server\x00No valid host was found. ")
		return
	}
	m.dest, m.phaseStart = dest.Name, at
}

// forceUpRefused is Nova's refusal to force a service up while "done" evacuations remain.
func (w *World) forceUpRefused(h *Host) novaFault {
	for _, m := range w.migrations {
		if m.kind == "evacuation" && m.source == h.Name && m.status == "done" {
			return faultf("Unable to force up host %s as `done` evacuation migration records remain associated with the host. "+
				"Ensure the compute service has been restarted, allowing these records to move to `completed` before "+
				"retrying this request.", h.Name)
		}
	}
	return ""
}

// MoveUnderWay is a move the world is making now, as the world knows it (not as any API
// shows it): a harness's ground truth for the caps.
type MoveUnderWay struct {
	Kind         string // "live-migration", "migration" (cold) or "evacuation"
	Server       string // its ID
	Source, Dest string
	ID           int64 // its migration record's
}

// MovesUnderWay are the moves under way now.
func (w *World) MovesUnderWay() []MoveUnderWay {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(w.clock.Now())
	var out []MoveUnderWay
	for _, m := range w.migrations {
		if m.active() {
			out = append(out, MoveUnderWay{Kind: m.kind, Server: m.server.ID, Source: m.source, Dest: m.dest, ID: m.id})
		}
	}
	return out
}

// Servers are every server, as the world knows them.
func (w *World) Servers() []VM {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(w.clock.Now())
	out := make([]VM, 0, len(w.servers))
	for _, s := range w.servers {
		out = append(out, *s)
	}
	return out
}
