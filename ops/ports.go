package ops

// Ports: what the engine needs from the world (Kubernetes, Nova, a machine pool, the
// NodeMaintenance store), as small consumer-side interfaces that ops/kube, ops/nova,
// internal/controllers/cloudpool and the stores implement, and the typed errors they and the engine return.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
)

// KubeSource is the Kubernetes side of the inventory (ops/kube.Inventory).
type KubeSource interface {
	Snapshot() model.KubeSnapshot
	// Nodes and PDBs are the cache's nodes and budgets alone: no pod is copied.
	Nodes() []model.KubeNode
	PDBs() []model.PDB
	// Subscribe signals changes (coalesced) until cancel is called.
	Subscribe() (changes <-chan struct{}, cancel func())
	// TakeChanged returns the nodes whose Node object or pods changed since the last call
	// (all: any may have) and starts counting afresh. One consumer: the ranking.
	TakeChanged() (nodes map[string]bool, all bool)
	// Events counts the changes seen, of any kind: equal counts, an unchanged cache.
	Events() uint64
	// WaitSynced waits for the first full read (a screen may start before it ends);
	// Syncing says whether it is under way.
	WaitSynced(ctx context.Context) error
	Syncing() bool
}

// NovaSource is the Nova side of the inventory (ops/nova.Client).
type NovaSource interface {
	Snapshot(ctx context.Context) (model.NovaSnapshot, error)
	// HostSnapshot reads some hosts' part alone, by host (hypervisors: host to its
	// hypervisor as the whole read gave it; rooms: their Placement room afresh too, else as
	// last read); ErrWholeReadNeeded when Nova cannot be read so.
	HostSnapshot(ctx context.Context, hypervisors map[string]model.Hypervisor, rooms bool) (model.NovaSnapshot, error)
	// ComputeServices reads the compute services of host (every host: "").
	ComputeServices(ctx context.Context, host string) ([]model.ComputeService, error)
}

// ErrWholeReadNeeded: Nova cannot be read one host at a time here (an older microversion).
var ErrWholeReadNeeded = errors.New("this Nova is read whole, not by host")

