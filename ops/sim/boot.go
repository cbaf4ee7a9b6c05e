package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Booting a server, as far as a canary needs it: POST /servers, the console log
// (os-getConsoleOutput) and DELETE /servers/{id}, as Nova answers them.
//
// Where it lands (nova/scheduler): a 2.74 "host" is a requested destination, and the
// scheduler's filters still run on it, so a host whose service is disabled (ComputeFilter),
// down or full ends the server in ERROR with NoValidHost. An admin's forced host
// ("availability_zone": "ZONE:HOST") skips the filters but not Placement: a disabled
// service's provider carries COMPUTE_STATUS_DISABLED, which the scheduler's request filter
// forbids to every request (Train on; measured on a real Nova: NoValidHost), and its claim
// may refuse a full host. A service that is down takes no build: the server stays BUILD
// until someone deletes it.

// bootTime is BUILD → ACTIVE on a healthy host (the fake driver's spawn, the port bound).
const bootTime = 4 * time.Second

// Host behaviours while booting, for tests and the demo (--demo-fault boot-error=HOST, ...).
type bootFaults struct {
	// BootError: a server spawned here ends in ERROR with this fault (a port that never binds).
	BootError string
	// BootHangs: the host's compute agent is stuck: a server spawned here stays
	// BUILD/spawning, a stop or a start here stays powering-off or powering-on (Nova's API
	// accepted it, 202; the agent never carries it out).
	BootHangs bool
	// ConsoleSilent: a server here writes nothing to its console log.
	ConsoleSilent bool
}

// AddFlavor adds a flavor to the catalog a boot chooses from (by its ID).
func (w *World) AddFlavor(id string, f Flavor) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.flavors == nil {
		w.flavors = map[string]Flavor{}
	}
	w.flavors[id] = f
}

// AddImage and AddNetwork add an image and a network a boot may use.
func (w *World) AddImage(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.images == nil {
		w.images = map[string]bool{}
	}
	w.images[id] = true
}

func (w *World) AddNetwork(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.networks == nil {
		w.networks = map[string]bool{}
	}
	w.networks[id] = true
}

// Booted lists the servers created through the API (not added by the world's owner), by
// name, whatever became of them: a test's proof that a canary was booted and deleted.
func (w *World) Booted() []VM {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]VM, 0, len(w.booted))
	for _, s := range w.booted {
		out = append(out, *s)
	}
	return out
}

type createRequest struct {
	Server struct {
		Name               string            `json:"name"`
		ImageRef           string            `json:"imageRef"`
		FlavorRef          string            `json:"flavorRef"`
		AvailabilityZone   string            `json:"availability_zone"`
		Host               *string           `json:"host"`
		HypervisorHostname *string           `json:"hypervisor_hostname"`
		Networks           json.RawMessage   `json:"networks"`
		Metadata           map[string]string `json:"metadata"`
	} `json:"server"`
}

