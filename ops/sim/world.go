package sim

import (
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"sort"
	"sync"
	"time"
)

// Host is a compute host: its nova-compute service and its hypervisor.
type Host struct {
	Name           string
	ServiceID      string
	HypervisorID   string
	Zone           string
	Enabled        bool
	DisabledReason string
	Up             bool
	ForcedDown     bool
	VCPUs          int
	MemoryMB       int64
	DiskGB         int64
	updated        time.Time // its service changed through the API
	died           time.Time // its nova-compute stopped (KillHost): its last report
	index          int       // for integer ids below 2.53
	bootFaults
}

// VM is a server (an instance) in Nova.
type VM struct {
	ID        string
	Name      string
	Instance  string // instance-0000000N
	Host      string
	Status    string
	TaskState string // "" is null
	VMState   string
	Locked    bool
	// LockedReason is the lock's reason (2.73+), "" for none.
	LockedReason string
	Flavor       Flavor
	ProjectID    string
	UserID       string
	Created      time.Time
	Updated      time.Time
	// Behaviour in a live migration.
	DirtyBytesPerSec float64 // pages dirtied per second while copying; >= bandwidth never converges
	FailAt           string  // "preparing" or "running": the next migration errors there
	FailOnce         bool    // FailAt applies to the first migration only
	migrations       int
	// Fault is the fault message an ERROR server shows (set with Break).
	Fault string
	// VolumeBacked: booted from a volume; Nova shows its image as "".
	VolumeBacked bool
	// Metadata is the server's metadata, its owner's to set.
	Metadata map[string]string
	// Image is the image it booted from ("" : the world's one image).
	Image    string
	bootDone time.Time // BUILD → ACTIVE, or a power action's end (boot.go)
	powerTo  string    // a power action's end status: SHUTOFF, ACTIVE, PAUSED ("": a boot)
	powerReq string    // the request ID of the power action under way (its instance action)
}

// Flavor is a server's flavor as embedded in the server (2.47+).
type Flavor struct {
	Name   string
	RAMMB  int64
	VCPUs  int
	DiskGB int64
	// ExtraSpecs as Nova shows them to an admin; a PCI alias or a vGPU resource makes the
	// conductor refuse a live migration (cold ones are allowed).
	ExtraSpecs map[string]string
}

// Options shape a world.
type Options struct {
	Seed  int64
	Scale float64   // simulated seconds per real second (default 1)
	Start time.Time // simulated start (default 2026-11-21T06:00:00Z)
	// BandwidthBytesPerSec is the live-migration copy rate (default 1 GiB/s).
	BandwidthBytesPerSec float64
	// MaxConcurrentLiveMigrations per source host (Nova's default is 1).
	MaxConcurrentLiveMigrations int
	// CPUAllocationRatio and RAMAllocationRatio are Nova's (defaults 4.0 and 1.0).
	CPUAllocationRatio float64
	RAMAllocationRatio float64
	// ReservedHostMemoryMB is held back on every hypervisor (Nova's default 512).
	ReservedHostMemoryMB int64
	// NoPlacement leaves the Placement API out of the catalog (an old cloud, a restricted
	// catalog): clients fall back to os-hypervisors.
	NoPlacement bool
	// TokenTTL is how long a Keystone token lives, in real time (default 1h).
	TokenTTL time.Duration
	// Users are the Keystone users; default: admin/secret in project admin.
	Users []User
	// Neutron puts the network API in the catalog (ports, for their vnic types).
	Neutron bool
	// HideExtraSpecs shows flavors without their extra specs, as Nova does to a user whose
	// policy does not allow reading them: a client then learns of a pinned VM only when Nova
	// refuses to live-migrate it.
	HideExtraSpecs bool
	// ManualClock stops simulated time: it moves only by Clock().Advance (tests that must
	// see each state of a migration).
	ManualClock bool
	// RecordDelay is how long after its 202 a live or cold migration's record appears
	// (default 50 ms, as a real Nova's conductor makes it; a stuck conductor: hours).
	RecordDelay time.Duration
}

