package model

import (
	"strings"
	"time"
)

// VM is a Nova server.
type VM struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Host string `json:"host"` // OS-EXT-SRV-ATTR:host, the compute service host
	// Phase and Task are where it stands and what Nova is doing to it: the engine decides by
	// them. Status, TaskState and VMState are Nova's own words for them, shown as Nova wrote
	// them and never compared.
	Phase     VMPhase `json:"phase"`
	Task      VMTask  `json:"task,omitempty"`
	Status    string  `json:"status"`
	TaskState string  `json:"taskState,omitempty"`
	VMState   string  `json:"vmState,omitempty"`
	Locked    bool    `json:"locked"`
	Flavor    string  `json:"flavor,omitempty"`
	RAMMB     int64   `json:"ramMB"`
	VCPUs     int     `json:"vcpus"`
	DiskGB    int64   `json:"diskGB"`
	ProjectID string  `json:"projectID,omitempty"`
	// Fault is Nova's fault message of an ERROR server (shown as Nova wrote it, escaped).
	Fault string `json:"fault,omitempty"`
	// Pinned names the flavor extra spec that ties the VM to its host's hardware (a PCI
	// device, a vGPU), so that it cannot live-migrate; "" when none does.
	Pinned string `json:"pinned,omitempty"`
	// Method is how an evacuation moves it: set in a plan (policy.VMMove), empty elsewhere.
	Method MoveMethod `json:"method,omitempty"`
	// Zone is its availability zone (OS-EXT-AZ:availability_zone): it moves within it.
	Zone string `json:"zone,omitempty"`
	// AntiAffinity names the hard anti-affinity server groups it belongs to, ", "-separated
	// (a string keeps VM comparable): it may not go to a host that holds another member of
	// one. Set by Join from the server groups.
	AntiAffinity string `json:"antiAffinity,omitempty"`
	// VolumeBacked: it boots from a volume (Nova shows no image), so a rebuild elsewhere
	// keeps its disk; an image-backed VM keeps it only on shared instance storage.
	VolumeBacked bool `json:"volumeBacked,omitempty"`
	// Disk is what a rebuild elsewhere does to its disk: set in a recovery's plan.
	Disk string `json:"disk,omitempty"`
	// Image is the ID of the image it booted from ("" from a volume).
	Image string `json:"image,omitempty"`
	// PolicyAsked is its owner's policy as its metadata says it (VMPolicyKey), unchecked
	// cluster text; "" when it says none.
	PolicyAsked string `json:"policyAsked,omitempty"`
	// PriorityAsked is its owner's recovery priority as its metadata says it
	// (RecoveryPriorityKey), unchecked.
	PriorityAsked string `json:"priorityAsked,omitempty"`
	// GroupAsked and MaxDisruptedAsked are its owner's group and that group's disruption
	// budget as its metadata says them (GroupKey, MaxDisruptedKey), unchecked.
	GroupAsked        string `json:"groupAsked,omitempty"`
	MaxDisruptedAsked string `json:"maxDisruptedAsked,omitempty"`
	// Notice is drainctl's notice to its owner as its metadata says it now (NoticeKey),
	// unchecked: ParseOwnerNotice reads it.
	Notice string `json:"notice,omitempty"`
	// MoveNowAsked is its owner's answer to a notice as its metadata says it (MoveNowKey).
	MoveNowAsked string `json:"moveNowAsked,omitempty"`
	// WindowAsked is its owner's maintenance window as its metadata says it (WindowKey),
	// unchecked.
	WindowAsked string `json:"windowAsked,omitempty"`
	// Updated is Nova's last change to the server (its updated_at; setting its metadata is
	// one, measured on the real Nova): an owner's stays counts for [policy.maintenance]
	// stays_for days from it.
	Updated time.Time `json:"updated,omitzero"`
	// Policy is how the plan treats it and PolicyFrom where that comes from (its metadata,
	// a [policy.maintenance] key; "" for the built-in default, migrate): set in a plan.
	Policy     VMPolicy `json:"policy,omitempty"`
	PolicyFrom string   `json:"policyFrom,omitempty"`
}

// VMPhase is where a server stands as the engine acts on it, read from its status by ops/nova
// (the one place that names Nova's statuses). The engine decides by phase: a status Nova adds
// lands in ops/nova's table (one row), and every status not named there is PhaseOther, which
// the engine leaves where it is.
type VMPhase int

