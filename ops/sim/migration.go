package sim

import (
	"math"
	"strconv"
	"time"
)

// Phase durations in simulated time, close to what a real Nova on libvirt shows.
const (
	scheduleDelay    = 100 * time.Millisecond // accepted -> queued (conductor + scheduler)
	errorDelay       = 400 * time.Millisecond // accepted -> error when no host is valid
	prepareDuration  = time.Second            // preparing: pre_live_migration on the destination
	failRunningAfter = 2 * time.Second        // an injected failure while running comes this late
	serverMovesAfter = 500 * time.Millisecond // post-migrating -> server ACTIVE on the destination
	completeAfter    = 800 * time.Millisecond // post-migrating -> completed (0.3 s after the move)
	// switchoverBytes: libvirt pauses the VM for the last pages once what is left fits the
	// allowed downtime; at 1 GiB/s and 50 ms that is about 50 MiB.
	switchoverBytes = 50 << 20
	// recordDelay: a live or cold migration's record appears this long after the 202 (the
	// conductor makes it; measured on a real Nova: not there 41 ms after, there 196 ms after).
	recordDelay = 50 * time.Millisecond
)

// migration is one live migration moving through Nova's states.
type migration struct {
	kind          string // "live-migration" or "migration" (cold)
	id            int64
	uuid          string
	server        *VM
	source, dest  string
	requestedHost string
	status        string
	history       []string
	created       time.Time
	updated       time.Time
	phaseStart    time.Time
	requestID     string
	// visible is when the record can be read: the API answers 202 and casts to the
	// conductor, which makes it (about 0.2 s later on the real Nova).
	visible time.Time
	failAt  string
	freed   bool // a confirmed cold migration's source share is gone (cold.go)
	moved   bool
	// A cold migration restores the server's state it had before (SHUTOFF stays SHUTOFF).
	origStatus, origVMState string

	// Memory copy, as a piecewise-linear process: from segStart, remaining falls at
	// (bw - dirty) and processed grows at bw (the link's share it has: linkShare).
	bw           float64
	forced       bool // force-completed: the guest is paused, and dirties nothing any more
	total        float64
	segStart     time.Time
	segRemaining float64
	segProcessed float64
	dirty        float64
}

// seen reports whether the record exists at now (see visible).
func (m *migration) seen(now time.Time) bool { return !now.Before(m.visible) }

func (m *migration) active() bool {
	switch m.status {
	case "accepted", "queued", "preparing", "running", "post-migrating", "pre-migrating", "migrating":
		return true
	}
	return false
}

// cold: a migration that is not live (a cold migration or an evacuation), moved by its own
// state machine (cold.go, evacuate.go).
func (m *migration) cold() bool { return m.kind == "migration" || m.kind == "evacuation" }

// restored is the server's status once a live migration ends: the one it had (PAUSED stays
// PAUSED), ACTIVE when unknown.
func (m *migration) restored() string {
	if m.origStatus == "" || m.origStatus == "MIGRATING" {
		return "ACTIVE"
	}
	return m.origStatus
}

// holdsSlot reports whether the migration counts against the source's concurrency limit.
func (m *migration) holdsSlot() bool {
	return m.status == "preparing" || m.status == "running" || m.status == "post-migrating"
}

func (m *migration) setStatus(s string, at time.Time) {
	m.status = s
	m.updated = at
	m.phaseStart = at
	m.history = append(m.history, s)
}

// statsEvery: Nova's libvirt driver saves the job's counters to the migration record on every
// 10th turn of its 0.5 s monitor loop, the first as the job starts, when QEMU has counted
// nothing or a few pages (all zero here). Measured on real guests (the libvirt world): saves
// 4.4–5.4 s apart as read, the record unchanged between saves.
const statsEvery = 5 * time.Second

// saved returns the counters as the record shows them at now while running: as of the
// newest save.
func (m *migration) saved(now time.Time) (total, processed, remaining float64) {
	k := now.Sub(m.phaseStart) / statsEvery
	if k <= 0 {
		return 0, 0, 0
	}
	processed, remaining = m.counters(m.phaseStart.Add(k * statsEvery))
	return m.total, processed, remaining
}

// guestDirtyRate is what the libvirt world's guest (hack/guest/init) dirties, from its
// metadata: drainctl.test:dirty MiB a second (0 when absent), so one test body sets the rate
// on both clouds.
func guestDirtyRate(md map[string]string) float64 {
	mib, err := strconv.ParseFloat(md["drainctl.test:dirty"], 64)
	if err != nil || mib < 0 {
		return 0
	}
	return mib * (1 << 20)
}