// User is a Keystone identity the simulator accepts.
type User struct {
	Name, Password, Domain, Project string
	// An application credential, if set, authenticates on its own.
	AppCredID, AppCredName, AppCredSecret string
	// Rules, when not nil, are the only Nova and Placement policy rules the user may use (a
	// member granted them in policy.yaml); nil: the admin role, every rule (policy.go).
	Rules []string
}

// World is the simulated Nova state. All methods are safe for concurrent use.
type World struct {
	mu    sync.Mutex
	opts  Options
	clock *Clock
	rng   *rand.Rand
	took  []answer // KeepAnswers: how long each answer of Nova's API took (nil: not kept)

	hosts      map[string]*Host
	hostOrder  []string
	servers    map[string]*VM
	deleted    []*VM        // tombstones: a changes-since list shows them (status DELETED)
	migrations []*migration // in creation order
	actions    map[string][]*action
	nextMigID  int64
	nextInst   int
	lastEvent  time.Time
	// changes counts edits made outside the migration machinery (hosts and servers added,
	// Update); with lastEvent and the migrations it keys the allocations' index.
	changes int
	alloc   *allocIndex
	// generations: each provider's Placement generation, moved on when its allocations are
	// seen to have changed since (placement.go).
	generations map[string]providerGen
	faults      []*Fault
	noValidHost bool
	sharedLink  float64  // moves the migration network carries at full speed (0: no shared link; SetSharedLink)
	sorted      struct { // sortedServers' last answer, at changes
		list    []*VM
		changes int
	}
	byHypervisorID map[string]*Host // Placement's provider uuid -> host
	groups         []*serverGroup
	ports          []*port
	// What a boot may use and what it made (boot.go).
	flavors  map[string]Flavor
	images   map[string]bool
	networks map[string]bool
	booted   []*VM
	building []*VM
	leaked   map[string]map[string]Flavor // orphaned allocations: host → consumer → size

	tokens map[string]token
	stats  Stats
}

// Stats counts requests, for tests and benchmarks.
type Stats struct {
	Requests int
	ByRoute  map[string]int
	// Bytes are the response bodies' bytes by API: nova, placement, keystone, neutron.
	Bytes     map[string]int64
	Mutations int
	// MaxConcurrentMigrations is the most live migrations ever unfinished at once (a cap
	// across every client is measured here, where all of them meet).
	MaxConcurrentMigrations int
	// MaxConcurrentSources is the most hosts ever being emptied at once (concurrency.nodes).
	MaxConcurrentSources int
	// MaxFromOneSource is the most migrations ever unfinished at once from one host
	// (migrations_per_source, across every run and client).
	MaxFromOneSource int
}

// NewWorld makes an empty world.
func NewWorld(opts Options) *World {
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)
	}
	if opts.RecordDelay == 0 {
		opts.RecordDelay = recordDelay
	}
	if opts.BandwidthBytesPerSec == 0 {
		opts.BandwidthBytesPerSec = 1 << 30
	}
	if opts.MaxConcurrentLiveMigrations == 0 {
		opts.MaxConcurrentLiveMigrations = 1
	}
	if opts.CPUAllocationRatio == 0 {
		opts.CPUAllocationRatio = 4
	}
	if opts.RAMAllocationRatio == 0 {
		opts.RAMAllocationRatio = 1
	}
	if opts.ReservedHostMemoryMB == 0 {
		opts.ReservedHostMemoryMB = 512
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = time.Hour
	}
	if len(opts.Users) == 0 {
		opts.Users = []User{{Name: "admin", Password: "secret", Domain: "Default", Project: "admin"}}
	}
	clock := NewClock(opts.Start, opts.Scale)
	clock.manual = opts.ManualClock
	return &World{
		opts: opts, clock: clock, rng: rand.New(rand.NewSource(opts.Seed)),
		hosts: map[string]*Host{}, servers: map[string]*VM{}, actions: map[string][]*action{},
		nextMigID: 1, nextInst: 1, tokens: map[string]token{}, stats: Stats{ByRoute: map[string]int{}, Bytes: map[string]int64{}},
	}
}

