package ui

import (
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
)

// nodesPane is the node list: cursor, filter and selection.
type nodesPane struct {
	rows []int // indexes into inv.Nodes that pass the filter
	listCursor
	filter   textinput.Model
	editing  bool
	selected map[string]bool
	sortBy   string    // "" (by name), "vms", "pods", "ram", "rank"
	cache    *rowCache // shared by the Model's copies: View works on a copy
}

// rowCache holds the rows rendered for one inventory (generation gen).
type rowCache struct {
	gen  int
	rows map[rowKey]string
}

// sorts are the orders of the node list (> cycles, :sort picks): the most first.
var sorts = []string{"", "vms", "pods", "ram", "rank"}

// setSort orders the list by a column (its name, or a prefix of it).
func (p *nodesPane) setSort(col string, s *shared) error {
	col = strings.ToLower(strings.TrimSpace(col))
	for _, c := range sorts {
		if col == c || (col != "" && strings.HasPrefix(c, col)) || (c == "" && col == "name") {
			p.sortBy = c
			p.applyFilter(s)
			return nil
		}
	}
	return fmt.Errorf("unknown sort %q: use name, vms, pods, ram or rank", col)
}

// sortKey is the value a node sorts by (higher first); name order breaks ties.
func sortKey(by string, n model.Node, s *shared) int64 {
	switch by {
	case "vms":
		return int64(len(n.VMs))
	case "pods":
		return int64(len(n.Pods))
	case "ram":
		if h := n.Hypervisor; h != nil {
			if c, ok := h.Room(1); ok {
				return c.MemoryMB.Used
			}
		}
		return -1
	case "rank": // candidates by rank (1 first), the others after
		if r := s.rank[n.Name]; r > 0 {
			return -int64(r)
		}
		return -1 << 40
	}
	return 0
}

func (p *nodesPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	return nil, p.move(msg, s, len(p.rows))
}

func (p *nodesPane) bindings(s *shared) []action {
	k := s.keys
	n, onNode := p.current(s)
	targets := p.targets(s)
	none := ""
	if len(targets) == 0 {
		none = "nothing selected"
	}
	one := func(what string) string { // an action of one node says so when several are selected
		if len(targets) > 1 {
			return what + " acts on one node at a time: " + strings.Join(targets, ", ") + " are selected (esc clears the selection)"
		}
		return none
	}
	onCursor := ""
	if !onNode {
		onCursor = "no node under the cursor"
	}
	plan := func(op model.OpKind) func() intent {
		return func() intent { return propose{op, targets} }
	}
	return []action{
		show(k.Up),
		{key: k.Enter, disabled: onCursor, do: func() intent { return openDetail{n.Name, ""} }},
		{key: k.Filter, do: func() intent {
			p.editing = true
			p.filter.Focus()
			return runCmd{textinput.Blink}
		}},
		{key: k.Select, disabled: onCursor, do: func() intent {
			if p.selected[n.Name] {
				delete(p.selected, n.Name)
			} else {
				p.selected[n.Name] = true
			}
			p.step(len(p.rows))
			return nil
		}},
		{key: k.Cordon, disabled: none, do: plan(model.OpCordon)},
		{key: k.Evacuate, disabled: none, do: plan(model.OpEvacuate)},
		{key: k.Uncordon, disabled: none, do: plan(model.OpUncordon)},
		{key: k.Describe, disabled: onCursor, do: func() intent { return describe{kind: "node", key: n.Name} }},
		show(k.Command), show(k.Help), show(k.Quit),
		{key: k.Back, hidden: true, do: func() intent {
			if len(p.selected) > 0 {
				p.selected = map[string]bool{}
			} else if p.filter.Value() != "" {
				p.filter.SetValue("")
				p.applyFilter(s)
			}
			return nil
		}},
		{key: k.Sort, hidden: true, do: func() intent {
			for i, c := range sorts {
				if c == p.sortBy {
					p.sortBy = sorts[(i+1)%len(sorts)]
					break
				}
			}
			p.applyFilter(s)
			return showStatus{"sorted by " + sortNote(p.sortBy), false}
		}},
		{key: k.Roll, hidden: true, do: func() intent { return proposeCampaign{targets} }},
		// Abort and rollback act on every selected node; recover on one dead node.
		{key: k.Abort, hidden: true, disabled: none, do: plan(model.OpAbort)},
		{key: k.Rollback, hidden: true, disabled: none, do: plan(model.OpRollback)},
		{key: k.Recover, hidden: true, disabled: one("recover"), do: plan(model.OpRecover)},
		// A NodeMaintenance is one node's.
		{
			key:      k.Maintain,
			hidden:   true,
			disabled: one("a NodeMaintenance"),
			do:       func() intent { return proposeMaint{maintainCreate, targets[0]} },
		},
		{
			key:      k.EndMaintain,
			hidden:   true,
			disabled: one("a NodeMaintenance"),
			do:       func() intent { return proposeMaint{maintainDelete, targets[0]} },
		},
	}
}

