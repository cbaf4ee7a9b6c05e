package sim

import (
	"sort"
	"strings"
	"time"
)

// Cold migration as a real Nova did it (shared/notes/nova-api.md, "Stopped VMs and dead
// hosts"; about 5 s on the fake driver): the migration record goes pre-migrating →
// migrating → post-migrating → finished while the server goes RESIZE/resize_prep on the
// source → RESIZE/resize_migrating → RESIZE/resize_migrated with its host already the
// destination → RESIZE/resize_finish → VERIFY_RESIZE (task null). It waits there for
// confirmResize (record confirming → confirmed; the server back to its power state, SHUTOFF
// or ACTIVE) or revertResize (reverting → reverted; back on the source as it was).
const (
	coldPrepare  = time.Second            // pre-migrating: the scheduler, prep_resize on the destination
	coldCopy     = 2 * time.Second        // migrating: the disks copied
	coldFinish   = time.Second            // post-migrating: finish_resize on the destination
	coldConfirm  = 300 * time.Millisecond // confirming -> confirmed
	coldRevert   = time.Second            // reverting -> reverted
	coldStatusOK = "finished"             // waits in VERIFY_RESIZE
	// coldFreed: the source's share, held by the migration, goes this long after the server
	// shows its state again (Nova's _confirm_resize saves the instance, then deletes the
	// migration's allocation): a client that calls the host empty at once is early.
	coldFreed = 200 * time.Millisecond
)

