package ops

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/shared"
)

// Inventory joins both sides into the model the views show.
type Inventory struct {
	kube   KubeSource
	nova   NovaSource // nil when OpenStack is not configured
	mapper model.HostMapper
	now    func() time.Time

	mu       sync.Mutex
	lastNova *model.NovaSnapshot // the last Nova read, for re-joins on Kubernetes changes
	groups   groupCache          // the VM groups' budgets, worked out from lastNova (groupBudgets)
	novaAt   time.Time           // when it was read
	novaSum  uint64              // its fingerprint: what a view shows of it
	unmoved  bool                // the last read showed nothing new

	// wholeBegan is when the whole read under lastNova began; hostBegan, when the reads by
	// host merged into it since began: what each host's figures can already show.
	wholeBegan time.Time
	hostBegan  map[string]time.Time

	reads *shared.Calls[model.NovaSnapshot] // Nova reads asked at once share the next one

	answered map[string]answeredService // each host's service as Nova last answered a change to it
}

// answeredService is Nova's answer to a change of a service, and when it came.
type answeredService struct {
	svc model.ComputeService
	at  time.Time
}

// novaReadTimeout bounds one shared read: its callers may have gone, others wait.
const novaReadTimeout = 5 * time.Minute

// NewInventory joins kube and nova (nova may be nil: Kubernetes alone).
func NewInventory(kube KubeSource, nova NovaSource, mapping model.MappingConfig) *Inventory {
	i := &Inventory{kube: kube, nova: nova, mapper: model.NewHostMapper(mapping), now: time.Now}
	i.reads = shared.New(novaReadTimeout, i.readWhole)
	return i
}

// NovaConfigured reports whether there is a Nova side.
func (i *Inventory) NovaConfigured() bool { return i.nova != nil }

// Subscribe signals Kubernetes changes (Nova changes are seen by polling Read).
func (i *Inventory) Subscribe() (<-chan struct{}, func()) { return i.kube.Subscribe() }

// Read reads Nova (one refresh) and joins it with the Kubernetes cache.
func (i *Inventory) Read(ctx context.Context) (model.Inventory, error) {
	var ns *model.NovaSnapshot
	if i.nova != nil {
		s, err := i.readNova(ctx)
		if err != nil {
			return model.Inventory{}, err
		}
		ns = &s
	}
	if err := i.kube.WaitSynced(ctx); err != nil { // Nova was read meanwhile
		return model.Inventory{}, err
	}
	return model.Join(i.kube.Snapshot(), ns, i.mapper, i.now()), nil
}

// wholeReadEvery is how old the whole read under a read by host may be: past it, the next
// read by host is a whole one. It bounds what a plan does not see afresh: another actor's
// change on a host that is neither the node's own nor one of this process's destinations.
const wholeReadEvery = 5 * time.Minute

// ReadNodes is Read for a plan on some nodes: their hosts read afresh, each by itself, on
// the last whole read, with the hosts this process moved VMs to since they were last read.
// A campaign's plans so cost bytes by the node, not by the fleet: twenty nodes in flight in a
// cloud of 5,000 hosts no longer read 5,000 hypervisors a plan. The whole read is made again
// when none is younger than wholeReadEvery, or when Nova cannot be read by host.
func (i *Inventory) ReadNodes(ctx context.Context, nodes ...string) (model.Inventory, error) {
	return i.readNodes(ctx, nil, nodes...)
}

// ReadVMTo is ReadNodes for a VM's move to node: node's host read afresh, and the VM put
// where seen says (read just before by the caller), not its host read again: a campaign's
// return costs one host's read, not two.
func (i *Inventory) ReadVMTo(ctx context.Context, seen model.VM, node string) (model.Inventory, error) {
	return i.readNodes(ctx, &seen, node)
}

