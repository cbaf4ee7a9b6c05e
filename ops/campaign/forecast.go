package campaign

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
)

// A campaign's forecast, made before its first node: what each node moves, how long its VMs
// take at this cloud's live-migration rate (measured from its last completed migrations:
// each one's guest memory over its time, else [roll] migration_rate_mib), the whole
// campaign's time at its parallelism, and the least free memory the fleet keeps while the
// nodes are out in the campaign's order. A campaign whose least free memory falls below
// [roll] min_headroom_percent is refused, naming the node where it would.

// byHostUpTo is how many nodes a forecast reads host by host, on the last whole read of Nova
// (at most five minutes old): a proposal of a few nodes at 5,000 hosts took seconds on a
// whole read. Past it, one whole read costs less than a read a host.
const byHostUpTo = 50

func (r *Campaign) readForForecast(ctx context.Context) (model.Inventory, error) {
	var names []string
	for _, n := range r.Record().Nodes {
		if !n.Phase.Finished() {
			names = append(names, n.Name)
		}
	}
	if len(names) <= byHostUpTo && !r.e.Config().Capacity.Need().On() { // the room is every host's
		return r.e.Inventory().ReadNodes(ctx, names...)
	}
	return r.e.Inventory().Read(ctx)
}

// measuredMigrations is how many recent live migrations the rate is measured from.
const measuredMigrations = 20

// forecast computes the forecast of the campaign's nodes not yet finished.
func (r *Campaign) forecast(ctx context.Context) (model.Forecast, error) {
	e := r.e
	inv, err := r.readForForecast(ctx)
	if err != nil {
		return model.Forecast{}, err
	}
	f := model.Forecast{RateMiBps: e.Config().Campaign.MigrationRateMiB, RateSource: "configured: [roll] migration_rate_mib"}
	if e.NovaConfigured() {
		if ms, err := e.RecentLiveMigrations(ctx, measuredMigrations); err == nil {
			if rate, n := migrationRate(ms, inv); n > 0 {
				f.RateMiBps, f.RateSource = rate, fmt.Sprintf("measured across the fleet from its last %d live migration(s)", n)
			}
		}
	}
	perSource := max(1, e.Config().Concurrency.MigrationsPerSource)
	var order, moving []string // moving: the nodes it will empty (not those it skips)
	for _, n := range r.Record().Nodes {
		if n.Phase.Finished() {
			continue
		}
		node, ok := inv.Node(n.Name)
		if !ok {
			continue
		}
		nf := model.NodeForecast{Node: n.Name, VMs: len(node.VMs)}
		if hold := r.ownersHold(node.VMs); hold.why != "" && !n.Phase.Started() {
			nf.OwnersWindow, nf.OwnersWindowUntil = hold.why, hold.until
		}
		for _, vm := range node.VMs {
			nf.VMMemoryMB += vm.RAMMB
		}
		r.noteHome(n.Name, n.Phase, node.VMs)
		for _, pod := range node.Pods {
			if v, _ := policy.ClassifyPod(pod, r.o.Run.Policy); v == policy.Evict || v == policy.Later {
				nf.Pods++
			}
		}
		if n.Phase == model.PhasePending || n.Phase == model.PhaseEvacuating {
			// Each node's own plan, as its check will make it (from the read above): a
			// refusal is known before the first node, not two nodes into the campaign.
			ro := r.o.Run
			ro.Leaving = nil
			if p, err := e.PlanOn(ctx, inv, model.OpEvacuate, n.Name, ro); err == nil {
				nf.Blockers = p.Blockers()
				nf.HeldByOwners = ownersStays(p)
				for _, x := range p.Reasons {
					switch {
					case x.Code == model.LostForGood:
						nf.Losses = append(nf.Losses, x)
					case x.Severity == model.Notes && x.ObjectID != "": // a VM's lock, its own policy, its downtime
						nf.VMNotes = append(nf.VMNotes, x)
					}
				}
			}
		}
		seconds := float64(nf.VMMemoryMB) / f.RateMiBps / float64(min(perSource, max(1, nf.VMs)))
		nf.Expected = time.Duration(seconds * float64(time.Second))
		nf.Skip = len(nf.Blockers) > 0 && (r.o.OnFailure == "skip" || len(nf.HeldByOwners) > 0)
		f.Nodes = append(f.Nodes, nf)
		if !nf.Skip {
			f.Total += nf.Expected
			moving = append(moving, n.Name)
		}
		order = append(order, n.Name)
	}
	f.Parallel = max(1, r.o.Parallel)
	if need := e.Config().Capacity.Need(); need.On() && !r.o.Run.Policy.IgnoreFailoverRoom {
		k := policy.FailoverOutAtOnce(inv, moving, f.Parallel, e.CPURatio(), need)
		f.RoomOutAtOnce = &k
		f.Parallel = max(1, min(f.Parallel, k)) // none at once: each node's own check refuses it
	}
	f.Total /= time.Duration(f.Parallel)
	for _, b := range r.o.Gates.Budgets {
		least := time.Duration(0)
		byDomain := map[string]int{}
		for _, n := range moving {
			byDomain[domainOf(e, n, b.Per)]++
		}
		for _, m := range byDomain {
			least = max(least, b.Least(m))
		}
		f.RateFloors = append(f.RateFloors, model.RateFloor{Budget: b.Raw, Least: least}) // beside Total, the copy time
	}
	f.GroupFloors = model.GroupFloors(inv, moving, f.RateMiBps, e.Config().Policy.GroupRules())
	r.lowestFree(&f, inv, order)
	return f, nil
}