// pinnedSpec is the first extra spec (in key order) that ties a flavor to its host's
// hardware, as "key=value": the conductor then refuses a live migration.
func pinnedSpec(specs map[string]string) string {
	var keys []string
	for k, v := range specs {
		if v == "" || v == "0" {
			continue
		}
		if k == "pci_passthrough:alias" || k == "resources:VGPU" || k == "resources:PGPU" || strings.HasPrefix(k, "resources:CUSTOM_") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return keys[0] + "=" + specs[keys[0]]
}

// startCold records a cold migration of s (already validated) and returns it.
func (w *World) startCold(s *VM, host string, now time.Time, reqID string) *migration {
	m := &migration{kind: "migration", id: w.nextMigID, uuid: w.uuid(), server: s, source: s.Host, requestedHost: host,
		created: now, requestID: reqID}
	w.nextMigID++
	m.setStatus("pre-migrating", now)
	m.updated = time.Time{} // Nova leaves a new record's updated_at null until its first change
	m.visible = now.Add(w.opts.RecordDelay)
	m.origStatus, m.origVMState = s.Status, s.VMState
	s.migrations++
	s.Status, s.TaskState = "RESIZE", "resize_prep"
	s.Updated = now
	w.migrations = append(w.migrations, m)
	w.recordNamedAction(s, "migrate", "conductor_migrate_server", m.requestID, now)
	w.countConcurrency()
	return m
}

func (w *World) nextColdTransition(m *migration) (time.Time, bool) {
	if m.kind == "evacuation" {
		if m.status == "pre-migrating" && m.dest == "" {
			return m.phaseStart.Add(scheduleDelay), true
		}
		if m.status == "pre-migrating" {
			return m.phaseStart.Add(evacuateRebuild), true
		}
		return time.Time{}, false
	}
	switch m.status {
	case "pre-migrating":
		return m.phaseStart.Add(coldPrepare), true
	case "migrating":
		return m.phaseStart.Add(coldCopy), true
	case "post-migrating":
		return m.phaseStart.Add(coldFinish), true
	case "confirming":
		return m.phaseStart.Add(coldConfirm), true
	case "confirmed":
		return m.phaseStart.Add(coldFreed), !m.freed
	case "reverting":
		return m.phaseStart.Add(coldRevert), true
	}
	return time.Time{}, false
}

// coldPending: confirming and reverting also move on by themselves (advance only walks
// active migrations and these).
func (m *migration) coldPending() bool {
	return m.cold() && (m.status == "confirming" || m.status == "reverting" || (m.status == "confirmed" && !m.freed))
}

func (w *World) applyCold(m *migration, at time.Time) {
	s := m.server
	s.Updated = at
	if m.kind == "evacuation" && m.dest == "" {
		w.evacuateSchedule(m, at)
		return
	}
	if m.kind == "evacuation" { // rebuilt on the destination; "done" until the source cleans up
		m.setStatus("done", at)
		s.Host, s.Status, s.VMState, s.TaskState, s.Fault = m.dest, "ACTIVE", "active", "", "" // rebuilt: an ERROR's fault gone
		if m.origStatus == "SHUTOFF" {
			s.Status, s.VMState = "SHUTOFF", "stopped"
		}
		w.finishAction(s, m.requestID, at, "")
		return
	}
	switch m.status {
	case "pre-migrating":
		h, ok := w.coldDestination(m)
		if !ok {
			m.setStatus("error", at)
			s.Status, s.VMState, s.TaskState = m.origStatus, m.origVMState, ""
			w.finishAction(s, m.requestID, at, "conductor_migrate_server\x00No valid host was found. There are not enough hosts available.")
			return
		}
		m.dest = h.Name
		m.setStatus("migrating", at)
		s.TaskState = "resize_migrating"
	case "migrating":
		m.setStatus("post-migrating", at)
		s.Host, s.TaskState = m.dest, "resize_migrated" // Nova moves the host before the finish
	case "post-migrating":
		m.setStatus(coldStatusOK, at)
		s.Status, s.VMState, s.TaskState = "VERIFY_RESIZE", "resized", ""
		w.finishAction(s, m.requestID, at, "")
	case "confirming":
		m.setStatus("confirmed", at)
		s.Status, s.VMState, s.TaskState = m.origStatus, m.origVMState, ""
	case "confirmed":
		m.freed = true
	case "reverting":
		m.setStatus("reverted", at)
		s.Host, s.Status, s.VMState, s.TaskState = m.source, m.origStatus, m.origVMState, ""
	}
}

// coldDestination is the requested host, validated by the scheduler, or the scheduler's pick.
func (w *World) coldDestination(m *migration) (*Host, bool) {
	if w.noValidHost {
		return nil, false
	}
	if m.requestedHost != "" {
		h := w.hosts[m.requestedHost]
		return h, h != nil && h.schedulable() && w.fits(h, m.server) && w.allowed(m.server, h)
	}
	return w.schedule(m.server)
}

// lastCold is the server's newest cold migration, if any.
func (w *World) lastCold(s *VM) *migration {
	for i := len(w.migrations) - 1; i >= 0; i-- {
		if m := w.migrations[i]; m.server == s && m.cold() {
			return m
		}
	}
	return nil
}

// Stop powers a server off (SHUTOFF), as openstack server stop does.
func (w *World) Stop(name string) {
	w.setState(name, func(s *VM) { s.Status, s.VMState = "SHUTOFF", "stopped" })
}

// Break puts a server in ERROR with a fault message, as a failed operation leaves it.
func (w *World) Break(name, fault string) {
	w.setState(name, func(s *VM) { s.Status, s.VMState, s.Fault = "ERROR", "error", fault })
}

// Lock locks a server (openstack server lock): Nova refuses actions on it.
func (w *World) Lock(name string) { w.setState(name, func(s *VM) { s.Locked = true }) }

// SetMetadata sets a key of a server's metadata as its owner would (openstack server set
// --property key=value); an empty value removes it.
func (w *World) SetMetadata(name, key, value string) {
	w.setState(name, func(s *VM) {
		if s.Metadata == nil {
			s.Metadata = map[string]string{}
		}
		if value == "" {
			delete(s.Metadata, key)
			return
		}
		s.Metadata[key] = value
	})
}

func (w *World) setState(name string, f func(*VM)) {
	w.Update(func(_ map[string]*Host, servers map[string]*VM) {
		for _, s := range servers {
			if s.Name == name {
				f(s)
				s.Updated = w.clock.Now()
			}
		}
	})
}