func (i *Inventory) readNodes(ctx context.Context, seen *model.VM, nodes ...string) (model.Inventory, error) {
	if i.nova == nil {
		return i.Read(ctx)
	}
	i.mu.Lock()
	base, at := i.lastNova, i.novaAt
	i.mu.Unlock()
	if base == nil || i.now().Sub(at) > wholeReadEvery {
		return i.Read(ctx)
	}
	began := i.now()
	want := map[string]model.Hypervisor{}
	for _, h := range base.Hypervisors {
		want[h.Host] = h // only a host some hypervisor stands for can be read by itself
	}
	read := map[string]model.Hypervisor{}
	for h := range i.HostsOf(nodes) {
		hv, ok := want[h]
		if !ok { // a host the whole read did not know (new since?): read the cloud
			return i.Read(ctx)
		}
		read[h] = hv
	}
	// A plan on its own nodes empties them: their room as last read serves. A move to a host
	// (seen) fills it: its room is read afresh.
	part, err := i.nova.HostSnapshot(ctx, read, seen != nil)
	if err != nil {
		if ctx.Err() != nil {
			return model.Inventory{}, err
		}
		return i.Read(ctx) // Nova cannot be read by host: the whole read says what is wrong
	}
	names := make([]string, 0, len(read))
	for h := range read {
		names = append(names, h)
	}
	if seen != nil {
		part.VMs = append(part.VMs, sizedAsRead(*base, *seen))
	}
	i.mu.Lock()
	if i.lastNova != nil && i.novaAt.Equal(at) { // no whole read came meanwhile
		merged := i.withAnswers(i.lastNova.WithHosts(part, names), began)
		i.lastNova, base = &merged, &merged
		if i.hostBegan == nil {
			i.hostBegan = map[string]time.Time{}
		}
		for _, h := range names {
			i.hostBegan[h] = began
		}
	} else {
		merged := i.withAnswers(base.WithHosts(part, names), began)
		base = &merged
	}
	i.mu.Unlock()
	if err := i.kube.WaitSynced(ctx); err != nil {
		return model.Inventory{}, err
	}
	return model.Join(i.kube.Snapshot(), base, i.mapper, i.now()), nil
}

// sizedAsRead is vm with the size the last read gave it, if its flavor is the same: a read of
// one server says its flavor's size, a host's read what it holds in Placement (a
// volume-backed VM holds no disk), and the plan judges room by what it holds.
func sizedAsRead(base model.NovaSnapshot, vm model.VM) model.VM {
	for _, was := range base.VMs {
		if was.ID == vm.ID && was.Flavor == vm.Flavor {
			vm.VCPUs, vm.RAMMB, vm.DiskGB = was.VCPUs, was.RAMMB, was.DiskGB
			break
		}
	}
	return vm
}

// ReadServices is ReadNodes for a plan that reads of Nova only its nodes' compute services:
// each host's services read afresh (one GET a host), on the last read.
func (i *Inventory) ReadServices(ctx context.Context, nodes ...string) (model.Inventory, error) {
	i.mu.Lock()
	fresh := i.lastNova != nil && i.now().Sub(i.novaAt) <= wholeReadEvery
	i.mu.Unlock()
	if i.nova == nil || !fresh {
		return i.ReadNodes(ctx, nodes...)
	}
	for h := range i.HostsOf(nodes) {
		began := i.now()
		svcs, err := i.nova.ComputeServices(ctx, h)
		if err != nil {
			if ctx.Err() != nil {
				return model.Inventory{}, err
			}
			return i.ReadNodes(ctx, nodes...) // the read by host says what is wrong
		}
		for _, svc := range svcs {
			i.serviceSeen(svc, began)
		}
	}
	return i.Rejoin(ctx)
}

// ServiceSet puts a compute service into the last read as Nova answered a change of it (a
// host enabled again): the next plan by host (a campaign's next node) may send VMs there,
// without reading the host again. The room its VMs took is the whole read's until one shows
// it emptied: a host looks fuller, never emptier. VMs sent to hosts are in the engine's
// ledger of room (destinations.go), not read again either.
func (i *Inventory) ServiceSet(svc model.ComputeService) { i.serviceSeen(svc, i.now()) }

// serviceSeen puts svc in as Nova showed it at seen: an answer to a change when it came, a
// read when it began (Nova may have answered it before a change it came back after). A sight
// older than the one kept is dropped: a slow read never undoes a newer answer.
func (i *Inventory) serviceSeen(svc model.ComputeService, seen time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.answered == nil {
		i.answered = map[string]answeredService{}
	}
	if kept, ok := i.answered[svc.Host]; ok && kept.at.After(seen) {
		return
	}
	i.answered[svc.Host] = answeredService{svc, seen}
	if i.lastNova == nil {
		return
	}
	ns := *i.lastNova
	ns.Services = slices.Clone(ns.Services)
	for k, s := range ns.Services {
		if s.ID == svc.ID && s.Host == svc.Host {
			ns.Services[k] = svc
		}
	}
	i.lastNova = &ns
}

