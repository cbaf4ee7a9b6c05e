package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
)

// Lists across the cluster (:vms, :pods) and pickers (a migration's target host, a kube
// context): one pane, filterable, with a cursor. Rows are built when the list opens and
// when the inventory changes, never per frame.

// listKind is one kind of list, one row each: its `:` command, title, columns and rows,
// what enter and d do on a row, and its own keys. A new list (:images, say) is a row here,
// in listKinds: the `:` commands, their help and completion read the rows.
type listKind struct {
	names []string // its `:` command's names (the first is the one help shows)
	// open opens it (nil: built at once from the inventory); recoveries are read first.
	open    func(m Model) (tea.Model, tea.Cmd)
	title   string
	columns func(s *shared) []listColumn
	rows    func(s *shared) []listRow
	// enter on a row on a node (nil: its node opens); describe: d on a row (nil: none).
	enter, describe func(r listRow) intent
	more            func(r listRow, k *KeyMap, none string) []action // its own keys, before d
	picker          bool                                             // opened over another list: closing puts it back
}

var (
	vmList = &listKind{names: []string{"vms", "vm", "servers"}, title: "VMs", columns: vmColumns, rows: vmRows,
		enter:    func(r listRow) intent { return openDetail{r.node, r.key} }, // the node, its cursor on this VM
		describe: func(r listRow) intent { return describe{kind: "vm", key: r.key} },
		more: func(r listRow, k *KeyMap, none string) []action {
			return []action{{key: k.Migrate, disabled: none, do: func() intent { return propose{model.OpMigrate, []string{r.key}} }}}
		}}
	podList = &listKind{names: []string{"pods", "pod", "po"}, title: "Pods", columns: podColumns, rows: podRows,
		describe: func(r listRow) intent { return describe{kind: "pod", key: r.key} }}
	// A recovery's row is its ledger, read whole, not the VMs as they are now.
	recoveryList = &listKind{names: []string{"recoveries", "recovery", "rec"}, open: Model.openRecoveries,
		title: "Recoveries (the records on the cluster, newest first)", columns: recoveryColumns, rows: recoveryRows,
		enter:    func(r listRow) intent { return describe{kind: "recovery", key: r.node} },
		describe: func(r listRow) intent { return describe{kind: "recovery", key: r.node} }}
	// Pickers: their rows are made when they open, from what they pick for.
	hostPicker = &listKind{picker: true}
	ctxPicker  = &listKind{picker: true}
)

// listKinds are the lists a `:` command opens, in the order help lists them.
var listKinds = []*listKind{vmList, podList, recoveryList}

// listCommands are the `:` commands of listKinds.
func listCommands() []colonCommand {
	var out []colonCommand
	for _, k := range listKinds {
		run := func(m Model, _ string) (tea.Model, tea.Cmd) {
			l := &listPane{}
			l.open(k, &m.s)
			return m.goTo(l), nil
		}
		if k.open != nil {
			run = func(m Model, _ string) (tea.Model, tea.Cmd) { return k.open(m) }
		}
		out = append(out, colonCommand{names: k.names, run: run})
	}
	return out
}

// listColumn is a column of a list: its title, width and which of a row's cells it shows
// (narrow terminals leave some out).
type listColumn struct {
	title       string
	width, cell int
}

// fitColumns keeps the columns that fit the width, in order (the first two always), and
// gives the last kept column what is left.
func fitColumns(all []listColumn, width int) []listColumn {
	used := 2
	var out []listColumn
	for _, c := range all {
		if used+c.width+1 <= width || len(out) < 2 {
			out = append(out, c)
			used += c.width + 1
		}
	}
	if n := len(out); n > 0 {
		out[n-1].width += max(0, width-used)
	}
	return out
}

// listRow is one row: its key (what an action acts on), its cells, and what the filter
// searches.
type listRow struct {
	key    string
	node   string // the node it is on, for enter and d
	cells  []string
	search string
}