// edit takes a key while the filter is being typed.
func (p *nodesPane) edit(msg tea.KeyMsg, s *shared) tea.Cmd {
	cmd := editFilter(&p.filter, &p.editing, msg)
	p.applyFilter(s)
	return cmd
}

// editFilter takes a key typed into a filter: enter keeps it, esc clears it, both end editing.
func editFilter(f *textinput.Model, editing *bool, msg tea.KeyMsg) tea.Cmd {
	switch msg.String() {
	case "enter", "esc":
		*editing = false
		if msg.String() == "esc" {
			f.SetValue("")
		}
		f.Blur()
		return nil
	}
	var cmd tea.Cmd
	*f, cmd = f.Update(msg)
	return cmd
}

// applyFilter recomputes the visible rows; only here, not on every frame.
// The cursor stays on its node wherever the node moves (a new order, a refresh): a key acts
// on the node it was on, not on the one that took its row.
func (p *nodesPane) applyFilter(s *shared) { p.refilter(s, p.currentName(s)) }

// currentName is the name of the node under the cursor ("" without one).
func (p *nodesPane) currentName(s *shared) string {
	if n, ok := p.current(s); ok {
		return n.Name
	}
	return ""
}

// refilter recomputes the rows and puts the cursor on the node named on, when it is listed.
func (p *nodesPane) refilter(s *shared, on string) {
	q := strings.ToLower(strings.TrimSpace(p.filter.Value()))
	p.rows = p.rows[:0]
	for i, n := range s.inv.Nodes {
		if q == "" || strings.Contains(strings.ToLower(n.Name+" "+n.Host+" "+rolesOf(n)), q) {
			p.rows = append(p.rows, i)
		}
	}
	if p.sortBy != "" {
		sort.SliceStable(p.rows, func(i, j int) bool {
			return sortKey(p.sortBy, s.inv.Nodes[p.rows[i]], s) > sortKey(p.sortBy, s.inv.Nodes[p.rows[j]], s)
		})
	}
	for i, r := range p.rows {
		if s.inv.Nodes[r].Name == on {
			p.cursor = i
		}
	}
	p.clamp(len(p.rows))
}

func rolesOf(n model.Node) string {
	if n.Kube == nil {
		return ""
	}
	return strings.Join(n.Kube.Roles, ",")
}

func (p *nodesPane) current(s *shared) (model.Node, bool) {
	if p.cursor < 0 || p.cursor >= len(p.rows) || p.rows[p.cursor] >= len(s.inv.Nodes) {
		return model.Node{}, false
	}
	return s.inv.Nodes[p.rows[p.cursor]], true
}

func (p *nodesPane) cursorNode(s *shared) string {
	n, _ := p.current(s)
	return n.Name
}

// targets are the selected nodes, or the one under the cursor.
func (p *nodesPane) targets(s *shared) []string {
	if len(p.selected) > 0 {
		out := make([]string, 0, len(p.selected))
		for n := range p.selected {
			out = append(out, n)
		}
		sort.Strings(out)
		return out
	}
	if n, ok := p.current(s); ok {
		return []string{n.Name}
	}
	return nil
}

// column is a table column: a title and a width.
type column struct {
	title string
	width int
}

func nodeColumns(s *shared) []column {
	k8s, compute := 9, 12
	if s.width >= 150 { // room for a dead node's whole state: NotReady,SD and disabled/forced-down
		k8s, compute = 11, 20
	}
	cols := []column{
		{"NAME", s.nameWidth},
		{"ROLES", 13},
		{"K8S", k8s},
		{"COMPUTE", compute},
		{"VCPU", 7},
		{"RAM", 11},
		{"VMS", 4},
		{"PODS", 4},
		{"RANK", 4},
	}
	if s.width < 120 { // narrow terminals: the roles go first
		cols = append(cols[:1], cols[2:]...)
	}
	used := 2
	for _, c := range cols {
		used += c.width + 1
	}
	if s.width-used < 4 {
		return cols // no room for notes: the detail screen has them
	}
	return append(cols, column{"OPERATION / NOTES", s.width - used})
}

