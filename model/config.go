package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Config is drainctl's own policy, read from config.toml. Everything has a default, so no
// file is needed when the defaults and the usual conventions (kubeconfig, clouds.yaml) suffice.
type Config struct {
	// RefreshInterval is how often the Nova side of the inventory is re-read (Kubernetes
	// updates arrive by watch and need no interval).
	RefreshInterval Duration `toml:"refresh_interval"`
	// FullRefreshInterval: a refresh reads what changed in Nova since the last one; every
	// this long it reads everything again, as a safety net.
	FullRefreshInterval Duration `toml:"full_refresh_interval"`

	Kubernetes  KubernetesConfig  `toml:"kubernetes"`
	OpenStack   OpenStackConfig   `toml:"openstack"`
	Mapping     MappingConfig     `toml:"mapping"`
	Timeouts    TimeoutsConfig    `toml:"timeouts"`
	Concurrency ConcurrencyConfig `toml:"concurrency"`
	Policy      PolicyConfig      `toml:"policy"`
	ScaleDown   ScaleDownConfig   `toml:"scale_down"`
	CloudPool   CloudPoolConfig   `toml:"cloudpool"`
	Drain       DrainConfig       `toml:"drain"`
	Recover     RecoverConfig     `toml:"recover"`
	Campaign    CampaignConfig    `toml:"roll"`
	Notify      NotifyConfig      `toml:"notify"`
	Return      ReturnConfig      `toml:"return"`
	Capacity    CapacityConfig    `toml:"capacity"`
	Proactive   ProactiveConfig   `toml:"proactive"`
}

// CapacityConfig is the [capacity] table: the room kept free for the next host failure
// (model/failover.go). Nothing asked by default.
type CapacityConfig struct {
	// Tolerate: host failures per zone whose VMs the other hosts must be able to take.
	Tolerate int `toml:"tolerate"`
	// Reserve: a share of each zone's memory and vCPU kept free ("25%").
	Reserve string `toml:"reserve"`
}

// Need is what the table asks (a Reserve that does not parse asks none: validate says so).
func (c CapacityConfig) Need() FailoverNeed {
	pct, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(c.Reserve), "%"), 64)
	return FailoverNeed{Tolerate: c.Tolerate, ReservePercent: pct}
}

func (c CapacityConfig) validate() error {
	if c.Tolerate < 0 || c.Tolerate > 100 {
		return &FieldError{"capacity.tolerate", fmt.Sprintf("must be 0 to 100, got %d", c.Tolerate),
			"0 asks no room; 1 keeps room for one host's death"}
	}
	if c.Reserve == "" {
		return nil
	}
	m, share := strings.CutSuffix(strings.TrimSpace(c.Reserve), "%")
	if pct, err := strconv.ParseFloat(m, 64); !share || err != nil || !(pct > 0 && pct < 100) { // NaN too
		return &FieldError{"capacity.reserve", fmt.Sprintf("must be a percentage above 0 and under 100, got %q", c.Reserve), `e.g. "25%"`}
	}
	return nil
}

// ReturnConfig is the [return] table: what proves a host healthy before its nova-compute
// takes tenants' VMs again (uncordon, a campaign's return).
type ReturnConfig struct {
	// Canary: the service is enabled for a test server booted on the host, which must be
	// ACTIVE within CanaryTimeout with a non-empty console log, and is deleted; a failure
	// disables the service again. Image, Flavor (IDs) and Network (a network ID, or
	// "none": no port, Nova 2.37+; a canary then proves the host without its network agent)
	// are what it boots with.
	Canary        bool     `toml:"canary"`
	CanaryTimeout Duration `toml:"canary_timeout"`
	Image         string   `toml:"image"`
	Flavor        string   `toml:"flavor"`
	Network       string   `toml:"network"`
}

func (r ReturnConfig) validate() error {
	if r.CanaryTimeout <= 0 {
		return &FieldError{"return.canary_timeout", fmt.Sprintf("must be positive, got %q", r.CanaryTimeout), `the default is "5m"`}
	}
	if !r.Canary {
		return nil
	}
	for _, k := range []struct{ key, v, what string }{
		{"image", r.Image, "the ID of an image the canary boots from"},
		{"flavor", r.Flavor, "the ID of a small flavor for the canary"},
		{"network", r.Network, `the ID of a network the canary is attached to (or "none": no port)`},
	} {
		if strings.TrimSpace(k.v) == "" {
			// Pointed at canary: the missing key has no line of its own.
			return &FieldError{
				"return.canary",
				"is true but return." + k.key + " is not set",
				"set " + k.key + " to " + k.what + ", or set canary = false",
			}
		}
	}
	return nil
}