type listPane struct {
	kind   *listKind
	title  string
	header []listColumn
	rows   []listRow
	shown  []int
	listCursor
	filter  textinput.Model
	editing bool
	// pickers: what choosing a row does
	pick func(key string) intent
}

// kindOf is the list's kind (a list never opened is of none: an empty list).
func (p *listPane) kindOf() *listKind {
	if p.kind == nil {
		return &listKind{}
	}
	return p.kind
}

// openList builds the list of kind from the inventory.
func (p *listPane) open(kind *listKind, s *shared) {
	ti := textinput.New()
	ti.Prompt, ti.CharLimit = "/", 64
	*p = listPane{kind: kind, filter: ti}
	p.rebuild(s)
}

// rebuild recomputes the rows (the inventory changed), keeping the cursor on its row.
func (p *listPane) rebuild(s *shared) {
	was := ""
	if r, ok := p.current(); ok {
		was = r.key
	}
	if k := p.kindOf(); k.rows != nil {
		p.title, p.header, p.rows = k.title, k.columns(s), k.rows(s)
	}
	p.applyFilter()
	for i, idx := range p.shown {
		if p.rows[idx].key == was {
			p.cursor = i
		}
	}
}

func (p *listPane) applyFilter() {
	q := strings.ToLower(strings.TrimSpace(p.filter.Value()))
	p.shown = p.shown[:0]
	for i, r := range p.rows {
		if q == "" || strings.Contains(r.search, q) {
			p.shown = append(p.shown, i)
		}
	}
	p.clamp(len(p.shown))
}

func (p *listPane) current() (listRow, bool) {
	if p.cursor < 0 || p.cursor >= len(p.shown) {
		return listRow{}, false
	}
	return p.rows[p.shown[p.cursor]], true
}

// edit takes a key while the filter is typed.
func (p *listPane) edit(msg tea.KeyMsg) {
	editFilter(&p.filter, &p.editing, msg)
	p.applyFilter()
}

func (p *listPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	return nil, p.move(msg, s, len(p.shown))
}

func (p *listPane) bindings(s *shared) []action {
	k := s.keys
	r, ok := p.current()
	none := ""
	if !ok {
		none = "no row under the cursor"
	}
	enter := action{key: k.Enter, disabled: none}
	switch {
	case p.pick != nil: // enter picks the row: the footer says so
		enter.key = Binding{Binding: key.NewBinding(key.WithKeys(k.Enter.Keys()...), key.WithHelp(k.Enter.Help().Key, "pick"))}
		enter.do = func() intent { return p.pick(r.key) }
	case r.node != "" && p.kindOf().enter != nil:
		enter.do = func() intent { return p.kindOf().enter(r) }
	case r.node != "":
		enter.do = func() intent { return openDetail{r.node, ""} }
	}
	back := action{key: k.Back, do: func() intent {
		switch {
		case p.filter.Value() != "":
			p.filter.SetValue("")
			p.applyFilter()
			return nil
		case p.pick != nil:
			return goBack{}
		}
		return goHome{}
	}}
	filter := action{key: k.Filter, do: func() intent {
		p.editing = true
		p.filter.Focus()
		return nil
	}}
	out := []action{show(k.Up), enter, filter}
	if more := p.kindOf().more; more != nil {
		out = append(out, more(r, k, none)...)
	}
	if d := p.kindOf().describe; d != nil {
		out = append(out, action{key: k.Describe, disabled: none, do: func() intent { return d(r) }})
	}
	return append(out, back)
}

