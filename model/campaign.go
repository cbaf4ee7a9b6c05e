package model

import (
	"slices"
	"time"
)

// A campaign is a rolling maintenance: many nodes emptied, worked on and returned one group
// at a time (drainctl --auto roll). Its record lives on the cluster, so a rerun (or another
// operator's) resumes where it stopped.

// CampaignState is where a campaign stands as a whole.
type CampaignState string

// Campaign states.
const (
	CampaignRunning     CampaignState = "running"
	CampaignPaused      CampaignState = "paused"      // waits after its current nodes
	CampaignStopped     CampaignState = "stopped"     // a capacity check refused the next node
	CampaignFailed      CampaignState = "failed"      // a node failed; it is left as its journal says
	CampaignInterrupted CampaignState = "interrupted" // the process stopped; a rerun resumes
	CampaignDone        CampaignState = "done"
)

// Resumable reports whether a rerun picks the campaign up rather than starting a new one.
func (s CampaignState) Resumable() bool { return s != CampaignDone }

// NodePhase is where one node of a campaign stands. The phases run in this order.
type NodePhase string

// Node phases.
const (
	PhasePending    NodePhase = "pending"
	PhaseEvacuating NodePhase = "evacuating" // cordon, migrate the VMs, evict the pods
	PhaseStep       NodePhase = "step"       // the operator's work: --exec, --wait-ready
	PhaseReturning  NodePhase = "returning"  // uncordon, nova-compute enabled
	PhaseVerifying  NodePhase = "verifying"  // schedulable, service enabled and up
	PhaseDone       NodePhase = "done"
	PhaseFailed     NodePhase = "failed"
	PhaseSkipped    NodePhase = "skipped" // failed, rolled back, and the campaign went on
	// PhaseQuarantined: it would not drain within the node deadline: rolled back, labelled
	// drainctl.io/quarantined with the reason, and the campaign went on (--undrainable quarantine).
	PhaseQuarantined NodePhase = "quarantined"
)

// Started reports whether the node has left pending.
func (p NodePhase) Started() bool { return p != PhasePending }

// RecordedFirst says the campaign's record must say the phase before the phase begins: a
// campaign resumed from the phase before would repeat what this one undoes (the operator's
// step run again on a node already back in service), or it ends the node. The others are
// written behind: a resume from the phase before repeats an idempotent step (the node's own
// journal says where its operation stands).
func (p NodePhase) RecordedFirst() bool {
	return p == PhaseStep || p == PhaseReturning || (p.Finished() && p != PhaseDone)
}

// Finished reports whether nothing more will happen to the node in this campaign.
func (p NodePhase) Finished() bool {
	return p == PhaseDone || p == PhaseSkipped || p == PhaseFailed || p == PhaseQuarantined
}

// Campaign is the record of a rolling maintenance.
type Campaign struct {
	Name     string         `json:"name"`
	Selector string         `json:"selector,omitempty"`
	Nodes    []CampaignNode `json:"nodes"`
	State    CampaignState  `json:"state"`
	Message  string         `json:"message,omitempty"` // why it stopped or failed
	Holder   string         `json:"holder"`            // the process that last ran it
	Started  time.Time      `json:"started"`
	Updated  time.Time      `json:"updated"`
	// How it runs: the options of the run that last ran it.
	Parallel int    `json:"parallel"`
	SpreadBy string `json:"spreadBy,omitempty"` // a node label: never two nodes of one value in flight
	Order    string `json:"order,omitempty"`    // name, given or cost: how the nodes were ordered
	// Exec is the run's --exec, shown masked (its secrets hidden) and never written to the
	// cluster: a command line often carries a BMC password.
	Exec      string `json:"-"`
	WaitReady bool   `json:"waitReady,omitempty"`
	OnFailure string `json:"onFailure"` // "stop" or "skip"
	// NodeDeadline bounds each node's drain; Undrainable says what then: quarantine,
	// rollback or fail. Window is when nodes may start ("" : any time).
	NodeDeadline time.Duration `json:"nodeDeadline,omitempty"`
	Undrainable  string        `json:"undrainable,omitempty"`
	Window       string        `json:"window,omitempty"`
	// Budgets are its rate budgets ([roll] budget), as written: the ETA keeps their floor.
	Budgets []string `json:"budgets,omitempty"`
	// Expected is the forecast's time for the nodes left when it ran: the ETA until a node
	// has finished and the campaign's own measure takes over.
	Expected time.Duration `json:"expected,omitempty"`
}