// CampaignConfig is the [roll] table: a campaign's defaults (the flags override them).
type CampaignConfig struct {
	// Window: no node starts outside it ("Mon-Fri 22:00-06:00 Europe/Berlin"; "" any time).
	Window string `toml:"window"`
	// Budget: rate budgets, each holding the next node while so many started within its window
	// ("25% per 10m", "1 per zone per 1h"; model/ratebudget.go).
	Budget []string `toml:"budget"`
	// PDBBlockedFor: a PodDisruptionBudget allowing no disruption this long holds the
	// campaign ("0s": never).
	PDBBlockedFor Duration `toml:"pdb_blocked_for"`
	// NodeDeadline bounds each node's drain; Undrainable says what then: "quarantine",
	// "rollback" or "fail".
	NodeDeadline Duration `toml:"node_deadline"`
	Undrainable  string   `toml:"undrainable"`
	// OwnersWindowMax caps how long a node waits for its VMs' owners' windows
	// (drainctl:maintenance-window): an owner's window that opens (with the campaign's) later
	// than this is set aside, said, and the node taken in the campaign's.
	OwnersWindowMax Duration `toml:"owners_window_max"`
	// MigrationRateMiB is the live-migration rate assumed when the cloud has no recent
	// migration to measure (MiB/s); MinHeadroomPercent is the least free memory, in percent of
	// the hosts left, a campaign may bring the fleet down to (else it is refused).
	MigrationRateMiB   float64 `toml:"migration_rate_mib"`
	MinHeadroomPercent float64 `toml:"min_headroom_percent"`
	// GateTimeout and ExecTimeout bound the gate command and --exec: past them the command
	// is killed with every process it started (a gate then holds, an exec fails the node).
	GateTimeout Duration `toml:"gate_timeout"`
	ExecTimeout Duration `toml:"exec_timeout"`
	// ResumeWithin: an unfinished campaign record older than this is not resumed without
	// --resume (its nodes may have gone back to work by other hands). KeepRecords: finished
	// records are deleted after this long.
	ResumeWithin Duration `toml:"resume_within"`
	KeepRecords  Duration `toml:"keep_records"`
}

