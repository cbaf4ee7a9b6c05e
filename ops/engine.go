package ops

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/ops/shared"
)

// Engine runs operations. One engine serves the TUI, --auto and the daemons; it is safe to
// run several operations at once (on different nodes).
type Engine struct {
	kube Kube
	nova Nova // nil: Kubernetes alone
	inv  *Inventory
	cfg  model.Config
	o    EngineOptions
	// steps is the steps' table (steps.go), made with the engine: a row (return-vms) runs
	// plans of its own through do, which reads it, so a package variable would need an init.
	steps map[model.StepKind]stepFunc

	migSlots chan struct{} // the cluster-wide cap on live migrations
	start    startHold     // the process's hold of the cluster-wide start lock (caps.go)
	pace     *pace         // how many moves at once now, within the cluster cap (pace.go)
	destMu   sync.Mutex
	inflight map[string]int      // destination host -> migrations this engine has in flight to it
	mine     map[string]string   // VMs this engine has asked to migrate, still in flight: their source
	sent     map[string][]sentVM // destination host -> the VMs this engine sent there, newest last
	mu       sync.Mutex
	running  map[string]*tracked // node -> its running operation, to stop it in-process
	// budgets: one gate per PodDisruptionBudget, shared by every node this engine empties:
	// a campaign's twenty nodes evict no more of a budget's pods at once than it allows.
	budgets map[string]*budgetGate
	// leaseHolders is the holder of every lease this engine took, read afresh for the acts
	// about to happen: one read of its own leases shared by every node's acts that ask at
	// once, not a read per node.
	leaseHolders *shared.Calls[map[string]string]
	// forgotten: the Ready episode (its start) at which each node's fence record was deleted.
	forgotten map[string]time.Time
	// pinned: the Node UID each node's machine pin was written for, as this process knows it
	// (nil: not read yet).
	pinned map[string]string
	// told: when each VM's owner was first told, by node, as this process wrote it
	// (owners_told.go).
	told map[string]map[string]time.Time
	// refKey keys the opaque names tenants are told a maintenance by (MaintenanceRef).
	refKey [16]byte

	rankMu    sync.Mutex
	ranker    policy.Ranker // keeps the last ranking: each one judges again only what changed
	ranked    chan struct{} // closed after the first full ranking
	rankedOne sync.Once
	lastRank  *lastRanking
}

// lastRanking is the last ranking and what it was made of.
type lastRanking struct {
	events  uint64
	novaAt  time.Time
	opts    policy.Options
	victims []policy.Victim
	inv     model.Inventory
}

// EngineOptions tune the mechanism; zero values take defaults.
type EngineOptions struct {
	Holder     string        // identity in leases and reasons (default: DefaultHolder, unique per process)
	Successor  string        // a holder with this prefix is a previous instance of ours: take its leases over
	CancelWait time.Duration // abort/rollback: how long the node's holder has to stop (default 2 min)
	Poll       time.Duration // migration poll interval (default 2 s)
	StallAfter time.Duration // no fall in memory remaining for this long is a stall (default 60 s)
	OnStall    string        // wait, force-complete (default) or abort
	Attempts   int           // live-migration attempts per VM (default 2)
	LeaseTTL   time.Duration // default 60 s, renewed every third of it
	Backoff    time.Duration // first retry delay after a PDB refusal (default 1 s, doubling to 30 s)
	// PaceWindow and PaceSlow tune the pace (pace.go): how long a window of the cloud's
	// answers is (default 3 s), and the 90th percentile above which it is slow (default 1 s).
	PaceWindow, PaceSlow time.Duration
	Now                  func() time.Time
	// OwnerTold hears each VM owner told ahead (owners.go): its project's own webhook
	// ([notify.projects]). nil: none.
	OwnerTold func(model.Notice)
}

// Escalations when a migration stalls.
const (
	StallWait          = "wait"
	StallForceComplete = "force-complete"
	StallAbort         = "abort"
)