func (p *listPane) view(s *shared) string {
	st := s.st
	var b strings.Builder
	var head []string
	for _, c := range p.header {
		head = append(head, pad(c.title, c.width))
	}
	b.WriteString(st.Title.Render(p.title) + "\n")
	b.WriteString(st.Header.Render(truncate("  "+strings.Join(head, " "), s.width)) + "\n")
	rows := max(1, s.pageSize()-1)
	start := 0
	if p.cursor >= rows {
		start = p.cursor - rows + 1
	}
	end := min(len(p.shown), start+rows)
	for i := start; i < end; i++ {
		r := p.rows[p.shown[i]]
		cells := make([]string, len(p.header))
		for j, c := range p.header {
			if c.cell < len(r.cells) {
				cells[j] = pad(fit(r.cells[c.cell], c.width), c.width)
			}
		}
		line := truncate(marks(i == p.cursor, false)+strings.Join(cells, " "), s.width)
		if i == p.cursor {
			line = st.Cursor.Render(line)
		}
		b.WriteString(line + "\n")
	}
	switch {
	case len(p.rows) == 0:
		b.WriteString(st.Muted.Render("  none") + "\n")
	case len(p.shown) == 0:
		b.WriteString(st.Muted.Render("  nothing matches") + "\n")
	}
	for i := end - start; i < rows; i++ {
		b.WriteString("\n")
	}
	pos := fmt.Sprintf("%d/%d", min(p.cursor+1, len(p.shown)), len(p.shown))
	if v := p.filter.Value(); v != "" {
		pos += " · filter: " + text.Safe(v)
	}
	b.WriteString(st.Muted.Render(pos))
	return b.String()
}

// vmColumns: the name, node, state and migration first; ID, flavor and RAM when they fit.
func vmColumns(s *shared) []listColumn {
	need := []listColumn{{"NAME", 18, 0}, {"NODE", 14, 2}, {"STATUS", 14, 3}, {"MIGRATION", 20, 6}}
	if s.width >= 120 {
		need = []listColumn{
			{"NAME", 20, 0},
			{"ID", 8, 1},
			{"NODE", 16, 2},
			{"STATUS", 16, 3},
			{"FLAVOR", 11, 4},
			{"RAM", 6, 5},
			{"MIGRATION", 30, 6},
		}
	}
	return fitColumns(need, s.width)
}

// vmRows: every VM of the cluster, on its node, with its migration in progress.
func vmRows(s *shared) []listRow {
	var out []listRow
	add := func(vm model.VM, node string, migs []model.Migration) {
		state := string(vm.Status)
		if vm.TaskState != "" {
			state += "/" + vm.TaskState
		}
		if vm.Locked {
			state += " locked"
		}
		mig := moveOf(vm, s.opts.Policy)
		for _, m := range migs {
			if m.InstanceID == vm.ID && m.InProgress() {
				mig = fmt.Sprintf("%s %s→%s", m.Status, m.SourceCompute, orDash(m.DestCompute))
			}
		}
		out = append(
			out,
			listRow{
				key:    vm.ID,
				node:   node,
				cells:  []string{vm.Name, vm.ShortID(), orDash(node), state, vm.Flavor, text.Bytes(vm.RAMMB << 20), mig},
				search: strings.ToLower(strings.Join([]string{vm.Name, vm.ID, node, vm.Host, state, vm.Flavor}, " ")),
			},
		)
	}
	for _, n := range s.inv.Nodes {
		for _, vm := range n.VMs {
			add(vm, n.Name, n.Migrations)
		}
	}
	for _, vm := range s.inv.UnplacedVMs {
		add(vm, "", nil)
	}
	return out
}

func podColumns(s *shared) []listColumn {
	node := max(12, min(24, s.nameWidth))
	if s.width >= 120 {
		return fitColumns(
			[]listColumn{{"NAMESPACE/NAME", 40, 0}, {"NODE", node, 1}, {"OWNER", 11, 2}, {"PHASE", 9, 3}, {"DRAIN", 30, 4}},
			s.width,
		)
	}
	return fitColumns([]listColumn{{"NAMESPACE/NAME", 28, 0}, {"NODE", node, 1}, {"DRAIN", 20, 4}}, s.width)
}

