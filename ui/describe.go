package ui

import (
	"maps"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
)

// describePane is everything drainctl knows of one node, VM or pod (d), as text that wraps
// and scrolls: what a row has to cut (blockers, Nova's messages) is read whole here.
type describePane struct {
	title  string
	lines  []string
	offset int
}

func (p *describePane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	return nil, scrollKey(msg, s, &p.offset, p.body(s), p.rows(s))
}

func (p *describePane) rows(s *shared) int { return max(3, s.height-4) }

// body is the description wrapped to the screen, before scrolling.
func (p *describePane) body(s *shared) string {
	var wrapped []string
	for _, l := range p.lines {
		wrapped = append(wrapped, wrap(l, s.width)...)
	}
	return strings.Join(wrapped, "\n")
}

func (p *describePane) bindings(s *shared) []action {
	k := s.keys
	back := func() intent { return goBack{} }
	return []action{show(k.Up), {key: k.Back, do: back}, {key: k.Describe, hidden: true, do: back}}
}

func (p *describePane) view(s *shared) string {
	off := p.offset
	return s.st.Title.Render(truncate(p.title, s.width)) + "\n" + scrolled(p.body(s), &off, p.rows(s), s.st)
}

// wrap cuts a line into lines of at most w cells at spaces only, continuing indented: a flag
// (--cold-migrate-running) or a name is never broken at its hyphens. A word longer than a
// line is cut where it must be.
func wrap(l string, w int) []string {
	if w < 20 || ansi.StringWidth(l) <= w {
		return []string{l}
	}
	var out []string
	body := strings.TrimLeft(l, " ")
	indent := l[:len(l)-len(body)] // the line's own indentation stays on its first line
	cur, width, limit := indent, len(indent), w
	more := strings.Repeat(" ", max(4, len(indent)+2)) // a continuation sits right of its line's start
	flush := func() {
		out = append(out, cur)
		cur, width, limit = more, len(more), w
	}
	for _, word := range strings.Split(body, " ") {
		ww := ansi.StringWidth(word)
		switch {
		case width > 0 && strings.TrimSpace(cur) != "" && width+1+ww > limit:
			flush()
		case width > 0 && strings.TrimSpace(cur) != "":
			cur, width = cur+" ", width+1
		}
		for ww > limit-width { // a word longer than the line: cut
			part := ansi.Truncate(word, limit-width, "")
			cur += part
			word = strings.TrimPrefix(word, part)
			ww = ansi.StringWidth(word)
			flush()
		}
		cur, width = cur+word, width+ww
	}
	if strings.TrimSpace(cur) != "" {
		out = append(out, cur)
	}
	return out
}