const (
	PhaseOther           VMPhase = iota // SUSPENDED, SHELVED…: nothing the engine acts on
	PhaseRunning                        // running (ACTIVE)
	PhaseStopped                        // stopped (SHUTOFF)
	PhasePaused                         // paused: moves live, never cold
	PhaseBroken                         // in error
	PhaseMovingLive                     // a live migration under way
	PhaseMovingCold                     // a cold migration under way
	PhaseAwaitingConfirm                // moved cold, its confirm or revert awaited
	PhaseReverting                      // a cold move being undone
	PhaseRebuilding                     // rebuilt elsewhere (an evacuation)
)

var phaseNames = [...]string{"another status", "running", "stopped", "paused", "broken", "moving live", "moving cold",
	"awaiting its confirm", "reverting a cold move", "being rebuilt"}

// String names the phase in the engine's words (Nova's own is the VM's Status).
func (p VMPhase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return phaseNames[PhaseOther]
}

// InColdMove: a cold migration holds the server (moving, awaiting its confirm, or undone).
func (p VMPhase) InColdMove() bool {
	return p == PhaseMovingCold || p == PhaseAwaitingConfirm || p == PhaseReverting
}

// VMTask is what Nova is doing to the server (its task_state), read by ops/nova. The cold
// move's steps are in the order Nova takes them.
type VMTask int

const (
	TaskNone           VMTask = iota
	TaskOther                 // a task the engine does not follow: the server is busy
	TaskMigrating             // a live migration
	TaskColdPrep              // a cold move: preparing
	TaskColdMigrating         // …copying the disk
	TaskColdMigrated          // …copied
	TaskColdFinish            // …finishing on the destination
	TaskColdReverting         // a cold move being undone
	TaskColdConfirming        // a cold move being confirmed
	TaskRebuilding            // a rebuild elsewhere, any of its steps
	TaskPoweringOff           // a stop
)

// ColdStep is the task's place among a cold move's steps (1 to ColdSteps), 0 for any other task.
func (t VMTask) ColdStep() int {
	if t >= TaskColdPrep && t <= TaskColdFinish {
		return int(t-TaskColdPrep) + 1
	}
	return 0
}

// ColdSteps is how many steps a cold move's task goes through.
const ColdSteps = int(TaskColdFinish-TaskColdPrep) + 1

// InColdMove: the task is one of a cold move's (resizing, reverting, confirming).
func (t VMTask) InColdMove() bool { return t >= TaskColdPrep && t <= TaskColdConfirming }

// Busy: Nova has a task under way on the server, whatever its phase.
func (v VM) Busy() bool { return v.Task != TaskNone }

// ServerGroup is a Nova server group (os-server-groups).
type ServerGroup struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Policy  string   `json:"policy"` // anti-affinity, affinity, soft-anti-affinity, soft-affinity
	Members []string `json:"members"`
}

// Legal reports whether the VM may be placed on a host of zone whose VMs belong to groups
// (the anti-affinity groups with a member there), and if not, why.
func (v VM) Legal(zone string, groups map[string]bool) (bool, string) {
	if v.Zone != "" && zone != "" && zone != v.Zone {
		return false, "zone " + v.Zone
	}
	for _, g := range v.Groups() {
		if groups[g] {
			return false, "anti-affinity group " + g
		}
	}
	return true, ""
}

// Groups are the names of its hard anti-affinity groups.
func (v VM) Groups() []string {
	if v.AntiAffinity == "" {
		return nil
	}
	return strings.Split(v.AntiAffinity, ", ")
}

// MoveMethod is how an evacuation takes a VM off its host.
type MoveMethod string

// Move methods. A VM without a host (SHELVED_OFFLOADED) is on no node and has none.
const (
	MoveLive MoveMethod = "live" // live migration: no downtime (ACTIVE, PAUSED)
	// MoveCold: migrate, then confirmResize (SHUTOFF; a running VM only under
	// --cold-migrate-running).
	MoveCold   MoveMethod = "cold"
	MoveFollow MoveMethod = "follow" // already moving (someone's migration): followed to its end
	MoveStays  MoveMethod = "stays"  // cannot or may not move: a typed reason says why
	// MoveRebuild: its host is dead; Nova's evacuate rebuilds it on another host (recover).
	MoveRebuild MoveMethod = "rebuild"
	// MoveRestart: restart-in-place, its own policy: stopped on its host before the node's
	// step, started there again once the node returns (uncordon); it does not move.
	MoveRestart MoveMethod = "restart"
)