// counters returns the memory counters at t while running.
func (m *migration) counters(t time.Time) (processed, remaining float64) {
	bw := m.bw
	dt := t.Sub(m.segStart).Seconds()
	if dt < 0 {
		dt = 0
	}
	// Pages dirtied meanwhile come back, but never more than the guest's memory.
	remaining = math.Min(m.total, math.Max(0, m.segRemaining-(bw-m.dirty)*dt))
	processed = m.segProcessed + bw*dt
	return processed, remaining
}

// rebase starts a new copy segment at t (after force-complete changes the dirty rate, or the
// link's share changes).
func (m *migration) rebase(t time.Time, bw, dirty float64) {
	m.segProcessed, m.segRemaining = m.counters(t)
	m.segStart = t
	m.bw, m.dirty = bw, dirty
}

// SetSharedLink makes the live moves share one migration network that carries moves at full
// speed (BandwidthBytesPerSec) each, more than that each getting an equal share (0: every move
// its own link, the default). A guest that dirties memory faster than its share never
// converges while the link is crowded.
func (w *World) SetSharedLink(moves float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.advance(now) // what was due is applied at the share it had
	w.sharedLink = moves
	w.reshare(now)
}

// linkShare is the copy rate each of n running live moves gets.
func (w *World) linkShare(n int) float64 {
	bw := w.opts.BandwidthBytesPerSec
	if w.sharedLink <= 0 || float64(n) <= w.sharedLink {
		return bw
	}
	return bw * w.sharedLink / float64(n)
}

// reshare gives every running live move its share of the link from at: called whenever one
// starts or stops copying, so the piecewise-linear counters stay exact.
func (w *World) reshare(at time.Time) {
	n := 0
	for _, m := range w.migrations {
		if m.status == "running" && !m.cold() {
			n++
		}
	}
	share := w.linkShare(n)
	for _, m := range w.migrations {
		if m.status == "running" && !m.cold() && m.bw != share {
			m.rebase(at, share, m.dirty)
		}
	}
}

// startMigration records a new live migration of s (already validated) and returns it.
func (w *World) startMigration(s *VM, host string, now time.Time, reqID string) *migration {
	m := &migration{kind: "live-migration", id: w.nextMigID, uuid: w.uuid(), server: s, source: s.Host, requestedHost: host,
		created: now, requestID: reqID}
	w.nextMigID++
	m.setStatus("accepted", now)
	m.updated = time.Time{} // Nova leaves updated_at null at accepted
	m.visible = now.Add(w.opts.RecordDelay)
	s.migrations++
	if s.FailAt != "" && (!s.FailOnce || s.migrations == 1) {
		m.failAt = s.FailAt
	}
	if src := w.hosts[s.Host]; pinnedSpec(s.Flavor.ExtraSpecs) != "" || w.directPort(s) != "" ||
		(src != nil && (!src.Up || src.ForcedDown)) {
		m.failAt = "precheck" // the conductor's pre-check refuses it, after the 202 (a down source: ComputeServiceUnavailable)
	}
	m.origStatus, m.origVMState = s.Status, s.VMState // a paused guest stays paused
	s.Status, s.TaskState = "MIGRATING", "migrating"
	s.Updated = now
	w.migrations = append(w.migrations, m)
	w.recordAction(s, "live-migration", m.requestID, now)
	w.countConcurrency()
	return m
}

// advance applies every transition due up to now, in time order, so that a migration
// queued behind another starts the moment the first one frees its slot.
func (w *World) advance(now time.Time) {
	w.advanceBuilds(now)
	for {
		var next *migration
		var at time.Time
		for _, m := range w.migrations {
			if !m.active() && !m.coldPending() {
				continue
			}
			t, ok := w.nextTransition(m)
			if !ok || t.After(now) {
				continue
			}
			if next == nil || t.Before(at) {
				next, at = m, t
			}
		}
		if next == nil {
			return
		}
		if at.After(w.lastEvent) {
			w.lastEvent = at
		}
		w.apply(next, at)
		w.reshare(at)
	}
}

func (w *World) slotsFree(source string) bool {
	n := 0
	for _, m := range w.migrations {
		if m.source == source && m.holdsSlot() {
			n++
		}
	}
	return n < w.opts.MaxConcurrentLiveMigrations
}

func (w *World) nextTransition(m *migration) (time.Time, bool) {
	if m.cold() {
		return w.nextColdTransition(m)
	}
	switch m.status {
	case "accepted":
		return m.phaseStart.Add(scheduleDelay), true
	case "queued":
		if !w.slotsFree(m.source) {
			return time.Time{}, false
		}
		if m.phaseStart.After(w.lastEvent) {
			return m.phaseStart, true
		}
		return w.lastEvent, true
	case "preparing":
		return m.phaseStart.Add(prepareDuration), true
	case "running":
		if m.failAt == "running" {
			return m.phaseStart.Add(failRunningAfter), true
		}
		rate := m.bw - m.dirty
		if rate <= 0 {
			return time.Time{}, false // never converges
		}
		left := math.Max(0, m.segRemaining-switchoverBytes)
		return m.segStart.Add(time.Duration(left / rate * float64(time.Second))), true
	case "post-migrating":
		if !m.moved {
			return m.phaseStart.Add(serverMovesAfter), true
		}
		return m.phaseStart.Add(completeAfter), true
	}
	return time.Time{}, false
}