// withAnswers is a read begun at began with every service Nova answered a change of since
// put back as it answered: a read begun before drainctl disabled a host (a whole read of a
// large cloud takes seconds) shows it enabled, and kept as it was it would undo the disable in
// every plan made from it (an uncordon would see nothing to enable). Called with i.mu.
func (i *Inventory) withAnswers(ns model.NovaSnapshot, began time.Time) model.NovaSnapshot {
	cloned := false
	for k, s := range ns.Services {
		a, ok := i.answered[s.Host]
		if !ok || !a.at.After(began) || a.svc.ID != s.ID || a.svc == s {
			continue
		}
		if !cloned {
			ns.Services, cloned = slices.Clone(ns.Services), true
		}
		ns.Services[k] = a.svc
	}
	return ns
}

// ServiceAnswered is host's service as Nova answered the last change drainctl made to it, when
// that answer came after since: what a wait for the host to come back sees first.
func (i *Inventory) ServiceAnswered(host string, since time.Time) (model.ComputeService, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	a, ok := i.answered[host]
	if !ok || a.at.Before(since) {
		return model.ComputeService{}, false
	}
	return a.svc, true
}

// HostsOf are the compute hosts of nodes (by name; a compute host's own name stands for
// itself), as the mapping has them.
func (i *Inventory) HostsOf(nodes []string) map[string]bool {
	want := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		want[n] = true
	}
	out := make(map[string]bool, len(nodes))
	for _, n := range i.kube.Nodes() {
		if want[n.Name] {
			out[i.mapper.Host(n)] = true
			delete(want, n.Name)
		}
	}
	for n := range want {
		out[n] = true
	}
	return out
}

// HostOf is the node's compute host as the mapping has it, from the Kubernetes cache alone
// ("" : no such node, or it names none); NodeOf is the node mapped to host.
func (i *Inventory) HostOf(node string) string {
	for _, n := range i.kube.Nodes() {
		if n.Name == node {
			return i.mapper.Host(n)
		}
	}
	return ""
}

func (i *Inventory) NodeOf(host string) string {
	for _, n := range i.kube.Nodes() {
		if i.mapper.Host(n) == host {
			return n.Name
		}
	}
	return ""
}

// readBegan is when the read that the last Nova figures of host come from began: a move
// sent before it may show in them, one sent after cannot.
func (i *Inventory) readBegan(host string) time.Time {
	i.mu.Lock()
	defer i.mu.Unlock()
	if t, ok := i.hostBegan[host]; ok {
		return t
	}
	return i.wholeBegan
}

// lastRead is the last Nova read (one now when there has been none).
func (i *Inventory) lastRead(ctx context.Context) (model.NovaSnapshot, error) {
	i.mu.Lock()
	ns := i.lastNova
	i.mu.Unlock()
	if ns != nil {
		return *ns, nil
	}
	return i.readNova(ctx)
}

// readNova reads Nova afresh. Callers that ask while a read is under way share the next one:
// each gets a read that began after it asked (never an older one), and twenty plans at once
// (a campaign's nodes in flight) cost two reads of the whole cloud, not twenty.
func (i *Inventory) readNova(ctx context.Context) (model.NovaSnapshot, error) {
	return i.reads.Do(ctx)
}

// readWhole is one whole read, kept as the last one.
func (i *Inventory) readWhole(ctx context.Context) (model.NovaSnapshot, error) {
	began := i.now()
	ns, err := i.nova.Snapshot(ctx)
	if err != nil {
		return ns, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	ns = i.withAnswers(ns, began)
	sum := ns.Fingerprint()
	i.lastNova, i.novaAt = &ns, i.now()
	i.unmoved, i.novaSum = sum == i.novaSum, sum
	i.wholeBegan, i.hostBegan = began, nil
	return ns, nil
}

// NovaUnmoved reports whether the last Nova read showed nothing new: a view may then wait
// longer before the next one.
func (i *Inventory) NovaUnmoved() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.unmoved
}