// describeNode: both halves of the node, its journal, every reason it cannot be emptied.
func describeNode(n model.Node, s *shared) describePane {
	var l []string
	add := func(format string, a ...any) { l = append(l, text.Sprintf(format, a...)) }
	if k := n.Kube; k != nil {
		add("Kubernetes: %s · roles %s · created %s", text.KubeState(n), none(strings.Join(k.Roles, ",")), k.Created.Format("2006-01-02"))
		add("  provider ID: %s", none(k.ProviderID))
		for _, t := range k.Taints {
			add("  taint: %s=%s:%s", t.Key, t.Value, t.Effect)
		}
		for _, c := range k.Conditions { // True, Ready aside: a degrading host ([proactive])
			add("  condition: %s", c)
		}
		for _, key := range sortedKeys(k.Labels) {
			add("  label: %s=%s", key, k.Labels[key])
		}
		for _, key := range sortedKeys(k.Annotations) {
			add("  annotation: %s=%s", key, k.Annotations[key])
		}
		add(
			"  allocatable: %d mCPU, %s, %d pods; requested: %d mCPU, %s, %d pods",
			k.Allocatable.MilliCPU,
			text.Bytes(k.Allocatable.MemoryBytes),
			k.Allocatable.Pods,
			n.Requested.MilliCPU,
			text.Bytes(n.Requested.MemoryBytes),
			n.Requested.Pods,
		)
	}
	switch c := n.Compute; {
	case !s.inv.NovaConfigured:
		add("Nova: not configured")
	case c == nil:
		add("Nova: no nova-compute service on this node")
	default:
		add("nova-compute on %s: %s · zone %s · %s", c.Host, text.Compute(n, true), none(c.Zone), lastReport(*c))
		if c.DisabledReason != "" {
			add("  disabled reason: %s", c.DisabledReason)
		}
	}
	if h := n.Hypervisor; h != nil {
		add("hypervisor %s: vCPU %s · RAM %s · %d VMs", h.Hostname, text.VCPU(n), text.RAM(n), h.RunningVMs)
	}
	for _, m := range policy.Disagreements(n, s.inv, s.opts.Policy) {
		add("disagreement %s: %s", m.Code, m.Message)
	}
	// Why a dead node waits: what holds automatic recovery, of it or of every node.
	for _, h := range s.holds {
		if h.Node == n.Name || (h.Node == "" && n.Kube != nil && !n.Kube.Ready) {
			add("%s", text.RecoveryHold(h))
		}
	}
	if v, ok := s.ops.views[n.Name]; ok && v.report != nil { // its last operation here, its error whole (wrapped)
		add("last operation: %s %s", v.report.Op, v.report.Result)
		if v.report.Error != "" {
			add("  %s", v.report.Error)
		}
	}
	if p, ok := s.proactive[n.Name]; ok && p.Cleared.IsZero() {
		add("degrading (%s): [proactive] %s %s", strings.Join(p.Triggers, ", "), p.Action, p.Outcome)
		if p.Error != "" {
			add("  %s", p.Error)
		}
	}
	if nm, ok := s.maint[n.Name]; ok {
		add("NodeMaintenance %s: %s", nm.Name, maintenanceState(nm))
		if nm.Status.LastError != "" {
			add("  last error: %s", nm.Status.LastError)
		}
	}
	for _, v := range s.victims {
		if v.Node == n.Name {
			if v.Candidate {
				add("scale-down: candidate, rank %d, cost %.1f", v.Rank, v.Cost)
			}
			for _, r := range v.Reasons {
				add("why it cannot go: %s", text.Reason(r))
			}
		}
	}
	add("VMs (%d):", len(n.VMs))
	for _, vm := range n.VMs {
		add("  %s (%s) %s %s %s", vm.Name, vm.ShortID(), vm.Status, vm.Flavor, text.Bytes(vm.RAMMB<<20))
	}
	for _, m := range n.Migrations {
		add("  migration %d of %s: %s %s→%s", m.ID, m.InstanceID, m.Status, m.SourceCompute, none(m.DestCompute))
	}
	add("Pods (%d):", len(n.Pods))
	pdbs := pdbMap(s)
	for _, pod := range n.Pods {
		add("  %s: %s", pod.Key(), drainVerdict(pod, pdbs, s.opts.Policy))
		for _, r := range policy.PodBlocks(pod, s.opts.Policy) {
			add("    %s", text.Reason(r))
		}
	}
	return describePane{title: text.Sprintf("describe node %s", n.Name), lines: l}
}

// describeVM: the server as Nova reports it, where it runs, its migration.
func describeVM(id string, s *shared) (describePane, bool) {
	for _, n := range append(s.inv.Nodes, model.Node{VMs: s.inv.UnplacedVMs}) {
		for _, vm := range n.VMs {
			if vm.ID != id {
				continue
			}
			var l []string
			add := func(format string, a ...any) { l = append(l, text.Sprintf(format, a...)) }
			add("ID %s · project %s", vm.ID, none(vm.ProjectID))
			add("status %s · task %s · vm state %s · locked %v", vm.Status, none(vm.TaskState), none(vm.VMState), vm.Locked)
			add("flavor %s: %d vCPU, %s RAM, %d GB disk", vm.Flavor, vm.VCPUs, text.Bytes(vm.RAMMB<<20), vm.DiskGB)
			add("host %s · node %s", vm.Host, none(n.Name))
			switch method, r := policy.VMMove(vm, s.opts.Policy); {
			case ops.MoveFactsOf(method).Stays:
				add("stays on an evacuation: %s", text.Reason(*r))
			case r != nil:
				add("moves %s: %s", method, text.Reason(*r))
			default:
				add("moves %s on an evacuation", method)
			}
			if vm.Zone != "" || vm.AntiAffinity != "" {
				add("zone %s · anti-affinity groups %s", none(vm.Zone), none(vm.AntiAffinity))
			}
			for _, b := range vmGroups(vm, s.inv, s.opts.Groups) {
				add("%s: %d of its %d members disrupted at once at most (%s)", b.Name, b.Max, len(b.Members), b.Source())
			}
			if vm.Pinned != "" {
				add("tied to its host's hardware: %s", vm.Pinned)
			}
			// Its owner's words, as its metadata says them (whether they are heard is said above).
			for _, kv := range [][2]string{{model.VMPolicyKey, vm.PolicyAsked}, {model.RecoveryPriorityKey, vm.PriorityAsked},
				{model.GroupKey, vm.GroupAsked}, {model.MaxDisruptedKey, vm.MaxDisruptedAsked}, {model.WindowKey, vm.WindowAsked},
				{model.MoveNowKey, vm.MoveNowAsked}} {
				if kv[1] != "" {
					add("its owner's %s = %q", kv[0], kv[1])
				}
			}
			if vm.Notice != "" {
				add("its owner told (%s): %s", model.NoticeKey, vm.Notice)
			}
			if vm.Fault != "" {
				add("fault: %s", vm.Fault)
			}
			for _, m := range n.Migrations {
				if m.InstanceID == vm.ID {
					add(
						"migration %d: %s %s→%s, updated %s",
						m.ID,
						m.Status,
						m.SourceCompute,
						none(m.DestCompute),
						m.UpdatedAt.Format("15:04:05"),
					)
				}
			}
			return describePane{title: text.Sprintf("describe VM %s", vm.Name), lines: l}, true
		}
	}
	return describePane{}, false
}