func (w *World) apply(m *migration, at time.Time) {
	if m.cold() {
		w.applyCold(m, at)
		return
	}
	s := m.server
	switch m.status {
	case "accepted":
		if m.failAt == "precheck" {
			w.fail(m, at.Add(errorDelay-scheduleDelay), "conductor_live_migrate_instance",
				"Migration pre-check error: Live migration of instance "+s.ID+" is not supported: "+w.pinnedBy(s))
			return
		}
		if m.requestedHost != "" {
			// Since 2.30 (without force) the scheduler validates a requested host too.
			h := w.hosts[m.requestedHost]
			if w.noValidHost {
				w.fail(m, at.Add(errorDelay-scheduleDelay), "conductor_live_migrate_instance",
					"No valid host was found. There are not enough hosts available.")
				return
			}
			if !h.schedulable() || !w.fits(h, s) || !w.allowed(s, h) {
				// The scheduler's filters turn the requested host down (disabled, down, full):
				// Nova says NoValidHost, as for an unrequested host.
				w.fail(m, at.Add(errorDelay-scheduleDelay), "conductor_live_migrate_instance",
					"No valid host was found. There are not enough hosts available.")
				return
			}
			m.dest = h.Name
		} else {
			h, ok := w.schedule(s)
			if !ok {
				w.fail(m, at.Add(errorDelay-scheduleDelay), "conductor_live_migrate_instance",
					"No valid host was found. There are not enough hosts available.")
				return
			}
			m.dest = h.Name
		}
		m.setStatus("queued", at)
	case "queued":
		m.setStatus("preparing", at)
	case "preparing":
		if m.failAt == "preparing" {
			w.fail(m, at, "compute_pre_live_migration", "Error in pre_live_migration on "+m.dest+": libvirt: volume connection failed")
			return
		}
		m.setStatus("running", at)
		m.total = float64(s.Flavor.RAMMB) * (1 << 20)
		m.segStart, m.segRemaining, m.segProcessed, m.dirty = at, m.total, 0, s.DirtyBytesPerSec
		m.bw = w.opts.BandwidthBytesPerSec // until reshare gives it its share
	case "running":
		if m.failAt == "running" {
			w.fail(
				m,
				at,
				"compute_live_migration",
				"Live migration of "+s.ID+" failed: libvirtError: operation failed: migration job: unexpectedly failed",
			)
			return
		}
		m.rebase(at, m.bw, m.dirty)
		m.setStatus("post-migrating", at)
	case "post-migrating":
		if !m.moved {
			m.moved = true
			s.Host = m.dest
			s.Status, s.VMState, s.TaskState = m.restored(), m.origVMState, ""
			s.Updated = at
			return
		}
		m.setStatus("completed", at)
		w.finishAction(s, m.requestID, at, "")
	}
}

// fail ends a migration in error, leaving the server ACTIVE on its source, and records the
// failure in the instance action, where a client learns why.
func (w *World) fail(m *migration, at time.Time, event, details string) {
	m.setStatus("error", at)
	s := m.server
	s.Status, s.TaskState = m.restored(), ""
	s.Updated = at
	w.finishAction(m.server, m.requestID, at, event+"\x00"+details)
}

// forceComplete makes a running migration stop tracking dirty pages: it then converges at
// full bandwidth, as libvirt does when it pauses the guest.
func (w *World) forceComplete(m *migration, at time.Time) {
	m.rebase(at, m.bw, 0)
	m.forced = true
	if m.failAt == "running" {
		m.failAt = ""
	}
}

// abort cancels a migration; the server stays on its source.
func (w *World) abort(m *migration, at time.Time) {
	m.setStatus("cancelled", at)
	w.reshare(at)
	s := m.server
	s.Status, s.TaskState = m.restored(), ""
	s.Updated = at
	w.finishAction(s, m.requestID, at, "")
}

// countConcurrency records the most migrations, and the most distinct source hosts, ever
// unfinished at once: caps across every client are measured here, where all of them meet.
func (w *World) countConcurrency() {
	active, sources := 0, map[string]int{}
	for _, o := range w.migrations {
		if o.active() {
			active++
			sources[o.source]++
			w.stats.MaxFromOneSource = max(w.stats.MaxFromOneSource, sources[o.source])
		}
	}
	w.stats.MaxConcurrentMigrations = max(w.stats.MaxConcurrentMigrations, active)
	w.stats.MaxConcurrentSources = max(w.stats.MaxConcurrentSources, len(sources))
}