// CampaignNode is one node's progress in a campaign.
type CampaignNode struct {
	Name   string `json:"name"`
	Domain string `json:"domain,omitempty"` // its --spread-by label's value
	// Budgets are its values of the labels its campaign's rate budgets count per ("1 per
	// rack per 30m": rack's), by label: the ETA holds each value's budget apart.
	Budgets map[string]string `json:"budgets,omitempty"`
	// NotBefore is the soonest its VMs' owners let it start: the end of their maintenance
	// window (a campaign puts such a node after the rest), or of their lead once they were told.
	NotBefore time.Time `json:"notBefore,omitzero"`
	Phase     NodePhase `json:"phase"`
	Started   time.Time `json:"started,omitzero"`
	Finished  time.Time `json:"finished,omitzero"`
	// Expected is its forecast (its VMs' copy time at the measured rate), made before the
	// campaign's first node: what it took is held against it (ForecastError).
	Expected time.Duration `json:"expected,omitempty"`
	Error    string        `json:"error,omitempty"`
	// Blocked is what holds its drain now (a PDB, a VM's migration, a node slot), kept while
	// it holds: a node stuck for hours says why the whole time.
	Blocked string `json:"blocked,omitempty"`
	// With --return-vms: the VMs that left it (from its journal, kept here once it returns:
	// the journal is cleared then), and what became of bringing each home.
	Left    []VMLeft   `json:"left,omitempty"`
	Returns []VMReturn `json:"returns,omitempty"`
	// Home are the IDs of the VMs on it when the campaign began (--return-vms): the ones its
	// return brings back (a VM that visited it from another node goes back there).
	Home []string `json:"home,omitempty"`
	// Skip: the forecast expects it skipped at its check (its blockers, under --on-failure
	// skip or its VMs' owners' stays): it costs the ETA nothing.
	Skip bool `json:"skip,omitempty"`
}

// Count returns how many nodes are finished, in progress and pending.
func (c Campaign) Count() (finished, inProgress, pending int) {
	for _, n := range c.Nodes {
		switch {
		case n.Phase.Finished():
			finished++
		case n.Phase.Started():
			inProgress++
		default:
			pending++
		}
	}
	return
}

// ETAAt is the time left at now, found as the campaign will run: the nodes still to run laid
// into its slots in turn (each in the first slot to free), each taking a node's time, and
// each starting no sooner than its rate budgets let it (a per-label budget for each value
// apart, by the same rule as the gate) nor than its VMs' owners do (NotBefore: their window,
// their lead). A node in progress frees its slot a node's time after it began, or at once
// when it has run longer.
func (c Campaign) ETAAt(now time.Time) time.Duration {
	each := c.nodeTime()
	var free []time.Time // when each slot frees
	budgets := c.rateBudgets()
	for _, n := range c.Nodes {
		if !n.Started.IsZero() {
			budgets.started(n)
		}
		if n.Phase.Started() && !n.Phase.Finished() {
			free = append(free, latest(now, n.Started.Add(c.timeOf(n, each))))
		}
	}
	for len(free) < max(1, c.Parallel) {
		free = append(free, now)
	}
	end := now
	for _, t := range free {
		end = latest(end, t)
	}
	for _, n := range c.toStart() {
		slot := 0
		for i := range free {
			if free[i].Before(free[slot]) {
				slot = i
			}
		}
		at := budgets.admit(n, latest(free[slot], n.NotBefore))
		free[slot] = at.Add(c.timeOf(n, each))
		end = latest(end, free[slot])
	}
	return end.Sub(now)
}