// RecoverConfig is the [recover] table: when a dead host may be failed over.
type RecoverConfig struct {
	// NotReadyFor: the node must have been NotReady this long before a recovery starts (a
	// kubelet restarting is not a dead machine).
	NotReadyFor Duration `toml:"not_ready_for"`
	// SharedStorage: the instances' disks live on shared storage (Ceph RBD, NFS), so a VM
	// rebuilt elsewhere keeps its disk. false: an image-backed VM is rebuilt from its image
	// and its local disk is lost (volume-backed VMs keep theirs either way).
	SharedStorage bool `toml:"shared_storage"`
	// PodsGoneWithin: how long Kubernetes is given to delete the node's pods once it is
	// tainted out-of-service; drainctl force-deletes those still there after it (the machine
	// is fenced: no container can still run).
	PodsGoneWithin Duration `toml:"pods_gone_within"`
	// FenceCmd powers a dead node's machine off ({node}: its name); exit 0 proves it off.
	// --fence-cmd replaces it, --confirm-fenced stands instead of it.
	FenceCmd string `toml:"fence_cmd"`
	// FenceTimeout bounds the fence command: past it, it is killed (with every process it
	// started) and the machine is not proven off.
	FenceTimeout Duration `toml:"fence_timeout"`
	// FenceRetries: a fence command that fails is run again this many times, all of them
	// within FenceTimeout (a BMC that drops one request), as fence-agents-remediation does.
	FenceRetries int `toml:"fence_retries"`
	// Automatic: the controller (--controller) recovers a dead node by itself. Opt-in, and
	// only with FenceCmd: nothing but the fence command's exit 0 proves a machine off.
	Automatic bool `toml:"automatic"`
	// MaxUnhealthy: no automatic recovery while more compute nodes than this are unhealthy,
	// a count ("1") or a share ("30%"): many nodes down at once is a partition, not dead machines.
	MaxUnhealthy string `toml:"max_unhealthy"`
	// StormCooldown: no automatic recovery for this long after such a storm ended.
	StormCooldown Duration `toml:"storm_cooldown"`
	// HeartbeatTimeout: automatic recovery takes a node for dead once both of its machine's
	// heartbeats, the kubelet's Lease and nova-compute's report, have stood still this long,
	// on drainctl's own clock and by their own timestamps (it does not wait for the node
	// lifecycle controller's NotReady nor for Nova's service_down_time).
	HeartbeatTimeout Duration `toml:"heartbeat_timeout"`
	// FenceCheckCmd asks the machine's power state after the fence ({node}; DRAINCTL_NODE,
	// DRAINCTL_SYSTEM_UUID, DRAINCTL_BOOT_ID in its environment): exit 0 reports it off.
	// Set, nothing is rebuilt until it does.
	FenceCheckCmd string `toml:"fence_check_cmd"`
	// FailureDomain is a node label (a rack, a zone): the storm guard also holds every
	// automatic recovery while more nodes of one domain than MaxUnhealthyPerDomain are
	// unhealthy (a top-of-rack switch down), whatever the cluster's total.
	FailureDomain         string `toml:"failure_domain"`
	MaxUnhealthyPerDomain string `toml:"max_unhealthy_per_domain"`
	// Priority: the VMs' recovery priorities where their metadata names none.
	Priority PriorityConfig `toml:"priority"`
	// ReserveLabel is a node label key: the nodes labelled KEY=true are the failover reserve,
	// kept empty of tenants' VMs (their nova-compute disabled with a reason naming the
	// reserve, by the controller) for a dead host's: a recovery enables them and rebuilds
	// there first, and the dead host, back and empty, takes the label in their place.
	// Campaigns, evacuations and boots never land there. "": no reserve.
	ReserveLabel string `toml:"reserve_label"`
	// ReserveCordon: the reserve's nodes are cordoned too (no pods either); false, their
	// Kubernetes side runs pods as any node's.
	ReserveCordon bool `toml:"reserve_cordon"`
}

// NotifyConfig is where drainctl tells the person on call what they must know (a recovery
// started or failed, a storm): one JSON POST an event to Webhook.
type NotifyConfig struct {
	Webhook string `toml:"webhook"` // an http(s) URL; "" sends nothing
	// TokenFile holds the bearer token (or DRAINCTL_WEBHOOK_TOKEN): never on a command line.
	TokenFile string `toml:"token_file"`
	CAFile    string `toml:"ca_file"` // the CA the webhook's certificate is checked against ("" the system's)
	// OwnerLead: how long before drainctl moves, stops or restarts a VM its owner is told, in
	// the server's metadata (drainctl:maintenance-event, model/ownernotice.go). 0: not told.
	OwnerLead Duration `toml:"owner_lead"`
	// Projects are the owners' own webhooks: a project ID to the URL its owners' notices
	// (maintenance-event) are posted to, without the operator's token.
	Projects map[string]string `toml:"projects"`
}

// KubeletCannotLabel is the label prefix a node's kubelet may not set on its own Node (the
// NodeRestriction admission plugin): a label that makes a node something drainctl trusts (the
// failover reserve) must be under it.
const KubeletCannotLabel = "node-restriction.kubernetes.io/"

// UnhealthyLimit is how many of compute nodes may be unhealthy before the storm guard holds.
func (r RecoverConfig) UnhealthyLimit(compute int) int { return shareOf(r.MaxUnhealthy, compute) }

// DomainLimit is how many nodes of a failure domain of n nodes may be unhealthy before the
// storm guard holds.
func (r RecoverConfig) DomainLimit(n int) int { return shareOf(r.MaxUnhealthyPerDomain, n) }

// shareOf reads a count ("1") or a share ("30%") of n.
func shareOf(s string, n int) int {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		// A share that rounds to no node would hold every recovery for one dead node: a
		// share of a small fleet is at least one node.
		pct, _ := strconv.Atoi(p)
		return max(1, n*pct/100)
	}
	v, _ := strconv.Atoi(s)
	return v
}