// view renders only the rows on screen.
func (p *nodesPane) view(s *shared) string {
	st := s.st
	if !s.loaded && !s.partial && s.invErr == nil {
		return st.Muted.Render("reading the cluster…")
	}
	cols := nodeColumns(s)
	var b strings.Builder
	var head []string
	for _, c := range cols {
		head = append(head, pad(c.title, c.width))
	}
	b.WriteString(st.Header.Render(truncate("  "+strings.Join(head, " "), s.width)))
	b.WriteString("\n")
	height := s.pageSize()
	start := 0
	if p.cursor >= height {
		start = p.cursor - height + 1
	}
	end := min(len(p.rows), start+height)
	for i := start; i < end; i++ {
		n := s.inv.Nodes[p.rows[i]]
		b.WriteString(p.row(s, n, cols, i == p.cursor))
		b.WriteString("\n")
	}
	if len(p.rows) == 0 {
		b.WriteString(st.Muted.Render("  no node matches the filter"))
		b.WriteString("\n")
	}
	for i := end - start; i < height; i++ {
		b.WriteString("\n")
	}
	pos := fmt.Sprintf("%d/%d", min(p.cursor+1, len(p.rows)), len(p.rows))
	if len(p.selected) > 0 {
		pos += fmt.Sprintf(" · %d selected", len(p.selected))
	}
	if v := p.filter.Value(); v != "" {
		pos += " · filter: " + text.Safe(v)
	}
	if p.sortBy != "" {
		pos += " · sorted by " + p.sortBy
	}
	b.WriteString(st.Muted.Render(pos))
	return b.String()
}

// rowKey is everything a node's row shows besides the inventory (which s.invGen stands
// for): a cursor moving over 5,000 nodes renders the two rows that changed, not a page.
type rowKey struct {
	name                      string
	cursor, selected, running bool
	podsComing                bool // the first read of the pods goes on: PODS shows …
	notes                     string
	width                     int
}

func (p *nodesPane) row(s *shared, n model.Node, cols []column, cursor bool) string {
	mism := policy.Disagreements(n, s.inv, s.opts.Policy) // doctor's rule
	key := rowKey{n.Name, cursor, p.selected[n.Name], s.ops.running(n.Name), s.syncing, notes(s, n, mism), s.width}
	if p.cache == nil {
		return p.renderRow(s, n, cols, key, mism)
	}
	if p.cache.gen != s.invGen || p.cache.rows == nil {
		p.cache.gen, p.cache.rows = s.invGen, map[rowKey]string{}
	}
	if r, ok := p.cache.rows[key]; ok {
		return r
	}
	r := p.renderRow(s, n, cols, key, mism)
	p.cache.rows[key] = r
	return r
}

func (p *nodesPane) renderRow(s *shared, n model.Node, cols []column, key rowKey, mism []model.Mismatch) string {
	cursor := key.cursor
	mark := marks(cursor, key.selected)
	name := n.Name
	if len(mism) > 0 {
		name = "!" + name
	}
	pods := text.Pods(n)
	if key.podsComing && n.Kube != nil {
		pods = "…" // a count before the pods have all arrived would be a claim
	}
	cells := map[string]string{
		"NAME": name, "ROLES": text.Roles(n), "K8S": kubeShort(n), "COMPUTE": text.Compute(n, s.inv.NovaConfigured),
		"VCPU": text.VCPU(n), "RAM": text.RAM(n), "VMS": text.VMs(n, s.inv.NovaConfigured), "PODS": pods,
		"OPERATION / NOTES": key.notes, "RANK": rankText(s.rank[n.Name]),
	}
	parts := make([]string, 0, len(cols))
	for _, c := range cols {
		cell := cells[c.title]
		if short, ok := narrower[c.title]; ok && len(cell) > c.width { // a dead node's state, whole in fewer letters
			cell = short.Replace(cell)
		}
		parts = append(parts, pad(text.Safe(cell), c.width))
	}
	row := truncate(mark+strings.Join(parts, " "), s.width) // narrow terminals: cut with an ellipsis
	switch {
	case cursor:
		return s.st.Cursor.Render(row)
	case key.selected:
		return s.st.Selected.Render(row)
	case key.running:
		return s.st.Accent.Render(row)
	case len(mism) > 0:
		return s.st.Warn.Render(row)
	}
	return row
}