// PinningSpec reports whether a flavor extra spec ties a VM to its host's hardware, so
// that Nova cannot live-migrate it: a PCI passthrough alias, a virtual or physical GPU,
// any other device resource a host holds (resources:CUSTOM_*, e.g. an FPGA or NIC VF).
func PinningSpec(key, value string) bool {
	switch {
	case key == "pci_passthrough:alias", key == "resources:VGPU", key == "resources:PGPU":
		return value != "" && value != "0"
	case strings.HasPrefix(key, "resources:CUSTOM_"), strings.HasPrefix(key, "accel:device_profile"):
		return value != "" && value != "0"
	}
	return false
}

// ShortID is the first block of the VM's UUID, enough to tell VMs apart on a screen.
func (v VM) ShortID() string {
	if len(v.ID) > 8 {
		return v.ID[:8]
	}
	return v.ID
}

// Migration is a Nova migration record (os-migrations or a server's migrations).
type Migration struct {
	ID            int64           `json:"id"`
	UUID          string          `json:"uuid,omitempty"`
	InstanceID    string          `json:"instanceID"`
	Type          string          `json:"type"`
	Status        MigrationStatus `json:"status"`
	SourceCompute string          `json:"sourceCompute"`
	DestCompute   string          `json:"destCompute,omitempty"`
	// Byte counters are nil while Nova does not know them (null in the API), never zero.
	MemoryTotal     *int64    `json:"memoryTotalBytes,omitempty"`
	MemoryProcessed *int64    `json:"memoryProcessedBytes,omitempty"`
	MemoryRemaining *int64    `json:"memoryRemainingBytes,omitempty"`
	DiskTotal       *int64    `json:"diskTotalBytes,omitempty"`
	DiskProcessed   *int64    `json:"diskProcessedBytes,omitempty"`
	DiskRemaining   *int64    `json:"diskRemainingBytes,omitempty"`
	UpdatedAt       time.Time `json:"updatedAt,omitempty"`
	CreatedAt       time.Time `json:"createdAt,omitempty"`
}

// stuckAfter is how long a migration may sit in one state before doctor calls it stuck.
const stuckAfter = 15 * time.Minute

// Stuck reports whether an unfinished migration has not changed state for a long time.
func (m Migration) Stuck(now time.Time) bool {
	return m.InProgress() && !m.UpdatedAt.IsZero() && now.Sub(m.UpdatedAt) > stuckAfter
}

// InProgress reports whether the migration has not reached a final state.
func (m Migration) InProgress() bool { return !m.Status.Final() }

// MigrationStatus is a Nova migration's status, mapped once from Nova's strings (ops/nova):
// its several words for "finished" are one status here, and so are its words for failure.
type MigrationStatus string

// The statuses of a live migration, in order, then its ends.
const (
	MigrationAccepted      MigrationStatus = "accepted"
	MigrationQueued        MigrationStatus = "queued"
	MigrationPreparing     MigrationStatus = "preparing"
	MigrationRunning       MigrationStatus = "running"
	MigrationPostMigrating MigrationStatus = "post-migrating"
	// MigrationFinished: a cold migration (or resize) has moved the server, which waits in
	// VERIFY_RESIZE for confirmResize (or revertResize). Nova's "finished".
	MigrationFinished  MigrationStatus = "finished"
	MigrationCompleted MigrationStatus = "completed" // Nova: completed, done, confirmed
	MigrationFailed    MigrationStatus = "failed"    // Nova: error, failed
	MigrationCancelled MigrationStatus = "cancelled" // aborted by a user
	MigrationReverted  MigrationStatus = "reverted"
	// A cold move's confirm or revert under way (Nova's words, kept as they are).
	MigrationConfirming MigrationStatus = "confirming"
	MigrationReverting  MigrationStatus = "reverting"
)

// The kinds of Nova migration records (Migration.Type), as Nova names them.
const (
	MigrationTypeLive       = "live-migration"
	MigrationTypeCold       = "migration"
	MigrationTypeResize     = "resize"
	MigrationTypeEvacuation = "evacuation"
)

// Final reports whether the migration has ended (any way).
func (s MigrationStatus) Final() bool {
	switch s {
	case MigrationCompleted, MigrationFailed, MigrationCancelled, MigrationReverted:
		return true
	}
	return false
}

// InstanceAction is a server's stop, start or cold move as Nova's instance actions keep it:
// the request that asked it and who.
type InstanceAction struct {
	Action    string `json:"action"` // stop, start, migrate, resize
	RequestID string `json:"request_id"`
	UserID    string `json:"user_id"`
}