// ReadAllNext makes the next Nova read a full one, not only what changed (a view's r).
func (i *Inventory) ReadAllNext() {
	if f, ok := i.nova.(interface{ ReadAllNext() }); ok {
		f.ReadAllNext()
	}
}

// ReadChanged reads (fresh) or re-joins, and says which nodes' Kubernetes side changed
// since the last ReadChanged (all: unknown), for an incremental ranking.
func (i *Inventory) ReadChanged(ctx context.Context, fresh bool) (model.Inventory, map[string]bool, bool, error) {
	changed, all := i.kube.TakeChanged() // before the snapshot: a change after it is counted again, never lost
	read := i.Rejoin
	if fresh {
		read = i.Read
	}
	inv, err := read(ctx)
	if err != nil {
		return inv, nil, true, err
	}
	return inv, changed, all, nil
}

// Version identifies what a re-join would be made of: the Kubernetes changes seen and the
// Nova read it joins. Equal versions, an equal inventory (but for its time).
func (i *Inventory) Version() (kubeEvents uint64, novaAt time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.kube.Events(), i.novaAt
}

// Syncing says whether the first read of Kubernetes is under way: until it ends, Cached
// is all there is to show (the nodes; the pods arrive when the read ends).
func (i *Inventory) Syncing() bool { return i.kube.Syncing() }

// Cached joins the Kubernetes cache with the last Nova read, whatever it was (none: the
// Kubernetes half alone), without calling anything: what a view shows while Nova fails.
// novaAt is when Nova was last read (zero: never).
func (i *Inventory) Cached() (inv model.Inventory, novaAt time.Time) {
	i.mu.Lock()
	ns, at := i.lastNova, i.novaAt
	i.mu.Unlock()
	return model.Join(i.kube.Snapshot(), ns, i.mapper, i.now()), at
}

// Rejoin joins the Kubernetes cache with the last Nova read, without calling Nova: for
// Kubernetes changes, which arrive far more often than Nova needs reading. Before any
// Read it reads.
func (i *Inventory) Rejoin(ctx context.Context) (model.Inventory, error) {
	i.mu.Lock()
	ns := i.lastNova
	i.mu.Unlock()
	if i.nova != nil && ns == nil {
		return i.Read(ctx)
	}
	if err := i.kube.WaitSynced(ctx); err != nil {
		return model.Inventory{}, err
	}
	return model.Join(i.kube.Snapshot(), ns, i.mapper, i.now()), nil
}

// groupCache keeps the groups' budgets, worked out from the last read of Nova at most once a
// poll interval: membership and budgets change with an owner's metadata, not with each move.
type groupCache struct {
	mu      sync.Mutex
	at      time.Time
	budgets []*model.GroupBudget // by name
}

// stoppedInPlace are the VMs drainctl stopped in place for their restart-in-place, by every
// process, as the nodes' journals say (Kubernetes: every process sees them, written before the
// stop, cleared when the node is released after their start). A claim that can only hold a
// group's next disruption, never start one.
func (i *Inventory) stoppedInPlace() map[string]bool {
	out := map[string]bool{}
	for _, n := range i.kube.Nodes() {
		if _, ok := n.Annotations[JournalAnnotation]; !ok {
			continue
		}
		if j, ok := ReadJournal(n); ok {
			for _, id := range j.Restart {
				out[id] = true
			}
		}
	}
	return out
}

// groupBudgets are the cloud's groups with a budget (model.GroupBudgets), by name, from the
// last read of Nova, worked out again at most once every (a poll interval).
func (i *Inventory) groupBudgets(ctx context.Context, every time.Duration, rules model.GroupRules) []*model.GroupBudget {
	c := &i.groups
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && i.now().Sub(c.at) < every {
		return c.budgets
	}
	ns, err := i.lastRead(ctx)
	if err != nil {
		return c.budgets // as last known: a read that failed takes no budget away
	}
	byName := model.GroupBudgets(ns.VMs, ns.ServerGroups, rules)
	budgets := make([]*model.GroupBudget, 0, len(byName)) // a new slice: callers range over the last one
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		budgets = append(budgets, byName[name])
	}
	c.budgets = budgets
	c.at = i.now()
	return c.budgets
}