// NewEngine builds an engine; nova may be nil.
func NewEngine(kube Kube, nova Nova, cfg model.Config, o EngineOptions) *Engine {
	if o.Holder == "" {
		o.Holder = DefaultHolder()
	}
	if o.Poll == 0 {
		o.Poll = 2 * time.Second
	}
	if o.StallAfter == 0 {
		o.StallAfter = time.Minute
	}
	if o.OnStall == "" {
		o.OnStall = StallForceComplete
	}
	if o.Attempts == 0 {
		o.Attempts = 2
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = time.Minute
	}
	if o.CancelWait == 0 {
		o.CancelWait = 2 * time.Minute
	}
	if o.Backoff == 0 {
		o.Backoff = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var ns NovaSource
	if nova != nil {
		ns = nova
	}
	e := &Engine{kube: kube, nova: nova, inv: NewInventory(kube, ns, cfg.Mapping), cfg: cfg, o: o,
		migSlots: make(chan struct{}, cfg.Concurrency.MigrationsPerCluster),
		running:  map[string]*tracked{}, budgets: map[string]*budgetGate{}, forgotten: map[string]time.Time{},
		told:     map[string]map[string]time.Time{},
		inflight: map[string]int{}, mine: map[string]string{}, sent: map[string][]sentVM{},
		ranked: make(chan struct{}), steps: stepTable()}
	_, _ = rand.Read(e.refKey[:])
	e.pace = newPace(cfg.Concurrency.MigrationsPerCluster, cmp.Or(o.PaceWindow, paceWindow), cmp.Or(o.PaceSlow, paceSlow), o.Now)
	e.pace.deaf = cfg.Concurrency.StaticCaps // the caps alone: the pace hears nothing, and stays at the cap
	if nova != nil {
		nova.OnAnswer(e.pace.observer(paceCloud))
	}
	if kube != nil {
		kube.OnAnswer(e.pace.observer(paceKube))
	}
	e.leaseHolders = shared.New(leaseReadTimeout, func(ctx context.Context) (map[string]string, error) {
		return kube.LeasesHeldBy(ctx, o.Holder)
	})
	return e
}

// Holder is the engine's identity in leases, journals and disabled reasons.
func (e *Engine) Holder() string { return e.o.Holder }

// Inventory is the engine's view of the cluster.
func (e *Engine) Inventory() *Inventory { return e.inv }

// NovaConfigured reports whether VMs are managed.
func (e *Engine) NovaConfigured() bool { return e.nova != nil }

// RunOptions are one operation's request: the common part (the policy and its overrides,
// why, the batch it is planned in), then one parameter type per kind of operation, each
// read by its planner and steps only.
type RunOptions struct {
	Policy  policy.Options
	Why     string   // appended to nova-compute's disabled_reason
	Leaving []string // other nodes emptied in the same batch
	// Later are nodes a campaign empties after this one: a VM goes to one of them only when
	// no other host has room for it (it would be moved again).
	Later []string
	// FromCache: plan from the Kubernetes cache and the last Nova read (refreshed every
	// refresh_interval) instead of reading Nova again: for a view re-planning as an operator
	// toggles overrides. Each step still reads what it acts on before it acts.
	FromCache bool
	// ByHost: plan on the node's host read afresh, by itself, on the last whole read of Nova
	// (at most wholeReadEvery old) with the hosts this process moved VMs to read again
	// (Inventory.ReadNodes): a campaign's plans, many a minute, cost bytes by the node, not by
	// the cloud. A host another actor added or changed elsewhere is seen at the next whole read.
	ByHost bool
	// Campaign: the campaign this evacuation is a node of, journaled on the node; its plan
	// evicts the pods beside the moves.
	Campaign string

	EvacuateParams
	MigrateParams
	RecoverParams
	UncordonParams
}

// EvacuateParams are an evacuation's.
type EvacuateParams struct {
	// VMsOnly: the Nova half only (an evacuation: disable nova-compute, migrate the VMs; an
	// uncordon: the canary, enable nova-compute, restart the VMs stopped, close the journal).
	// The daemon uses it when someone else cordoned or uncordoned the node: the pods and the
	// node's schedulability are theirs.
	VMsOnly bool
	// KeepLease: an evacuation keeps the node's lease when it ends, as a cordon does, until
	// uncordon releases it (a NodeMaintenance holds the node for as long as it exists).
	KeepLease bool
	// OwnerLead caps the lead the VMs' owners are given for this run ([notify] owner_lead;
	// nil: the configuration's; 0: none, an emergency's). It never lengthens it.
	OwnerLead *time.Duration
}

// OwnerLead is the lead the VMs' owners are given ahead of a move in a run with ro.
func (e *Engine) OwnerLead(ro RunOptions) time.Duration {
	lead := e.cfg.Notify.OwnerLead.D()
	if ro.OwnerLead != nil {
		lead = max(0, min(lead, *ro.OwnerLead))
	}
	return lead
}

// MigrateParams are a migration's (one VM).
type MigrateParams struct {
	To string // destination host ("" lets Nova's scheduler choose)
	// Returning: this migrate brings a VM home (uncordon's return): the VM's own
	// maintenance policy applies, as it did when it left.
	Returning bool
	// Seen is the VM as read just before the plan (a return's): with ByHost the plan reads To
	// afresh on the last whole read and puts the VM where it was read, not the cloud nor the
	// VM's host (a campaign's returns).
	Seen *model.VM
}

// RecoverParams are a recovery's: the machine is proven off by FenceCmd exiting 0 ({node}:
// the node's name), or by the operator's word (ConfirmFenced, journaled with who and when).
type RecoverParams struct {
	FenceCmd      string
	ConfirmFenced bool
	Automatic     bool // started by automatic recovery, not a person (its ledger says so)
}

// UncordonParams are the way back's (uncordon, rollback).
type UncordonParams struct {
	ForceCompute bool // re-enable a service someone else disabled
	// ReturnVMs: bring home the VMs the node's journal says left it, once the node is back
	// and proven.
	ReturnVMs bool
}

type tracked struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Cancel stops the operation running on node in this process at its next safe point and
// returns a channel closed once it has stopped (and recorded where); nil if none runs.
func (e *Engine) Cancel(node string) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.running[node]; ok {
		t.cancel()
		return t.done
	}
	return nil
}