// Kube is what the engine needs from Kubernetes (ops/kube.Client). Reads come from the
// informer cache; every write is idempotent at the call site (the engine checks first).
type Kube interface {
	KubeSource
	// Node and PodsOn read the cache.
	Node(name string) (model.KubeNode, bool)
	PodsOn(node string) []model.Pod
	PDB(namespace, name string) (model.PDB, bool)
	// Disrupted: the budget's status lists the pod among its disrupted pods (the API server
	// counted its eviction against the budget).
	Disrupted(namespace, pdb, pod string) bool
	PodUID(node, namespace, name string) (string, bool)

	// Cordon makes the node unschedulable and adds the taint; Uncordon undoes both.
	Cordon(ctx context.Context, node string, taint model.Taint) error
	Uncordon(ctx context.Context, node string, taintKey string) error
	// SetTaint adds the taint (on) or removes every taint with its key, leaving the rest of
	// the node as it is.
	SetTaint(ctx context.Context, node string, taint model.Taint, on bool) error
	// SetAnnotation sets a node annotation; an empty value removes it. SetLabel likewise.
	SetAnnotation(ctx context.Context, node, key, value string) error
	SetLabel(ctx context.Context, node, key, value string) error
	// Evict asks the Eviction API (or deletes, with useDelete) to remove the pod with that UID.
	// A PDB refusal is a *BudgetError; a pod already gone is nil.
	Evict(ctx context.Context, pod model.Pod, grace *int64, useDelete bool) error
	// PodsForDeletion asks kubectl's drain filters which pods of the node to remove; refusals
	// come back as errors in kubectl's words.
	PodsForDeletion(ctx context.Context, node string, o DrainFilterOptions, extra func(model.Pod) (keep bool)) ([]model.Pod, []error, error)

	// AcquireLease takes or renews the node's maintenance lease for holder. Held by another
	// holder whose lease has not expired, it fails with *LeaseHeldError, unless mayReplace
	// (may be nil) says that holder is gone: then it is taken over, atomically.
	AcquireLease(ctx context.Context, node, holder string, ttl time.Duration, mayReplace func(current string) bool) error
	// LeaseHolder is who holds the node's lease, and until when ("" when nobody or expired).
	LeaseHolder(ctx context.Context, node string) (holder string, until time.Time, err error)
	// LeaseHolders is who holds each of the named leases, read at once ("": nobody, or expired).
	LeaseHolders(ctx context.Context, names []string) (map[string]string, error)
	// LeasesHeldBy is who holds each lease holder took, by its name, read at once: a lease
	// taken over shows its new holder, or is absent.
	LeasesHeldBy(ctx context.Context, holder string) (map[string]string, error)
	ReleaseLease(ctx context.Context, node, holder string) error
	// DeleteNode deletes the Node object (scale-down).
	DeleteNode(ctx context.Context, node string) error
	// NodeFresh reads the Node from the API server (not the cache), before a step that
	// cannot be undone; found is false when it is gone.
	NodeFresh(ctx context.Context, name string) (model.KubeNode, bool, error)
	// KubeletHeartbeats are the renewTime of every kubelet's Lease (kube-node-lease), by node.
	KubeletHeartbeats(ctx context.Context) (map[string]time.Time, error)
	// OnAnswer tells fn every answer of the API server from now on (but a watch's): how long
	// it took, its status (0: none came). The engine's pace follows them.
	OnAnswer(fn func(took time.Duration, status int))
	// WatchKubeletHeartbeats tells each renewal of a kubelet's Lease as it is made (a zero
	// time: the Lease is gone), until ctx ends; it returns once the first list is in.
	WatchKubeletHeartbeats(ctx context.Context, renewed func(node string, renew time.Time)) error

	// Record reads one of drainctl's own records on the cluster (a campaign's, a fence's);
	// found is false when there is none. SaveRecord writes it, creating it when missing;
	// Records lists those of one kind ("campaign", "fence") by name; DeleteRecord removes one.
	// Records live where no node identity may write (ops/kube/records.go).
	Record(ctx context.Context, name string) (data []byte, found bool, err error)
	SaveRecord(ctx context.Context, name string, data []byte) error
	Records(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteRecord(ctx context.Context, name string) error
	// RecordWriter reads a record with the Kubernetes user who wrote it (its writer
	// annotation, the API server's word under deploy/records-policy.yaml); User is this
	// process's own Kubernetes user ("" when the API server cannot say).
	RecordWriter(ctx context.Context, name string) (data []byte, writer string, found bool, err error)
	User(ctx context.Context) string
}

// MachinePool terminates the machine under a node (internal/controllers/cloudpool.Client).
type MachinePool interface {
	TerminateNode(ctx context.Context, node, providerID string) (machineID string, err error)
}

// DrainFilterOptions are kubectl drain's own options.
type DrainFilterOptions struct {
	Force, IgnoreDaemonSets, DeleteEmptyDirData bool
}

// Nova is what the engine needs from Nova (ops/nova.Client).
type Nova interface {
	NovaSource
	ComputeServices(ctx context.Context, host string) ([]model.ComputeService, error)
	Hypervisors(ctx context.Context) ([]model.Hypervisor, error)
	// SetServiceEnabled sets the service a step read (by its ID; given only its Host, the host's).
	SetServiceEnabled(ctx context.Context, svc model.ComputeService, enabled bool, reason string) (model.ComputeService, error)
	Servers(ctx context.Context, host string) ([]model.VM, error)
	// HostServers is Servers(host) for a step that works the host's VMs, from the process's
	// read of what changed when it holds the host's list; Servers is the proof of an empty host.
	HostServers(ctx context.Context, host string) ([]model.VM, error)
	Server(ctx context.Context, id string) (model.VM, error)
	// Admin: the credentials have the admin role (Nova moves a locked server for an admin only).
	Admin() bool
	LiveMigrate(ctx context.Context, id, host string) error
	// ColdMigrate, ConfirmResize and RevertResize are a cold migration's three calls;
	// ColdFrom lists the cold migrations from host not yet confirmed or reverted, read within
	// fresh before the call (0: after it).
	ColdMigrate(ctx context.Context, id, host string) error
	ConfirmResize(ctx context.Context, id string) error
	RevertResize(ctx context.Context, id string) error
	ColdFrom(ctx context.Context, host string, fresh time.Duration) ([]model.Migration, error)
	// ActionRequest is the request ID Nova answered the last live or cold move of the server
	// asked here with: its instance action's ("" : none asked here).
	ActionRequest(id string) string
	ServerMigrations(ctx context.Context, id string) ([]model.Migration, error)
	MigrationsOf(ctx context.Context, id string) ([]model.Migration, error)
	// RecentMoves are the cloud's records not ended, and those seen ending in the last
	// minute, newest first: read within fresh before the call (0: after it), one read shared
	// by every poll asking at once.
	RecentMoves(ctx context.Context, fresh time.Duration) ([]model.Migration, error)
	InProgressFrom(ctx context.Context, host string) ([]model.Migration, error)
	// MovingFrom lists every move from host ("" : every host) loading a destination now:
	// live migrations unfinished, cold ones moving, evacuations rebuilding (the caps), read
	// within fresh before the call (0: after it); newest is the newest record's ID in the
	// cloud then (0: not known).
	MovingFrom(ctx context.Context, host string, fresh time.Duration) (moving []model.Migration, newest int64, err error)
	// OnAnswer tells fn every answer of the cloud from now on: how long it took, its status
	// (0: none came). The engine's pace follows them.
	OnAnswer(fn func(took time.Duration, status int))
	ForceComplete(ctx context.Context, id string, migrationID int64) error
	AbortMigration(ctx context.Context, id string, migrationID int64) error
	// LastActionError is why the server's latest move by method failed (no Message when it did not).
	LastActionError(ctx context.Context, id string, method model.MoveMethod) (ActionFailure, error)
	// A dead host: SetForcedDown forces its service down or up (up is refused with an
	// *EvacuationsPendingError while "done" evacuations remain); Evacuate rebuilds a server
	// elsewhere; EvacuationsFrom lists the host's evacuation records.
	SetForcedDown(ctx context.Context, host string, down bool) (model.ComputeService, error)
	Evacuate(ctx context.Context, id, host string) error
	EvacuationsFrom(ctx context.Context, host string) ([]model.Migration, error)
	// RecentLiveMigrations are the newest n completed live migrations (the cloud's rate).
	RecentLiveMigrations(ctx context.Context, n int) ([]model.Migration, error)
	// A returning host's proof: BootOn boots a server on the host even while its service is
	// disabled; ConsoleOutput is its console log's last lines; DeleteServer deletes it.
	BootOn(ctx context.Context, host, zone string, spec BootSpec) (string, error)
	ConsoleOutput(ctx context.Context, id string, lines int) (string, error)
	DeleteServer(ctx context.Context, id string) error
	// StopServer and StartServer stop and start a server where it is (restart-in-place).
	StopServer(ctx context.Context, id string) (requestID string, err error)
	StartServer(ctx context.Context, id string) error
	// SetMetadata sets one key of a server's metadata; DeleteMetadata removes it (gone
	// already: no error). drainctl's notice to a VM's owner (model.NoticeKey).
	SetMetadata(ctx context.Context, id, key, value string) error
	DeleteMetadata(ctx context.Context, id, key string) error
	// LastPowerAction is the server's newest stop or start (its instance actions).
	LastPowerAction(ctx context.Context, id string) (model.InstanceAction, error)
	// LastColdAction is the server's newest cold move or resize (its instance actions).
	LastColdAction(ctx context.Context, id string) (model.InstanceAction, error)
	// ProviderConsumers lists who holds an allocation on a Placement resource provider (a
	// hypervisor's ID); ErrNoPlacement when Placement is not in the catalog.
	ProviderConsumers(ctx context.Context, provider string) ([]string, error)
}

// BootSpec is what a server is booted with: IDs of its image, flavor and network (or
// NoNetwork).
type BootSpec struct {
	Name, Image, Flavor, Network string
	Metadata                     map[string]string
}

// NoNetwork boots a server with no port at all (Nova 2.37's networks "none").
const NoNetwork = "none"

// ErrNoNova: drainctl runs on Kubernetes alone here, and was asked something of Nova.
var ErrNoNova = errors.New("no Nova configured")

// ErrNoPlacement: the cloud's catalog has no Placement, so its allocations cannot be read.
var ErrNoPlacement = errors.New("no Placement endpoint in the catalog")

// EvacuationsPendingError: Nova refuses to force a service up while evacuations from its
// host are "done" but not "completed": the host's nova-compute has not restarted and
// cleaned up after them yet.
type EvacuationsPendingError struct {
	Host    string
	Message string // Nova's own words
}

func (e *EvacuationsPendingError) Error() string {
	return fmt.Sprintf("nova-compute on %s cannot be forced up yet: %s", e.Host, e.Message)
}

// BudgetError is an eviction refused because a PodDisruptionBudget allows no disruption.
type BudgetError struct {
	Pod     string
	PDB     string // "" when the API did not say which
	Message string
}

func (e *BudgetError) Error() string {
	if e.PDB != "" {
		return fmt.Sprintf("evicting %s would violate PodDisruptionBudget %s: %s", e.Pod, e.PDB, e.Message)
	}
	return fmt.Sprintf("evicting %s would violate its PodDisruptionBudget: %s", e.Pod, e.Message)
}

// TransientError is a failure a retry may not meet (the API server restarting, a 5xx, a
// timeout): the engine retries it with backoff within the operation's bounds.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return "transient: " + e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// UnreachableError: a service drainctl is configured for (Nova) could not be reached or could
// not answer (5xx, timeout) while reading the cluster, before anything changed.
type UnreachableError struct {
	Service string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s: %v", e.Service, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// LeaseHeldError means another actor is working on the node.
type LeaseHeldError struct {
	Node, Holder string
	Since, Until time.Time // Since is zero when unknown
	Reason       string    // why it is refused, when more than "held"
}

func (e *LeaseHeldError) Error() string {
	msg := fmt.Sprintf("node %s is held by %s", e.Node, e.Holder)
	if !e.Since.IsZero() {
		msg += " since " + e.Since.Format(time.RFC3339)
	}
	msg += " (lease valid until " + e.Until.Format(time.RFC3339) + ")"
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// RefusedError is a plan refused by policy: nothing was changed.
type RefusedError struct{ Reasons []model.Reason }

func (e *RefusedError) Error() string {
	if len(e.Reasons) == 1 {
		return "refused: " + e.Reasons[0].Text()
	}
	return fmt.Sprintf("refused: %d blockers, first: %s", len(e.Reasons), e.Reasons[0].Text())
}

// NotMovedError: VMs the run could not move, each with why and the override that would
// move it, if one would (the views name it).
type NotMovedError struct {
	Moved string // what the others were: "migrated", "rebuilt elsewhere"
	VMs   []model.Reason
}

func (e *NotMovedError) Error() string {
	parts := make([]string, len(e.VMs))
	for i, r := range e.VMs {
		parts[i] = r.Text()
	}
	return fmt.Sprintf("%d VM(s) not %s: %s", len(e.VMs), e.Moved, strings.Join(parts, "; "))
}

// Interrupted is an operation stopped at a safe point; the journal says where.
type Interrupted struct {
	Node  string
	Phase string
	Cause error
}

func (e *Interrupted) Error() string {
	why := ""
	var req *CancelRequest
	switch {
	case errors.Is(e.Cause, ErrLeaseLost),
		errors.Is(e.Cause, ErrHostAlive),
		errors.Is(e.Cause, ErrFenceStale),
		errors.As(e.Cause, new(*RefusedError)):
		why = " (" + e.Cause.Error() + ")"
	case errors.As(e.Cause, &req):
		why = " (" + req.Error() + ")"
	}
	return fmt.Sprintf("%s: interrupted%s during %s; run the same command again to resume", e.Node, why, e.Phase)
}
func (e *Interrupted) Unwrap() error { return e.Cause }
func (e *Interrupted) HintText() string {
	return "the node records where it stopped (annotation " + JournalAnnotation + ")"
}

// ErrCannotMoveLive: Nova says the server cannot move live at all (its request or its
// pre-check refused it); the Nova adapter reads Nova's words and says so with this.
var ErrCannotMoveLive = errors.New("cannot move live")

// ActionFailure is why Nova's move of a server failed, as its instance action says.
type ActionFailure struct {
	Message    string // "" when it did not fail
	CannotLive bool   // it cannot move live at all: retrying live does not help
	// NoValidHost: Nova's scheduler found no host for it (or turned the requested one down).
	NoValidHost bool
}

// statusOf is the HTTP status an API error carries (0: none).
func statusOf(err error) int {
	var s interface{ HTTPStatus() int }
	if errors.As(err, &s) {
		return s.HTTPStatus()
	}
	return 0
}

// refusedByNova reports whether err is Nova's 400 or 409 to an action: it cannot be done as
// asked (a server in the wrong state, a request Nova will not carry out), and asking again
// the same way does not help.
func refusedByNova(err error) bool {
	s := statusOf(err)
	return s == 400 || s == 409
}

// NotEmptyError: the operation did what it was asked, but the node is not empty: VMs were
// left on it knowingly (--skip-vm, --force). Its own exit code (6), so a script can tell.
type NotEmptyError struct {
	Node string
	Left []string // "VM name: why"
}

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("%s is not empty: %d VM(s) left on it: %s", e.Node, len(e.Left), strings.Join(e.Left, "; "))
}

// UsageError is a request that cannot be carried out as asked (an unknown node or VM, a
// verb without its target), with a hint on how to fix it. The engine speaks no command
// line: the option at fault and the options that fix it are typed, and each view names
// them as it takes them (a flag of --auto: internal/app's ErrorText and HintOf).
type UsageError struct {
	Option  Option // the option at fault ("": none); Problem follows its name
	Problem string
	Hint    string
	Fix     []Option // the options the hint means
}

func (e *UsageError) Error() string {
	if e.Option != "" {
		return string(e.Option) + " " + e.Problem
	}
	return e.Problem
}

// Option names an engine option a view takes from its user.
type Option string

// The options an error may name.
const (
	OptOnFailure   Option = "on-failure"
	OptUndrainable Option = "undrainable"
	OptExec        Option = "exec"
	OptOrder       Option = "order"
	OptSelector    Option = "selector"
	OptCampaign    Option = "campaign"
	OptResume      Option = "resume"
)

// MaintenanceFinalizer holds a NodeMaintenance until the node is put back.
const MaintenanceFinalizer = "maintenance.drainctl.io/restore-node"

// Maintenances is the store of NodeMaintenance resources (ops/kube.Maintenances).
type Maintenances interface {
	// List is every NodeMaintenance, from a watch-fed cache.
	List() []model.NodeMaintenance
	// Subscribe signals (coalesced) whenever a NodeMaintenance changes.
	Subscribe() (changes <-chan struct{}, cancel func())
	SetFinalizer(ctx context.Context, name string, on bool) error
	UpdateStatus(ctx context.Context, name string, st model.MaintenanceStatus) error
	Create(ctx context.Context, node, reason string) (name string, err error)
	Delete(ctx context.Context, name string) error
}

// ErrFenceStale stops a recovery whose node is no longer in the outage its fence proved.
var ErrFenceStale = errors.New("the node is no longer in the outage its fence proved: no further VM is rebuilt")

// ErrHostAlive stops a recovery whose node shows life (Ready, a kubelet renewal): a machine
// that answers is not dead, and rebuilding its VMs elsewhere could run them twice.
var ErrHostAlive = errors.New("the node turned Ready or its kubelet renewed its Lease: the machine is not dead; no further VM is rebuilt")

// ErrLeaseLost stops an operation whose lease could not be renewed before it expired:
// another engine may hold the node now.
var ErrLeaseLost = errors.New("lease lost")

// CancelRequest is what abort and rollback write on the node for the holder to obey.
type CancelRequest struct {
	Op     model.OpKind `json:"op"`     // abort or rollback
	By     string       `json:"by"`     // who asks
	Holder string       `json:"holder"` // whom: the lease's holder when asked
	At     time.Time    `json:"at"`
}

func (c *CancelRequest) Error() string { return fmt.Sprintf("%s requested by %s", c.Op, c.By) }