// Clock is the world's simulated clock.
func (w *World) Clock() *Clock { return w.clock }

// uuid makes a random (seeded) UUID.
func (w *World) uuid() string {
	b := make([]byte, 16)
	w.rng.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func (w *World) hex(n int) string {
	b := make([]byte, n/2)
	w.rng.Read(b)
	return fmt.Sprintf("%x", b)
}

// AddHost adds a compute host with an enabled, up nova-compute service.
func (w *World) AddHost(name string, vcpus int, memoryMB, diskGB int64) *Host {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := &Host{Name: name, ServiceID: w.uuid(), HypervisorID: w.uuid(), Zone: "nova", Enabled: true, Up: true,
		VCPUs: vcpus, MemoryMB: memoryMB, DiskGB: diskGB, updated: w.clock.Now(), index: len(w.hostOrder) + 3}
	w.hosts[name] = h
	w.hostOrder = append(w.hostOrder, name)
	w.changes++
	return h
}

// AddServer boots a server on a host, ACTIVE.
func (w *World) AddServer(name, host string, f Flavor) *VM {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	s := &VM{ID: w.uuid(), Name: name, Instance: fmt.Sprintf("instance-%08x", w.nextInst), Host: host,
		Status: "ACTIVE", VMState: "active", Flavor: f, ProjectID: "72fb02d64abf44308848350085dcaae2",
		UserID: "af0b6723cc4a4ab18203d089bc34dd16", Created: now, Updated: now}
	w.nextInst++
	w.servers[s.ID] = s
	w.changes++
	return s
}

// Update runs f with the world locked, for tests and the demo to change state directly
// (a VM's behaviour, a service going down). The clock is advanced first.
func (w *World) Update(f func(hosts map[string]*Host, servers map[string]*VM)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.advance(now)
	before := make(map[string]VM, len(w.servers))
	for id, s := range w.servers {
		before[id] = *s
	}
	f(w.hosts, w.servers)
	for id, s := range w.servers { // what f changed is updated now, as Nova's updated_at says
		if b, ok := before[id]; !ok || !reflect.DeepEqual(b, *s) {
			s.Updated = now
		}
	}
	w.changes++
	// A guest whose dirty rate changed mid-copy converges (or not) from now on.
	for _, m := range w.migrations {
		if m.status == "running" && !m.forced && m.dirty != m.server.DirtyBytesPerSec {
			m.rebase(now, m.bw, m.server.DirtyBytesPerSec)
		}
	}
}

// DeleteServer deletes a server as Nova does: gone from the lists, but shown as DELETED to
// a changes-since list (admin, all tenants).
func (w *World) DeleteServer(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, s := range w.servers {
		if s.Name == name {
			delete(w.servers, id)
			s.Status, s.VMState, s.TaskState, s.Updated = "DELETED", "deleted", "", w.clock.Now()
			w.deleted = append(w.deleted, s)
			w.changes++
			return true
		}
	}
	return false
}

// SetNoValidHost makes every scheduling decision fail, as when no host has room.
func (w *World) SetNoValidHost(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noValidHost = on
}

// Stats returns a copy of the request counters.
func (w *World) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.ByRoute = make(map[string]int, len(w.stats.ByRoute))
	for k, v := range w.stats.ByRoute {
		s.ByRoute[k] = v
	}
	s.Bytes = maps.Clone(w.stats.Bytes)
	return s
}

// ResetStats zeroes the request counters.
func (w *World) ResetStats() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stats = Stats{ByRoute: map[string]int{}, Bytes: map[string]int64{}}
}

// ServerByName finds a server by display name.
func (w *World) ServerByName(name string) (VM, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(w.clock.Now())
	for _, s := range w.servers {
		if s.Name == name {
			return *s, true
		}
	}
	return VM{}, false
}

// Host returns a copy of a host's state.
func (w *World) Host(name string) (Host, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.hosts[name]
	if !ok {
		return Host{}, false
	}
	return *h, true
}