// namesTheMachine reports whether a fence command names the machine it acts on: {node}, or
// DRAINCTL_NODE or DRAINCTL_HOST. The system UUID and boot ID do not count: the node's kubelet
// reports them, so alone they are the node's word for which machine to power off.
func namesTheMachine(cmd string) bool {
	for _, s := range []string{"{node}", "DRAINCTL_NODE", "DRAINCTL_HOST"} {
		if strings.Contains(cmd, s) {
			return true
		}
	}
	return false
}

// DrainOrderLabel on a pod puts it in an eviction order group ("10", "-5") or, with "skip",
// leaves it on the node like a DaemonSet pod. It wins over the [[drain.order]] rules.
const DrainOrderLabel = "drainctl.io/drain-order"

// DrainConfig orders an evacuation's evictions (Cluster API's MachineDrainRule, for pods):
// pods are evicted in ascending order groups, each group gone before the next starts.
type DrainConfig struct {
	Order []DrainRule `toml:"order"`
}

// DrainRule is one [[drain.order]] table: the pods its selector (and namespace, when set)
// match go in group Order, or stay on the node when Skip. The first matching rule wins;
// a pod no rule matches is in group 0.
type DrainRule struct {
	Selector  string `toml:"selector"`
	Namespace string `toml:"namespace"`
	Order     int    `toml:"order"`
	Skip      bool   `toml:"skip"`
}

// CloudPoolConfig is the backend cloudpool that owns the nodes' machines (scale-down
// terminates the machine under a node it emptied; the proxy mode forwards to it).
type CloudPoolConfig struct {
	URL            string   `toml:"url"`
	ClientTimeout  Duration `toml:"client_timeout"`
	BackendTimeout Duration `toml:"backend_timeout"`
	// MinSize and MaxSize bound the desired sizes the proxy accepts (0: no maximum).
	MinSize int `toml:"min_size"`
	MaxSize int `toml:"max_size"`
	// MaxScaleDown bounds the nodes one request to the proxy removes, MaxScaleDownPerHour those
	// it removes in any hour (0: 1 and 4).
	MaxScaleDown        int `toml:"max_scale_down"`
	MaxScaleDownPerHour int `toml:"max_scale_down_per_hour"`
	// ProxyTokenFile holds the bearer token the proxy's callers present (a Secret's file);
	// without one the proxy serves on a loopback address only.
	ProxyTokenFile string `toml:"proxy_token_file"`
}

// ScaleDownConfig prices what emptying a node costs, to rank scale-down victims.
type ScaleDownConfig struct {
	PodCost            float64 `toml:"pod_cost"`             // per pod evicted
	VMGiBCost          float64 `toml:"vm_gib_cost"`          // per GiB of VM memory live-migrated
	CPUPointCost       float64 `toml:"cpu_point_cost"`       // per percentage point of requested CPU
	CPUAllocationRatio float64 `toml:"cpu_allocation_ratio"` // Nova's, for placing VMs
}

// KubernetesConfig selects the cluster. Empty fields fall back to the usual kubeconfig rules.
type KubernetesConfig struct {
	Kubeconfig string `toml:"kubeconfig"`
	Context    string `toml:"context"`
	// QPS and Burst bound the client's request rate; client-go's defaults (5/10) make an
	// evacuation of a large node crawl, and 50/100 held twenty nodes in flight (a campaign's
	// cordons, evictions and lease renewals) to the limiter's pace. The API server's priority
	// and fairness guards it beyond that (a 429 is retried).
	QPS   float32 `toml:"qps"`
	Burst int     `toml:"burst"`
	// Namespace is drainctl's own, where its leases and records live: every drainctl of the
	// cluster must name the same ("": drainctl). DRAINCTL_NAMESPACE overrides it.
	Namespace string `toml:"namespace"`
}