// migrationRate is the rate of the completed live migrations: their guests' memory (the VMs
// as the inventory has them) over their durations; n how many were measured.
func migrationRate(ms []model.Migration, inv model.Inventory) (mibps float64, n int) {
	ram := map[string]int64{}
	for _, node := range inv.Nodes {
		for _, vm := range node.VMs {
			ram[vm.ID] = vm.RAMMB
		}
	}
	var mib, secs float64
	for _, m := range ms {
		d := m.UpdatedAt.Sub(m.CreatedAt).Seconds()
		if r, ok := ram[m.InstanceID]; ok && d > 0 && !m.CreatedAt.IsZero() {
			mib += float64(r)
			secs += d
			n++
		}
	}
	if n == 0 || secs == 0 {
		return 0, 0
	}
	return mib / secs, n
}

// lowestFree walks the campaign in order, Parallel nodes out at a time: the hosts not out
// keep their free memory less the VMs of the nodes out. It records the least, and the first
// node out when it falls below the headroom.
func (r *Campaign) lowestFree(f *model.Forecast, inv model.Inventory, order []string) {
	type host struct{ free, capacity, vms int64 }
	hosts := map[string]host{}
	var free, capacity int64
	for _, n := range inv.Nodes {
		if n.Hypervisor == nil || n.Compute == nil || !n.Compute.Enabled {
			continue
		}
		room, ok := n.Hypervisor.Room(r.e.CPURatio())
		if !ok {
			continue
		}
		var vms int64
		for _, vm := range n.VMs {
			vms += vm.RAMMB
		}
		h := host{int64(room.MemoryMB.Free()), int64(room.MemoryMB.Capacity), vms}
		hosts[n.Name] = h
		free += h.free
		capacity += h.capacity
	}
	if capacity == 0 || len(order) == 0 {
		return
	}
	par := f.Parallel
	headroom := r.e.Config().Campaign.MinHeadroomPercent
	f.MinFreePercent = 101
	for i := range order {
		out := order[i:min(len(order), i+par)]
		fr, cp := free, capacity
		for _, name := range out {
			h := hosts[name]
			fr -= h.free + h.vms // its room is gone, and its VMs take others'
			cp -= h.capacity
		}
		pct := 0.0
		if cp > 0 {
			pct = 100 * float64(fr) / float64(cp)
		}
		if pct < f.MinFreePercent {
			f.MinFreeMB, f.MinFreePercent, f.MinFreeAt = fr, pct, order[i]
		}
		if pct < headroom && f.Short == "" {
			f.Short = order[i]
		}
	}
}

// Skipped are the nodes the campaign would skip as the cluster stands: their own plans are
// refused and --on-failure skip was given, or only their VMs' owners hold them (stays).
func (r *Campaign) Skipped() []model.NodeForecast {
	var out []model.NodeForecast
	for _, n := range r.fc.Nodes {
		if n.Skip {
			out = append(out, n)
		}
	}
	return out
}

// Forecast is the campaign's forecast, made when it was read (New).
func (r *Campaign) Forecast() model.Forecast { return r.fc }

// Refusal refuses a campaign before its first node: a node whose own plan is refused
// (unless --on-failure skip, which skips it: Skipped says which), or the fleet's free
// memory falling below the headroom. The node where it falls short is planned with the
// nodes out beside it, so that its own blockers (which VMs fit nowhere) come first.
func (r *Campaign) Refusal(ctx context.Context) error {
	f := r.fc
	var refused []model.Reason
	for _, n := range f.Nodes {
		if !n.Skip {
			refused = append(refused, n.Blockers...)
		}
	}
	if len(refused) > 0 {
		return &ops.RefusedError{Reasons: refused}
	}
	if f.Short == "" {
		return nil
	}
	var reasons []model.Reason
	leaving := []string{f.Short}
	for i, n := range f.Nodes {
		if n.Node == f.Short {
			for _, o := range f.Nodes[i+1 : min(len(f.Nodes), i+max(1, f.Parallel))] {
				leaving = append(leaving, o.Node)
			}
		}
	}
	ro := r.o.Run
	ro.Leaving = leaving
	if p, err := r.e.Plan(ctx, model.OpEvacuate, f.Short, ro); err == nil {
		reasons = p.Blockers()
	}
	return &ops.RefusedError{Reasons: append(reasons, model.Reason{Code: model.NoHostWithRoom, Severity: model.Blocks, Object: f.Short,
		Message: fmt.Sprintf(
			"while %s is out the fleet's free memory would fall to %.0f%% (%d MiB), below [roll] min_headroom_percent (%.0f%%)",
			f.Short,
			f.MinFreePercent,
			f.MinFreeMB,
			r.e.Config().Campaign.MinHeadroomPercent,
		),
		Override: model.OverrideFewerAtOnce})}
}

// ownersStays names the VMs (with their projects) whose owners' stays are all that refuses
// the plan; nil when anything else refuses it too, or an operator's policy says stays.
func ownersStays(p model.Plan) []string {
	var out []string
	for _, b := range p.Blockers() {
		i := slices.IndexFunc(p.VMs, func(vm model.VM) bool { return vm.ID == b.ObjectID })
		if b.Code != model.VMAsksToStay || i < 0 || !strings.HasPrefix(p.VMs[i].PolicyFrom, "its metadata") {
			return nil
		}
		out = append(out, text.Sprintf("%s (project %s)", p.VMs[i].Name, cmp.Or(p.VMs[i].ProjectID, "unknown")))
	}
	return out
}