// MigrationStatuses returns the sequence of statuses each migration of a server went through.
func (w *World) MigrationStatuses(serverID string) [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advance(w.clock.Now())
	var out [][]string
	for _, m := range w.migrations {
		if m.server.ID == serverID {
			out = append(out, append([]string(nil), m.history...))
		}
	}
	return out
}

// MigrationIDs returns the IDs of a server's migrations, in the order they were made.
func (w *World) MigrationIDs(serverID string) []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int64
	for _, m := range w.migrations {
		if m.server.ID == serverID {
			out = append(out, m.id)
		}
	}
	return out
}

// sortedServers returns servers newest first, then by id, as Nova sorts them by default.
// The order is kept until servers are added or changed by hand (changes): a page of
// 1,000 out of 50,000 costs a lookup, as in Nova's database, not a sort.
func (w *World) sortedServers() []*VM {
	if w.sorted.list != nil && w.sorted.changes == w.changes && len(w.sorted.list) == len(w.servers) {
		return w.sorted.list
	}
	list := make([]*VM, 0, len(w.servers))
	for _, s := range w.servers {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].Created.Equal(list[j].Created) {
			return list[i].Created.After(list[j].Created)
		}
		return list[i].ID > list[j].ID
	})
	w.sorted.list, w.sorted.changes = list, w.changes
	return list
}

// usage is what a host's servers and incoming migrations hold.
type usage struct {
	vcpus   int
	ramMB   int64
	diskGB  int64
	servers int
}

func (w *World) usage(host string) usage { return w.usageAll()[host] }

// usageAll is every host's usage in one pass over the servers and migrations.
func (w *World) usageAll() map[string]usage {
	all := make(map[string]usage, len(w.hosts))
	for _, s := range w.servers {
		u := all[s.Host]
		u.vcpus += s.Flavor.VCPUs
		u.ramMB += s.Flavor.RAMMB
		u.diskGB += s.Flavor.DiskGB
		u.servers++
		all[s.Host] = u
	}
	for _, m := range w.migrations { // the destination holds a claim while a migration runs
		if m.active() && m.dest != "" && m.server.Host != m.dest {
			u := all[m.dest]
			u.vcpus += m.server.Flavor.VCPUs
			u.ramMB += m.server.Flavor.RAMMB
			u.diskGB += m.server.Flavor.DiskGB
			all[m.dest] = u
		}
	}
	return all
}

// fits reports whether the server fits on the host under the allocation ratios.
func (w *World) fits(h *Host, s *VM) bool {
	return w.fitsWith(h, s, w.usage(h.Name))
}

func (w *World) fitsWith(h *Host, s *VM, u usage) bool {
	ramCap := float64(h.MemoryMB)*w.opts.RAMAllocationRatio - float64(w.opts.ReservedHostMemoryMB)
	return float64(u.vcpus+s.Flavor.VCPUs) <= float64(h.VCPUs)*w.opts.CPUAllocationRatio &&
		float64(u.ramMB+s.Flavor.RAMMB) <= ramCap &&
		u.diskGB+s.Flavor.DiskGB <= h.DiskGB
}

func (h *Host) schedulable() bool { return h.Enabled && h.Up && !h.ForcedDown }

// schedule picks the destination for a server: the enabled, up host other than its own with
// the most free RAM that fits it, like Nova's RAM weigher spreading load.
func (w *World) schedule(s *VM) (*Host, bool) {
	if w.noValidHost {
		return nil, false
	}
	var best *Host
	var bestFree int64
	all := w.usageAll()
	for _, name := range w.hostOrder {
		h := w.hosts[name]
		if h.Name == s.Host || !h.schedulable() || !w.fitsWith(h, s, all[h.Name]) || !w.allowed(s, h) {
			continue
		}
		free := h.MemoryMB - all[h.Name].ramMB
		if best == nil || free > bestFree {
			best, bestFree = h, free
		}
	}
	return best, best != nil
}