// OpenStackConfig is the [openstack] table. It is also what OS_* variables and the legacy
// nova-kubernetes-drain config.yaml are read into, so that one code path authenticates.
type OpenStackConfig struct {
	Cloud             string `toml:"cloud"` // a clouds.yaml entry
	AuthURL           string `toml:"auth_url"`
	Region            string `toml:"region"`
	Interface         string `toml:"interface"`
	Username          string `toml:"username"`
	UserID            string `toml:"user_id"`
	UserDomainName    string `toml:"user_domain_name"`
	UserDomainID      string `toml:"user_domain_id"`
	ProjectName       string `toml:"project_name"`
	ProjectID         string `toml:"project_id"`
	ProjectDomainName string `toml:"project_domain_name"`
	ProjectDomainID   string `toml:"project_domain_id"`
	// Password may be inline, but PasswordFile (or OS_PASSWORD) keeps it out of the file.
	Password                        Secret `toml:"password"`
	PasswordFile                    string `toml:"password_file"`
	ApplicationCredentialID         string `toml:"application_credential_id"`
	ApplicationCredentialName       string `toml:"application_credential_name"`
	ApplicationCredentialSecret     Secret `toml:"application_credential_secret"`
	ApplicationCredentialSecretFile string `toml:"application_credential_secret_file"`
	CACert                          string `toml:"cacert"`
	Insecure                        bool   `toml:"insecure"`
}

// IsZero reports whether nothing at all was configured.
func (o OpenStackConfig) IsZero() bool { return o == OpenStackConfig{} }

// Mapping modes: how a Kubernetes node finds its nova-compute service host.
const (
	MapByName        = "name"         // node name == service host (the default)
	MapByLabel       = "label"        // the value of a node label
	MapByAnnotation  = "annotation"   // the value of a node annotation
	MapByStripDomain = "strip-domain" // node name without its domain suffix
)

// MappingConfig is the [mapping] table. Hosts, when present, is consulted first whatever
// the mode, so a few exceptions can sit beside a convention.
type MappingConfig struct {
	Mode       string            `toml:"mode"`
	Label      string            `toml:"label"`
	Annotation string            `toml:"annotation"`
	Domain     string            `toml:"domain"` // for strip-domain; empty strips from the first dot
	Hosts      map[string]string `toml:"hosts"`  // node name -> service host
}

// TimeoutsConfig bounds every wait.
type TimeoutsConfig struct {
	API       Duration `toml:"api"`       // one API call
	Eviction  Duration `toml:"eviction"`  // one pod, from first eviction attempt to gone
	Migration Duration `toml:"migration"` // one VM, from request to completed
	Operation Duration `toml:"operation"` // a whole operation on one node
	Poll      Duration `toml:"poll"`      // how often running migrations are read
}

// ConcurrencyConfig caps parallel work.
type ConcurrencyConfig struct {
	Evictions int `toml:"evictions"` // pods evicted at once per node
	// MigrationsPerSource defaults to Nova's own max_concurrent_live_migrations (1): more
	// would only queue inside Nova.
	MigrationsPerSource      int `toml:"migrations_per_source"`
	MigrationsPerDestination int `toml:"migrations_per_destination"`
	MigrationsPerCluster     int `toml:"migrations_per_cluster"`
	Nodes                    int `toml:"nodes"` // nodes evacuated at once
	// StaticCaps keeps the moves under way at the caps whatever the control planes answer:
	// no pace (ops/pace.go) halves them while Nova or the API server struggles.
	StaticCaps bool `toml:"static_caps"`
}