func createServer(c *call) (int, any) {
	var req createRequest
	if err := json.NewDecoder(c.r.Body).Decode(&req); err != nil {
		return 400, faultf("Malformed request body")
	}
	rs := req.Server
	if rs.Name == "" {
		return 400, faultf("Invalid input for field/attribute server. Value: {}. 'name' is a required property")
	}
	if (rs.Host != nil || rs.HypervisorHostname != nil) && !c.mv.atLeast(74) {
		return 400, faultf("Invalid input for field/attribute server. Additional properties are not allowed ('host' was unexpected)")
	}
	flavor, ok := c.w.flavors[rs.FlavorRef]
	if !ok {
		return 400, faultf("Flavor %s could not be found.", rs.FlavorRef)
	}
	if !c.w.images[rs.ImageRef] {
		return 400, faultf("Image %s could not be found.", rs.ImageRef)
	}
	var nets []struct {
		UUID string `json:"uuid"`
	}
	// From 2.37 networks is a list, or "none" (no port at all) or "auto".
	var word string
	switch {
	case len(rs.Networks) == 0:
	case json.Unmarshal(rs.Networks, &word) == nil && c.mv.atLeast(37) && (word == "none" || word == "auto"):
	case json.Unmarshal(rs.Networks, &nets) != nil:
		return 400, faultf("Invalid input for field/attribute networks.")
	}
	for _, n := range nets {
		if !c.w.networks[n.UUID] {
			return 400, faultf("Network %s could not be found.", n.UUID)
		}
	}
	zone, forced, _ := strings.Cut(rs.AvailabilityZone, ":")
	if forced != "" && !c.s.userOf(c.r).may("os_compute_api:servers:create:forced_host") {
		return 403, policyFault("os_compute_api:servers:create:forced_host")
	}
	if (rs.Host != nil || rs.HypervisorHostname != nil) && !c.s.userOf(c.r).may("compute:servers:create:requested_destination") {
		return 403, policyFault("compute:servers:create:requested_destination")
	}
	if zone != "" && !c.w.zoneExists(zone) {
		return 400, faultf("The requested availability zone is not available")
	}
	requested := ""
	if rs.Host != nil {
		requested = *rs.Host
		if c.w.hosts[requested] == nil {
			return 400, faultf("Compute host %s could not be found.", requested)
		}
	}
	s := &VM{ID: c.w.uuid(), Name: rs.Name, Instance: fmt.Sprintf("instance-%08x", c.w.nextInst),
		Status: "BUILD", VMState: "building", TaskState: "scheduling", Flavor: flavor, Image: rs.ImageRef,
		ProjectID: "72fb02d64abf44308848350085dcaae2", UserID: "af0b6723cc4a4ab18203d089bc34dd16",
		Created: c.now, Updated: c.now, Metadata: rs.Metadata}
	s.DirtyBytesPerSec = guestDirtyRate(rs.Metadata)
	c.w.nextInst++
	c.w.place(s, forced, requested, zone)
	c.w.servers[s.ID] = s
	c.w.actions[s.ID] = nil
	c.w.recordNamedAction(s, "create", "", c.reqID, c.now)
	c.w.finishAction(s, c.reqID, c.now, "")
	c.w.booted = append(c.w.booted, s)
	c.w.changes++
	self := c.s.URL + "/compute/v2.1/servers/" + s.ID
	return 202, map[string]any{"server": map[string]any{
		"id": s.ID, "OS-DCF:diskConfig": "MANUAL", "adminPass": c.w.hex(12),
		"links": []map[string]any{
			{"href": self, "rel": "self"},
			{"href": c.s.URL + "/compute/servers/" + s.ID, "rel": "bookmark"},
		},
		"security_groups": []map[string]any{{"name": "default"}},
	}}
}

// place is the scheduler's answer to a new server: its host and when its build ends.
func (w *World) place(s *VM, forced, requested, zone string) {
	noValidHost := func(why string) {
		s.Status, s.VMState, s.TaskState, s.Fault = "ERROR", "error", "", "No valid host was found. "+why
	}
	switch {
	case forced != "":
		h := w.hosts[forced]
		if h == nil {
			noValidHost("No such host - host: " + forced + " node: None")
			return
		}
		if !h.Enabled { // compute_status_filter: Placement offers no disabled provider
			noValidHost("")
			return
		}
		if !w.fits(h, s) { // Placement still claims a forced host's room
			noValidHost("There are not enough hosts available.")
			return
		}
		s.Host = h.Name
	case requested != "":
		h := w.hosts[requested]
		if !h.Enabled { // Placement offers no disabled provider: nothing for the filters to say
			noValidHost("")
			return
		}
		if w.noValidHost || !h.schedulable() || !w.fits(h, s) || (zone != "" && h.Zone != zone) {
			noValidHost("There are not enough hosts available.")
			return
		}
		s.Host = h.Name
	default:
		h, ok := w.schedule(s)
		if !ok || (zone != "" && h.Zone != zone) {
			noValidHost("There are not enough hosts available.")
			return
		}
		s.Host = h.Name
	}
	s.TaskState = "spawning"
	if h := w.hosts[s.Host]; h.Up && !h.ForcedDown && !h.BootHangs {
		s.bootDone = w.clock.Now().Add(bootTime)
		w.building = append(w.building, s)
	}
}