// toStart are the pending nodes it will run, in the order it takes them: those its VMs'
// owners hold come after the rest, as the campaign puts them.
func (c Campaign) toStart() []CampaignNode {
	var out []CampaignNode
	for _, n := range c.Nodes {
		if n.Phase == PhasePending && !n.Skip {
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b CampaignNode) int { return a.NotBefore.Compare(b.NotBefore) })
	return out
}

// timeOf is a node's time: each (the mean of the nodes done), or before any is done its own
// forecast when it has one.
func (c Campaign) timeOf(n CampaignNode, each time.Duration) time.Duration {
	if _, measured := c.meanDone(); !measured && n.Expected > 0 {
		return n.Expected
	}
	return each
}

// budgetRun is the campaign's rate budgets as its ETA runs them: when each domain's nodes
// started, so far and as laid out.
type budgetRun struct {
	budgets []RateBudget
	members []map[string]int         // by budget, its domains' node counts
	starts  []map[string][]time.Time // by budget, its domains' starts
}

func (c Campaign) rateBudgets() budgetRun {
	var r budgetRun
	for _, raw := range c.Budgets {
		b, err := ParseRateBudget(raw)
		if err != nil {
			continue
		}
		members := map[string]int{}
		for _, n := range c.Nodes {
			members[domainIn(b, n)]++
		}
		r.budgets, r.members = append(r.budgets, b), append(r.members, members)
		r.starts = append(r.starts, map[string][]time.Time{})
	}
	return r
}

// domainIn is n's value of the label b counts per ("" : b counts the whole campaign).
func domainIn(b RateBudget, n CampaignNode) string {
	if b.Per == "" {
		return ""
	}
	return n.Budgets[b.Per]
}

func (r budgetRun) started(n CampaignNode) {
	for i, b := range r.budgets {
		d := domainIn(b, n)
		r.starts[i][d] = append(r.starts[i][d], n.Started)
	}
}

// admit is the first moment from at when no budget holds n, n's start there counted.
func (r budgetRun) admit(n CampaignNode, at time.Time) time.Time {
	for held := true; held; {
		held = false
		for i, b := range r.budgets {
			d := domainIn(b, n)
			if h, frees := b.Holds(at, r.starts[i][d], r.members[i][d]); h {
				at, held = frees, true
			}
		}
	}
	n.Started = at
	r.started(n)
	return at
}

// nodeTime is one node's time: the mean of those done, else the forecast's share of each
// node still to run (Expected is their time at the campaign's parallelism).
func (c Campaign) nodeTime() time.Duration {
	if mean, ok := c.meanDone(); ok {
		return mean
	}
	inProgress, pending := c.toRun()
	return c.Expected * time.Duration(max(1, c.Parallel)) / time.Duration(max(1, inProgress+pending))
}