// narrower are the short forms of the state columns where the whole form does not fit (80
// columns): "NotReady,SD" and "disabled/forced-down" were cut to "NotReady…", "disabled/fo…".
var narrower = map[string]*strings.Replacer{
	"K8S":     strings.NewReplacer("NotReady", "NotRdy"),
	"COMPUTE": strings.NewReplacer("disabled", "dis", "enabled", "en", "forced-down", "forced"),
}

// shortMismatch is a mismatch in a few words, for a row (the detail screen has the sentence).
var shortMismatch = map[model.MismatchCode]string{
	model.CordonedButEnabled:               "cordoned, compute enabled",
	model.DisabledButSchedulable:           "compute disabled, schedulable",
	model.ReadyButComputeDown:              "Ready, compute down",
	model.NoComputeService:                 "no compute service",
	model.NoKubeNode:                       "no Kubernetes node",
	model.NoHypervisor:                     "no hypervisor",
	model.ReserveNotEmpty:                  "reserve runs VMs",
	model.MismatchCode(model.NoNovaHost):   "no Nova host",
	model.MismatchCode(model.HostConflict): "host shared",
}

var progressive = map[model.OpKind]string{model.OpCordon: "cordoning", model.OpEvacuate: "evacuating",
	model.OpMigrate:  "migrating",
	model.OpUncordon: "uncordoning", model.OpAbort: "aborting", model.OpRollback: "rolling back", model.OpRecover: "recovering"}

func rankText(r int) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprint(r)
}

// kubeShort is KubeState with SchedulingDisabled shortened to fit a column.
func kubeShort(n model.Node) string {
	return strings.Replace(text.KubeState(n), ",SchedulingDisabled", ",SD", 1)
}

// notes is the inline operation ("evacuating: 3/7 VMs, 12/40 pods") or what is odd.
func notes(s *shared, n model.Node, mism []model.Mismatch) string {
	if op, ok := s.ops.views[n.Name]; ok && !op.finished() {
		if op.queued {
			return string(op.plan.Op) + " queued"
		}
		vd, vt, pd, pt := op.counts()
		return fmt.Sprintf("%s: %d/%d VMs, %d/%d pods", progressive[op.plan.Op], vd, vt, pd, pt)
	}
	if op, ok := s.ops.views[n.Name]; ok && op.report != nil && op.report.Result != "done" {
		return fmt.Sprintf("%s %s", op.plan.Op, op.report.Result)
	}
	var notes []string // another process's operation, a NodeMaintenance, then who disabled a service and why
	if note := elsewhereNote(s, n); note != "" {
		notes = append(notes, note)
	}
	if nm, ok := s.maint[n.Name]; ok {
		note := "NM " + maintenanceState(nm)
		if nm.Status.Phase == model.MaintenanceFailed && nm.Status.LastError != "" {
			note += ": " + firstLine(nm.Status.LastError)
		}
		notes = append(notes, note)
	}
	if p, ok := s.proactive[n.Name]; ok && p.Cleared.IsZero() && p.Action != model.ProactiveNotify {
		notes = append(notes, "degrading: "+p.Action+" "+p.Outcome) // what [proactive] did, or refused (d says why)
	}
	if n.Compute != nil && !n.Compute.Enabled && n.Compute.DisabledReason != "" {
		notes = append(notes, "disabled: "+n.Compute.DisabledReason)
	}
	for _, mm := range mism {
		notes = append(notes, shortMismatch[mm.Code])
	}
	if len(notes) > 0 {
		return strings.Join(notes, "; ")
	}
	if len(n.Migrations) > 0 {
		return fmt.Sprintf("%d migration(s) in progress", len(n.Migrations))
	}
	return ""
}

// sortNote says the order as it is: the most first, but rank 1 (the cheapest candidate) first.
func sortNote(by string) string {
	switch by {
	case "":
		return "name"
	case "rank":
		return "rank (the cheapest candidate first, the nodes that are none after; > for the next column)"
	}
	return by + " (most first; > for the next column)"
}
