package auto

import (
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// Printer turns the engine's events into lines: progress for people on one writer (stderr),
// and with JSON, one event per line (NDJSON) on another (stdout). It is safe for concurrent
// use: several nodes may be worked at once.
type Printer struct {
	progress io.Writer
	json     io.Writer // nil: no JSON
	// ProgressEvery limits migration progress to one line per VM per interval.
	ProgressEvery time.Duration
	now           func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
}

// NewPrinter writes progress lines to progress and, if jsonOut is not nil, NDJSON to it.
func NewPrinter(progress, jsonOut io.Writer) *Printer {
	return &Printer{progress: progress, json: jsonOut, ProgressEvery: 3 * time.Second, now: time.Now, last: map[string]time.Time{}}
}

// Emit prints one event.
func (p *Printer) Emit(ev ops.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json != nil {
		p.writeJSON(ev)
	}
	if line := p.line(ev); line != "" {
		text.Fprintf(p.progress, "%s %s\n", ev.Time().Format("15:04:05"), line)
	}
}

// eventType names an event in JSON.
func eventType(ev ops.Event) string {
	switch ev.(type) {
	case ops.PlanReady:
		return "plan"
	case ops.StepEvent:
		return "step"
	case ops.PodEvent:
		return "pod"
	case ops.MigrationEvent:
		return "migration"
	case ops.NodeChanged:
		return "node"
	case ops.RunDone:
		return "done"
	case ops.CampaignEvent:
		return "campaign"
	}
	return "event"
}

func (p *Printer) writeJSON(ev ops.Event) { _ = writeLine(p.json, eventType(ev), ev) }

func (p *Printer) line(ev ops.Event) string {
	switch e := ev.(type) {
	case ops.PlanReady:
		return e.Node + " plan: " + ops.Summary(e.Plan)
	case ops.StepEvent:
		if e.State == ops.StepStarted {
			return text.Sprintf("%s %s: %s", e.Node, e.Step, e.Detail)
		}
		if e.Detail != "" {
			return text.Sprintf("%s %s %s: %s", e.Node, e.Step, e.State, e.Detail)
		}
		return text.Sprintf("%s %s %s", e.Node, e.Step, e.State)
	case ops.PodEvent:
		switch e.State {
		case ops.PodBlocked:
			return text.Sprintf("%s pod %s blocked by PDB %s (attempt %d), retrying when it allows",
				e.Node, e.Pod, orDash(e.PDB), e.Attempt)
		case ops.PodFailed:
			return text.Sprintf("%s pod %s failed: %s", e.Node, e.Pod, e.Message)
		case ops.PodGone:
			return text.Sprintf("%s pod %s gone", e.Node, e.Pod)
		}
		return "" // evicting/evicted: the gone line says it
	case ops.MigrationEvent:
		if e.Progress() {
			if t, ok := p.last[e.VMID]; ok && p.now().Sub(t) < p.ProgressEvery {
				return ""
			}
			p.last[e.VMID] = p.now()
			pct := 0.0
			if e.Total > 0 {
				pct = 100 * float64(e.Total-e.Remaining) / float64(e.Total)
			}
			// the ETA with the rate remaining falls at, the link's rate apart
			eta := text.CopyETA(e.ETA, e.Converge, text.Rate)
			s := text.Sprintf("%s vm %s %s→%s %3.0f%%, %s of %s left, %s, link %s", e.Node, e.VM, e.Source, orDash(e.Dest), pct,
				text.Bytes(e.Remaining), text.Bytes(e.Total), eta, text.Rate(e.Rate))
			if e.Processed > e.Total && e.Total > 0 {
				s += text.Sprintf(", sent %s (%.1f× its memory, rewritten as it copies)",
					text.Bytes(e.Processed), float64(e.Processed)/float64(e.Total))
			}
			if e.Stalled {
				s += " STALLED"
			}
			if e.Message != "" {
				s += ": " + e.Message
			}
			return s
		}
		s := text.Sprintf("%s vm %s %s", e.Node, e.VM, e.State)
		if ops.MoveFactsOf(e.Method).Named {
			s = text.Sprintf("%s vm %s (%s) %s", e.Node, e.VM, e.Method, e.State)
		}
		if e.Dest != "" && (e.State == ops.MigCompleted || e.State == "queued" || e.State == "preparing") {
			s += text.Sprintf(" %s→%s", e.Source, e.Dest)
		}
		if e.Message != "" {
			s += ": " + e.Message
		}
		return s
	case ops.NodeChanged:
		return text.Sprintf("%s %s", e.Node, e.What)
	case ops.RunDone:
		return summary(e.Report)
	case ops.CampaignEvent:
		return campaignLine(e)
	}
	return ""
}

// campaignLine is a campaign's progress: a node's phase or a line of its step, or the
// campaign's state, with the count and the ETA.
func campaignLine(e ops.CampaignEvent) string {
	count := text.Sprintf("[%d/%d", e.Done, e.Done+e.InProgress+e.Left)
	if e.ETA > 0 {
		count += ", eta " + text.Duration(e.ETA)
	}
	count += "]"
	if e.Node != "" {
		s := text.Sprintf("campaign %s %s %s %s", e.Campaign, count, e.Node, e.Phase)
		if e.Message != "" {
			s += ": " + text.Safe(e.Message)
		}
		return s
	}
	s := text.Sprintf("campaign %s %s %s", e.Campaign, count, e.State)
	if e.Message != "" {
		s += ": " + text.Safe(e.Message)
	}
	return s
}

// summary is the closing line of an operation.
func summary(r ops.Report) string {
	counts := map[string]int{}
	for _, v := range r.VMs {
		counts["VM(s) "+string(v.Result)]++
	}
	for _, pd := range r.Pods {
		counts["pod(s) "+string(pd.Result)]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, text.Sprintf("%d %s", counts[k], k))
	}
	s := text.Sprintf("%s %s %s in %s", r.Node, r.Op, r.Result, text.Duration(r.Finished.Sub(r.Started)))
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if r.Error != "" {
		s += ": " + r.Error
	}
	for _, v := range r.VMs { // what would have moved a VM that did not move
		if v.Override != "" {
			s += text.Sprintf(" (%s: use %s to override)", v.VM, text.Flag(model.Reason{Object: v.VM, Override: v.Override}))
		}
	}
	return s
}

// WritePlan prints a plan for --dry-run and for refusals: steps, then every reason with
// the override that lifts it.
func WritePlan(w io.Writer, p model.Plan) {
	text.Fprintf(w, "plan: %s\n", ops.Summary(p))
	for i, s := range p.Steps {
		text.Fprintf(w, "  %s\n", text.Step(i, s))
	}
	for _, vm := range p.VMs { // how each VM moves, when not every one moves live by the default policy
		if vm.Method != "" && !ops.MoveFactsOf(vm.Method).Default || text.VMOwnWord(vm) != "" {
			for _, vm := range p.VMs {
				disk := ""
				if vm.Disk != "" {
					disk = ": " + vm.Disk
				}
				if own := text.VMOwnWord(vm); own != "" {
					disk += " · " + own
				}
				text.Fprintf(w, "     %-6s %s (%s, %s)%s\n", vm.Method, vm.Name, vm.Status, text.Bytes(vm.RAMMB<<20), disk)
			}
			break
		}
	}
	for _, r := range p.Reasons {
		sev := string(r.Severity)
		switch r.Code {
		case model.LostForGood:
			sev = "LOST"
		case model.Downtime:
			sev = "DOWN"
		}
		text.Fprintf(w, "  %-6s %s\n", sev, text.Reason(r))
	}
}