// podRows: every pod of the cluster with what an evacuation of its node does with it.
func podRows(s *shared) []listRow {
	pdbs := pdbMap(s)
	var out []listRow
	for _, n := range s.inv.Nodes {
		for _, pod := range n.Pods {
			owner := pod.OwnerKind
			if owner == "" {
				owner = "(bare)"
			}
			phase := pod.Phase
			if n.Kube != nil && !n.Kube.Ready && phase == "Running" {
				// Its kubelet is not heard from: Kubernetes still says Running (for as long as
				// the pod is not evicted, 5 minutes or for ever), nobody knows.
				phase = "Running?"
			}
			out = append(out, listRow{key: pod.Key() + "@" + n.Name, node: n.Name,
				cells:  []string{pod.Key(), n.Name, owner, phase, drainVerdict(pod, pdbs, s.opts.Policy)},
				search: strings.ToLower(pod.Key() + " " + n.Name + " " + owner + " " + phase)})
		}
	}
	return out
}

// drainVerdict is what an evacuation does with the pod, in a few words.
func drainVerdict(p model.Pod, pdbs map[string]model.PDB, o policy.Options) string {
	switch v, r := policy.ClassifyPod(p, o); v {
	case policy.Block:
		return "blocks: " + string(r.Code)
	case policy.Stay:
		return "stays"
	case policy.Later:
		return "after VMs"
	}
	if r := policy.PDBReason(p, pdbs, o); r != nil {
		return "waits: PDB " + r.Message
	}
	return "evict"
}

// openHostPicker lists where the migration may go: the scheduler's choice, then each host
// that may take every VM of the plan by the rules an evacuation applies (legal, enabled,
// up, with room: refuse, when given, says why one may not), filterable (t in a migrate plan).
func (p *listPane) openHostPicker(pd *pending, s *shared, refuse func(model.VM, model.Node) *model.Reason) {
	p.open(hostPicker, s)
	p.title = "Target host for the migration (enter picks, / filters, esc goes back)"
	p.header = fitColumns([]listColumn{{"HOST", 24, 0}, {"VMS", 4, 1}, {"VCPU", 9, 2}, {"RAM", 11, 3}, {"ZONE", 12, 4}}, s.width)
	sources := map[string]bool{}
	for _, pl := range pd.batch.Plans {
		sources[pl.Host] = true
	}
	p.rows = []listRow{{key: "", cells: []string{"(the scheduler chooses)"}, search: "scheduler"}}
	legal := func(n model.Node) bool {
		for _, pl := range pd.batch.Plans {
			for _, vm := range pl.VMs {
				if refuse != nil && refuse(vm, n) != nil {
					return false
				}
			}
		}
		return true
	}
	for _, n := range s.inv.Nodes {
		if c := n.Compute; c != nil && c.Enabled && c.Up && !sources[n.Host] && legal(n) {
			p.rows = append(p.rows, listRow{key: n.Host, cells: []string{n.Host, fmt.Sprint(len(n.VMs)), text.VCPU(n), text.RAM(n), c.Zone},
				search: strings.ToLower(n.Host + " " + n.Name + " " + c.Zone)})
		}
	}
	p.applyFilter()
	p.pick = func(host string) intent {
		ro := pd.ro
		ro.To, ro.FromCache = host, true
		return replanTo{pd, ro}
	}
}

// openContextPicker lists the kubeconfig's contexts (:ctx without a name).
func (p *listPane) openContextPicker(contexts []string, current string, s *shared) {
	p.open(ctxPicker, s)
	p.title = "Kubernetes context (enter switches, / filters, esc goes back)"
	p.header = fitColumns([]listColumn{{"CONTEXT", 50, 0}, {"", 10, 1}}, s.width)
	p.rows = nil
	for _, c := range contexts {
		mark := ""
		if c == current {
			mark = "(current)"
		}
		p.rows = append(p.rows, listRow{key: c, cells: []string{c, mark}, search: strings.ToLower(c)})
	}
	p.applyFilter()
	p.pick = func(name string) intent { return switchContext{name} }
}