func (e *Engine) track(node string, cancel context.CancelFunc) func() {
	t := &tracked{cancel: cancel, done: make(chan struct{})}
	e.mu.Lock()
	e.running[node] = t
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		if e.running[node] == t {
			delete(e.running, node)
		}
		e.mu.Unlock()
		close(t.done)
	}
}

// Now is the engine's clock (injected in tests).
func (e *Engine) Now() time.Time { return e.o.Now() }

func (e *Engine) now() time.Time { return e.o.Now() }

// ForceComplete asks the VM's running live migration to finish now (the TUI's key).
func (e *Engine) ForceComplete(ctx context.Context, vmID string) error {
	if e.nova == nil {
		return fmt.Errorf("Nova is not configured")
	}
	ms, err := e.nova.ServerMigrations(ctx, vmID)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Status == model.MigrationRunning {
			return e.nova.ForceComplete(ctx, vmID, m.ID)
		}
	}
	return fmt.Errorf("no running migration for %s", vmID)
}

// Recommend ranks every node as a scale-down victim: candidates cheapest first, the others
// with every reason they cannot go.
// With fresh false it re-joins with the last Nova read instead of reading Nova again.
func (e *Engine) Recommend(ctx context.Context, o policy.Options, fresh bool) ([]policy.Victim, model.Inventory, error) {
	e.rankMu.Lock()
	defer e.rankMu.Unlock()
	// Nothing changed since the last ranking (a notification that brought nothing new): the
	// last one stands. At 150,000 pods a re-join copies every pod.
	events, novaAt := e.inv.Version()
	if l := e.lastRank; !fresh && l != nil && l.events == events && l.novaAt.Equal(novaAt) && reflect.DeepEqual(l.opts, o) {
		return l.victims, l.inv, nil
	}
	inv, changed, all, err := e.inv.ReadChanged(ctx, fresh)
	if err != nil {
		e.ranker, e.lastRank = policy.Ranker{}, nil // the changes taken are lost with the read: rank everything next time
		return nil, inv, err
	}
	victims := e.ranker.Rank(inv, changed, all, o, policy.WeightsFromConfig(e.cfg.ScaleDown))
	if fresh { // the read moved novaAt on
		_, novaAt = e.inv.Version()
	}
	e.lastRank = &lastRanking{events: events, novaAt: novaAt, opts: o, victims: victims, inv: inv}
	e.rankedOne.Do(func() { close(e.ranked) })
	return victims, inv, nil
}

// FirstRanking is closed once the first full ranking is done: the startup's heaviest work
// (a process may then hand its garbage back to the system).
func (e *Engine) FirstRanking() <-chan struct{} { return e.ranked }