// advanceBuilds ends the builds and power actions due by now: ACTIVE, or ERROR where the
// host breaks a boot; SHUTOFF or ACTIVE for a stop or a start.
func (w *World) advanceBuilds(now time.Time) {
	left := w.building[:0]
	for _, s := range w.building {
		if w.servers[s.ID] != s || (s.Status != "BUILD" && s.powerTo == "") {
			continue
		}
		if now.Before(s.bootDone) {
			left = append(left, s)
			continue
		}
		if s.powerTo != "" {
			s.Status, s.VMState, s.TaskState, s.Updated = s.powerTo, vmStates[s.powerTo], "", s.bootDone
			w.finishAction(s, s.powerReq, s.bootDone, "")
			s.powerTo, s.powerReq = "", ""
			w.changes++
			continue
		}
		s.Status, s.VMState, s.TaskState, s.Updated = "ACTIVE", "active", "", s.bootDone
		if h := w.hosts[s.Host]; h != nil && h.BootError != "" {
			s.Status, s.VMState, s.Fault = "ERROR", "error", fmt.Sprintf("Build of instance %s aborted: %s", s.ID, h.BootError)
		}
		w.changes++
	}
	w.building = left
}

func (w *World) zoneExists(zone string) bool {
	for _, h := range w.hosts {
		if h.Zone == zone {
			return true
		}
	}
	return false
}

// consoleOutput is the os-getConsoleOutput action: the log's last length lines.
func consoleOutput(c *call, s *VM, raw json.RawMessage) (int, any) {
	var req struct {
		Length *int `json:"length"`
	}
	if len(raw) > 0 && string(raw) != "null" && json.Unmarshal(raw, &req) != nil {
		return 400, faultf("Invalid input for field/attribute os-getConsoleOutput.")
	}
	if s.Host == "" {
		return 409, faultf("Instance %s is not ready", s.ID)
	}
	out := ""
	if h := c.w.hosts[s.Host]; s.Status == "ACTIVE" && (h == nil || !h.ConsoleSilent) {
		lines := []string{
			"[    0.000000] Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org)",
			"[    1.204113] virtio_net virtio1 ens3: renamed from eth0",
			"cloud-init[412]: Cloud-init v. 22.4.2 finished. Datasource DataSourceOpenStackLocal.",
			s.Name + " login:",
		}
		if req.Length != nil && *req.Length >= 0 && *req.Length < len(lines) {
			lines = lines[len(lines)-*req.Length:]
		}
		out = strings.Join(lines, "\n") + "\n"
	}
	return 200, map[string]any{"output": out}
}

// Power actions, as Nova's compute API checks them (check_instance_state) and a real Nova on
// the fake driver carried them out (measured): os-stop from ACTIVE, RESCUED or ERROR
// (powering-off, then SHUTOFF), os-start from stopped (powering-on, then ACTIVE), pause
// from ACTIVE (pausing, then PAUSED), unpause from paused. Each is an instance action under
// its request's ID; a lock refuses a non-admin (check_instance_lock).
var powerActions = map[string]struct {
	to, task, event string
	took            time.Duration
	from            []string
}{
	"os-stop":  {"SHUTOFF", "powering-off", "compute_stop_instance", time.Second, []string{"active", "rescued", "error"}},
	"os-start": {"ACTIVE", "powering-on", "compute_start_instance", 2 * time.Second, []string{"stopped"}},
	"pause":    {"PAUSED", "pausing", "compute_pause_instance", 200 * time.Millisecond, []string{"active"}},
	"unpause":  {"ACTIVE", "unpausing", "compute_unpause_instance", 200 * time.Millisecond, []string{"paused"}},
}

// vmStates are the vm_state of each status a power action ends in.
var vmStates = map[string]string{"SHUTOFF": "stopped", "ACTIVE": "active", "PAUSED": "paused"}