// PolicyConfig is what an evacuation may and may not do.
type PolicyConfig struct {
	TaintKey string `toml:"taint_key"`
	// GracePeriod overrides each pod's terminationGracePeriodSeconds; empty keeps the pod's own.
	GracePeriod        Duration `toml:"grace_period"`
	IgnoreDaemonSets   bool     `toml:"ignore_daemonsets"`
	DeleteEmptyDirData bool     `toml:"delete_emptydir_data"`
	// ProtectedPods are label selectors of pods never evicted; a node running one is refused.
	ProtectedPods []string `toml:"protected_pods"`
	// ProtectedNodes are label selectors of nodes never drained.
	ProtectedNodes []string `toml:"protected_nodes"`
	// HypervisorPods selects the pods that carry the VMs (nova-compute, libvirt and their
	// sidecars): they are kept until the hypervisor is empty.
	HypervisorPods string `toml:"hypervisor_pods"`
	// StallAfter: a migration whose remaining memory has not fallen for this long is stalled;
	// OnStall says what then: "wait", "force-complete" (pause the guest to finish) or "abort".
	StallAfter Duration `toml:"stall_after"`
	OnStall    string   `toml:"on_stall"`
	// MigrationAttempts is how many times a VM's live migration is tried.
	MigrationAttempts int `toml:"migration_attempts"`
	// MoveStopped: SHUTOFF VMs are cold-migrated (they lose nothing); false makes them
	// blockers. ConfirmCold: drainctl confirms its own cold migrations (confirmResize);
	// false leaves them in VERIFY_RESIZE for the operator, and the report says so.
	MoveStopped bool `toml:"move_stopped"`
	ConfirmCold bool `toml:"confirm_cold"`
	// RespectLocks: a locked VM stays where it is, a blocker. false (the default): it moves as
	// Nova lets an admin move a locked server, the lock kept.
	RespectLocks bool `toml:"respect_locks"`
	// Maintenance: the VMs' policies where their metadata names none (model/vmpolicy.go).
	Maintenance MaintenanceConfig `toml:"maintenance"`
	// Groups: the operator's disruption budgets for VM groups, by group name (a metadata
	// drainctl:group, or a Nova server group's name): "N" or "N%" (model/groups.go). An
	// owner's drainctl:max-disrupted may only tighten it.
	Groups map[string]string `toml:"groups"`
}

// GroupRules are the operator's words on VM groups (model.GroupBudgets).
func (p PolicyConfig) GroupRules() GroupRules {
	return GroupRules{Budgets: p.Groups, Honour: p.Maintenance.Honour}
}

// DefaultConfig returns the configuration used when no file says otherwise.
func DefaultConfig() Config {
	return Config{
		RefreshInterval:     Duration(5 * time.Second),
		FullRefreshInterval: Duration(5 * time.Minute),
		Kubernetes:          KubernetesConfig{QPS: 200, Burst: 400},
		OpenStack:           OpenStackConfig{},
		Mapping:             MappingConfig{Mode: MapByName},
		Timeouts: TimeoutsConfig{
			API:       Duration(30 * time.Second),
			Eviction:  Duration(5 * time.Minute),
			Migration: Duration(30 * time.Minute),
			Operation: Duration(2 * time.Hour),
			Poll:      Duration(2 * time.Second),
		},
		Concurrency: ConcurrencyConfig{
			Evictions:                10,
			MigrationsPerSource:      1,
			MigrationsPerDestination: 2,
			MigrationsPerCluster:     10,
			Nodes:                    1,
		},
		Policy: PolicyConfig{
			TaintKey:          "drainctl.io/maintenance",
			IgnoreDaemonSets:  true,
			HypervisorPods:    "application in (nova, libvirt)",
			StallAfter:        Duration(time.Minute),
			OnStall:           "force-complete",
			MigrationAttempts: 2,
			MoveStopped:       true,
			ConfirmCold:       true,
		},
		ScaleDown: ScaleDownConfig{PodCost: 1, VMGiBCost: 2, CPUPointCost: 0.2, CPUAllocationRatio: 4},
		CloudPool: CloudPoolConfig{ClientTimeout: Duration(60 * time.Second), BackendTimeout: Duration(300 * time.Second)},
		Recover: RecoverConfig{
			NotReadyFor:           Duration(time.Minute),
			PodsGoneWithin:        Duration(2 * time.Minute),
			FenceTimeout:          Duration(2 * time.Minute),
			MaxUnhealthy:          "1",
			StormCooldown:         Duration(10 * time.Minute),
			FenceRetries:          2,
			HeartbeatTimeout:      Duration(40 * time.Second),
			MaxUnhealthyPerDomain: "1",
		},
		Campaign: CampaignConfig{
			PDBBlockedFor:      Duration(10 * time.Minute),
			NodeDeadline:       Duration(30 * time.Minute),
			OwnersWindowMax:    Duration(24 * time.Hour),
			Undrainable:        "quarantine",
			MigrationRateMiB:   500,
			MinHeadroomPercent: 10,
			GateTimeout:        Duration(time.Minute),
			ExecTimeout:        Duration(time.Hour),
			ResumeWithin:       Duration(24 * time.Hour),
			KeepRecords:        Duration(7 * 24 * time.Hour),
		},
		Return: ReturnConfig{CanaryTimeout: Duration(5 * time.Minute)},
	}
}