// meanDone is the mean time of the nodes done (false: none is).
func (c Campaign) meanDone() (time.Duration, bool) {
	var sum time.Duration
	done := 0
	for _, n := range c.Nodes {
		if n.Phase == PhaseDone && !n.Started.IsZero() {
			sum += n.Finished.Sub(n.Started)
			done++
		}
	}
	if done == 0 {
		return 0, false
	}
	return sum / time.Duration(done), true
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// toRun counts the nodes in progress and those still to run, leaving out the pending ones
// the forecast expects skipped.
func (c Campaign) toRun() (inProgress, pending int) {
	_, inProgress, pending = c.Count()
	for _, n := range c.Nodes {
		if n.Skip && n.Phase == PhasePending {
			pending--
		}
	}
	return inProgress, pending
}

// ForecastError holds the forecast against the real moves: for the nodes done, what they
// were forecast to take and what they took (started to finished: their pods and checks too,
// which the forecast does not count), and how many.
func (c Campaign) ForecastError() (forecast, took time.Duration, n int) {
	for _, node := range c.Nodes {
		if node.Phase == PhaseDone && !node.Started.IsZero() && node.Expected > 0 {
			forecast += node.Expected
			took += node.Finished.Sub(node.Started)
			n++
		}
	}
	return forecast, took, n
}

// Forecast is what a campaign will cost, said before it starts: per node what moves and how
// long its VMs take at the cloud's live-migration rate, the whole campaign's time at its
// parallelism, and the least free memory the fleet keeps at any point.
type Forecast struct {
	Nodes      []NodeForecast `json:"nodes"`
	RateMiBps  float64        `json:"rateMiBps"`  // live-migration rate assumed
	RateSource string         `json:"rateSource"` // "measured from N live migrations" or "configured"
	Total      time.Duration  `json:"total"`      // the VMs' copy time, nodes run Parallel at once
	// MinFreeMB is the fleet's least free memory (the hosts not in flight, less the VMs of
	// those in flight), MinFreePercent of their capacity, reached while MinFreeAt is emptied.
	MinFreeMB      int64   `json:"minFreeMB"`
	MinFreePercent float64 `json:"minFreePercent"`
	MinFreeAt      string  `json:"minFreeAt,omitempty"`
	// Short names the node where the free memory would fall below the headroom ("" : never).
	Short string `json:"short,omitempty"`
	// Parallel is how many nodes the campaign runs at once: --parallel, or fewer when the
	// room for the next host failure ([capacity]) allows fewer (RoomOutAtOnce).
	Parallel int `json:"parallel"`
	// RoomOutAtOnce is how many nodes, in the campaign's order, can be out at once with that
	// room kept (at most --parallel; 0: one node alone takes it); nil when nothing is asked.
	RoomOutAtOnce *int `json:"roomOutAtOnce,omitempty"`
	// RateFloors are the rate budgets' ([roll] budget) least times, whatever the copy takes.
	RateFloors []RateFloor `json:"rateFloors,omitempty"`
	// GroupFloors are the VM groups' budgets' least times (#57.1), whatever the parallelism.
	GroupFloors []GroupFloor `json:"groupFloors,omitempty"`
}

// NodeForecast is one node's share of a campaign.
type NodeForecast struct {
	Node       string        `json:"node"`
	VMs        int           `json:"vms"`
	VMMemoryMB int64         `json:"vmMemoryMB"`
	Pods       int           `json:"pods"`
	Expected   time.Duration `json:"expected"` // its VMs' copy time
	// Blockers refuse the node's own evacuation plan as the cluster stands (a bare pod, a
	// VM that fits nowhere): the campaign's check at the node would refuse it.
	Blockers []Reason `json:"blockers,omitempty"`
	// Losses are what its evacuation would lose for good under the campaign's overrides (a
	// bare pod under --force, emptyDir data): said before the first node, as a plan says it.
	Losses []Reason `json:"losses,omitempty"`
	// VMNotes are what its plan notes of its VMs (a lock kept, an owner's policy, a cold
	// move's downtime): every VM's lock and policy in the dry run, as in a node's plan.
	VMNotes []Reason `json:"vmNotes,omitempty"`
	// Skip: --on-failure skip leaves it untouched at its check (its blockers): it moves
	// nothing, and the forecast's totals leave it out.
	Skip bool `json:"skip,omitempty"`
	// HeldByOwners: its only blockers are its VMs' owners asking them to stay (their
	// metadata): a campaign skips it and goes on, these VMs (and their projects) named, rather
	// than let one tenant's metadata refuse the fleet.
	HeldByOwners []string `json:"heldByOwners,omitempty"`
	// OwnersWindow: its VMs' owners' windows hold it until OwnersWindowUntil (said why): the
	// campaign takes it after its other nodes, when both windows are open.
	OwnersWindow      string    `json:"ownersWindow,omitempty"`
	OwnersWindowUntil time.Time `json:"ownersWindowUntil,omitzero"`
}

// HeldByOwners begins the error of a campaign's node skipped because its VMs' owners asked
// them to stay.
const HeldByOwners = "held by its VMs' owners (stays), left untouched"