func powerAction(c *call, s *VM, action string) (int, any) {
	p := powerActions[action]
	name := strings.TrimPrefix(action, "os-")
	if f := cmp.Or(c.lockRefused(s), refused(s, name, p.from...)); f != "" {
		return 409, f
	}
	s.TaskState, s.powerTo, s.powerReq, s.bootDone, s.Updated = p.task, p.to, c.reqID, c.now.Add(p.took), c.now
	c.w.recordNamedAction(s, name, p.event, c.reqID, c.now)
	c.w.lastAction(s).Events[0].Host = s.Host // the compute host's event
	if h := c.w.hosts[s.Host]; h == nil || !h.BootHangs {
		c.w.building = append(c.w.building, s)
	}
	c.w.changes++
	return 202, nil
}

// lockAction is lock and unlock: 202, in any state, an instance action each; a lock's
// reason from 2.73.
func lockAction(c *call, s *VM, raw json.RawMessage, lock bool) (int, any) {
	var req struct {
		Reason *string `json:"locked_reason"`
	}
	if lock && len(raw) > 0 && string(raw) != "null" && json.Unmarshal(raw, &req) != nil {
		return 400, faultf("Invalid input for field/attribute lock.")
	}
	s.Locked, s.LockedReason = lock, ""
	if lock && req.Reason != nil {
		s.LockedReason = *req.Reason
	}
	name := map[bool]string{true: "lock", false: "unlock"}[lock]
	c.w.recordNamedAction(s, name, "", c.reqID, c.now)
	c.w.finishAction(s, c.reqID, c.now, "")
	s.Updated = c.now
	c.w.changes++
	return 202, nil
}

// updateMetadata is POST /servers/{id}/metadata: the keys given are set, the others kept.
func updateMetadata(c *call) (int, any) {
	s, f := c.server()
	if f != "" {
		return 404, f
	}
	var req struct {
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(c.r.Body).Decode(&req); err != nil || req.Metadata == nil {
		return 400, faultf("Invalid input for field/attribute metadata.")
	}
	for k, v := range req.Metadata {
		if len(k) > 255 || len(v) > 255 {
			return 400, faultf("Invalid input for field/attribute %s. Value: %s. '%s' is too long", k, v, v)
		}
	}
	if st, f := metadataState(s, "update metadata"); st != 0 {
		return st, f
	}
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	for k, v := range req.Metadata {
		s.Metadata[k] = v
	}
	s.Updated = c.now
	c.w.changes++
	return 200, map[string]any{"metadata": metadataJSON(s.Metadata)}
}

// deleteMetadatum is DELETE /servers/{id}/metadata/{key}: 204, 404 for a key it lacks.
func deleteMetadatum(c *call) (int, any) {
	s, f := c.server()
	if f != "" {
		return 404, f
	}
	key := c.r.PathValue("key")
	if _, ok := s.Metadata[key]; !ok {
		return 404, faultf("Metadata item was not found")
	}
	if st, f := metadataState(s, "delete metadata"); st != 0 {
		return st, f
	}
	delete(s.Metadata, key)
	s.Updated = c.now
	c.w.changes++
	return 204, nil
}

// metadataState is Nova's check before a server's metadata changes (409, measured on the real
// Nova: a cold move awaiting its confirmation is vm_state resized): only an active, paused,
// suspended or stopped server with no task under way. An admin's call passes a lock.
func metadataState(s *VM, what string) (int, novaFault) {
	switch {
	case !slices.Contains([]string{"active", "paused", "suspended", "stopped"}, s.VMState):
		return 409, faultf("Cannot '%s' instance %s while it is in vm_state %s", what, s.ID, s.VMState)
	case s.TaskState != "":
		return 409, faultf("Cannot '%s' instance %s while it is in task_state %s", what, s.ID, s.TaskState)
	}
	return 0, ""
}

// deleteServer is DELETE /servers/{id}: 204, the server gone from the lists.
func deleteServer(c *call) (int, any) {
	s, f := c.server()
	if f != "" {
		return 404, f
	}
	if s.Locked && !c.s.userOf(c.r).may("os_compute_api:os-lock-server:unlock:unlock_override") {
		return 409, faultf("Instance %s is locked", s.ID)
	}
	delete(c.w.servers, s.ID)
	s.Status, s.VMState, s.TaskState, s.Updated = "DELETED", "deleted", "", c.now
	c.w.deleted = append(c.w.deleted, s)
	c.w.changes++
	return 204, nil
}