// ScaleDown empties a node (the evacuation, refused on the same blockers), deletes its Node
// object and, with a pool, terminates its machine, shrinking the pool. Each step is skipped
// when already done, so a rerun resumes.
func (e *Engine) ScaleDown(ctx context.Context, node string, ro RunOptions, pool MachinePool, emit func(Event)) (rep Report, err error) {
	k, ok := e.kube.Node(node)
	if !ok {
		return Report{}, &UsageError{Problem: fmt.Sprintf("no Kubernetes node named %q", node)}
	}
	ro.Policy.NodeRemoved = true // a VM restarted in place would have no host to start on
	plan, err := e.Plan(ctx, model.OpEvacuate, node, ro)
	if err != nil {
		return Report{}, err
	}
	// One report ends it, scale-down's own: the evacuation's, ended by delete and terminate
	// (the evacuation's report is not sent on: a second end of one run). Refused, interrupted
	// or failed, the evacuation's result is scale-down's.
	evacuation := func(ev Event) {
		if _, end := ev.(RunDone); !end {
			emit(ev)
		}
	}
	defer func() {
		rep.Op, rep.Finished = model.OpScaleDown, e.now()
		emit(NewRunDone(e.now(), rep))
	}()
	if rep, err = e.Run(ctx, plan, ro, evacuation); err != nil {
		return rep, err
	}
	failed := func(err error) (Report, error) {
		rep.Result, rep.Error = ResultFailed, err.Error()
		return rep, err
	}
	step := func(kind model.StepKind, state StepState, detail string) {
		emit(NewStepEvent(e.now(), node, kind, state, detail))
	}
	step(model.StepDeleteNode, StepStarted, "delete the Node object")
	if err := e.kube.DeleteNode(ctx, node); err != nil {
		step(model.StepDeleteNode, StepFailed, err.Error())
		return failed(err)
	}
	step(model.StepDeleteNode, StepDone, "deleted")
	if pool == nil {
		step(model.StepTerminate, StepSkipped, "no cloudpool configured: the machine stays")
		return rep, nil
	}
	step(model.StepTerminate, StepStarted, "terminate the machine, decrementing the desired size")
	id, err := pool.TerminateNode(ctx, node, k.ProviderID)
	if err != nil {
		step(model.StepTerminate, StepFailed, err.Error())
		return failed(err)
	}
	step(model.StepTerminate, StepDone, "machine "+id+" terminated")
	return rep, nil
}

// The controllers' view of the cluster: what they watch and the leases they keep, always
// through the engine (the same cache and identity as its operations).

// Subscribe signals Kubernetes changes (coalesced) until cancel is called.
func (e *Engine) Subscribe() (<-chan struct{}, func()) { return e.kube.Subscribe() }

// KubeNode is the node as the informer cache has it.
func (e *Engine) KubeNode(name string) (model.KubeNode, bool) { return e.kube.Node(name) }

// KubeNodeNames is every node's name, sorted.
func (e *Engine) KubeNodeNames() []string {
	nodes := e.kube.Nodes()
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	return names
}

// PodsOn is the node's pods as the informer cache has them.
func (e *Engine) PodsOn(node string) []model.Pod { return e.kube.PodsOn(node) }

// HoldLease takes or renews the node's maintenance lease for this engine's holder.
func (e *Engine) HoldLease(ctx context.Context, node string, ttl time.Duration) error {
	return e.kube.AcquireLease(ctx, node, e.o.Holder, ttl, e.mayReplace)
}

// NodeHolder is who holds the node's lease now ("": nobody, or it lapsed).
func (e *Engine) NodeHolder(ctx context.Context, node string) (string, error) {
	h, _, err := e.kube.LeaseHolder(ctx, node)
	return h, err
}

// ReleaseLease gives the node's lease back, if this engine's holder has it.
func (e *Engine) ReleaseLease(ctx context.Context, node string) error {
	return e.kube.ReleaseLease(ctx, node, e.o.Holder)
}

// TargetReason says why dest cannot take vm (nil: it can), by the destination rules an
// evacuation applies (policy.TargetReason): the target picker offers only the hosts it
// passes, as --to accepts only them.
func (e *Engine) TargetReason(vm model.VM, dest model.Node) *model.Reason {
	return policy.TargetReason(vm, dest, e.cpuRatio())
}

// startHold is the process's hold of the cluster-wide start lock (caps.go says how it is taken).
type startHold struct {
	mu        sync.Mutex
	runs      int              // the runs in the hold
	since     time.Time        // when the hold began
	releasing bool             // the last run left: the lease is being given back
	released  chan struct{}    // closed when this hold ends
	asked     map[string]int64 // the VMs whose moves were asked for under it: the newest record before each
}