// describePod: the pod, what an evacuation does with it and every reason why.
func describePod(key string, s *shared) (describePane, bool) {
	podKey, node, _ := strings.Cut(key, "@")
	n, ok := s.inv.Node(node)
	if !ok {
		return describePane{}, false
	}
	for _, pod := range n.Pods {
		if pod.Key() != podKey {
			continue
		}
		var l []string
		add := func(format string, a ...any) { l = append(l, text.Sprintf(format, a...)) }
		add("node %s · phase %s · ready %v · owner %s %s", node, pod.Phase, pod.Ready, none(pod.OwnerKind), pod.OwnerName)
		add("requests: %d mCPU, %s", pod.Requests.MilliCPU, text.Bytes(pod.Requests.MemoryBytes))
		if len(pod.PDBs) > 0 {
			add("PodDisruptionBudgets: %s", strings.Join(pod.PDBs, ", "))
		}
		if pod.LocalVolume != "" {
			add("local volume: %s", pod.LocalVolume)
		}
		for _, k := range sortedKeys(pod.Labels) {
			add("label: %s=%s", k, pod.Labels[k])
		}
		for _, k := range sortedKeys(pod.Annotations) {
			add("annotation: %s=%s", k, pod.Annotations[k])
		}
		add("in an evacuation: %s", drainVerdict(pod, pdbMap(s), s.opts.Policy))
		for _, r := range policy.PodBlocks(pod, s.opts.Policy) {
			add("  blocks: %s", text.Reason(r))
		}
		if order, skip, _ := policy.DrainOrder(pod, s.opts.Policy); order != 0 || skip {
			add("drain order: %d (skip %v)", order, skip)
		}
		return describePane{title: text.Sprintf("describe pod %s", pod.Key()), lines: l}, true
	}
	return describePane{}, false
}

func pdbMap(s *shared) map[string]model.PDB {
	pdbs := make(map[string]model.PDB, len(s.inv.PDBs))
	for _, b := range s.inv.PDBs {
		pdbs[b.Namespace+"/"+b.Name] = b
	}
	return pdbs
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// none is s, or "-" when empty.
func none(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// lastReport is how long ago a nova-compute last reported, by Nova's own clock (its answer's
// Date less the report's time): a clock time of the cloud's, printed on this terminal's,
// would read as the future wherever the two disagree.
func lastReport(c model.ComputeService) string {
	if c.UpdatedAt.IsZero() {
		return "no report yet"
	}
	return "last report " + text.Duration(c.Silent) + " ago"
}

// vmGroups are the budgets of the VM groups vm belongs to (model.GroupBudgets), by name.
func vmGroups(vm model.VM, inv model.Inventory, rules model.GroupRules) []*model.GroupBudget {
	all := slices.Clone(inv.UnplacedVMs)
	for _, n := range inv.Nodes {
		all = append(all, n.VMs...)
	}
	budgets := model.GroupBudgets(all, inv.ServerGroups, rules)
	var out []*model.GroupBudget
	for _, name := range slices.Sorted(maps.Keys(budgets)) {
		if budgets[name].Members[vm.ID] {
			out = append(out, budgets[name])
		}
	}
	return out
}
