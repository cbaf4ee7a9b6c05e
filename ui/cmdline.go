package ui

import (
	"context"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// The command line (k9s's ":"): the screens' commands (:nodes, :vms, :pods, :victims, :ops,
// :campaign, :help) and the actions (:ctx [NAME], :sort COLUMN, :q; the demo's :kill and
// :revive), all from the tables of screens.go. The line is typed in the footer; enter runs
// it, esc drops it.

// Switcher connects to another kube context (the app builds the engine; the view only asks).
type Switcher func(ctx context.Context, kubeContext string) (Switched, error)

// Switched is a connection to another context.
type Switched struct {
	Engine       *ops.Engine
	Where        model.Where
	Maintenances ops.Maintenances
}

func newCommandLine() textinput.Model {
	ti := textinput.New()
	ti.Prompt, ti.CharLimit = ":", 80
	return ti
}

// commandKey takes a key while the command line is typed.
func (m Model) commandKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "esc":
		m.commanding = false
		return m, nil
	case "enter":
		m.commanding = false
		return m.runCommand(strings.TrimSpace(m.cmdline.Value()))
	}
	var cmd tea.Cmd
	m.cmdline, cmd = m.cmdline.Update(msg)
	return m, cmd
}

// runCommand carries out one command line: the screens' commands and the actions (screens.go).
func (m Model) runCommand(line string) (tea.Model, tea.Cmd) {
	verb, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	if verb == "" {
		return m, nil
	}
	for _, c := range colonCommands() {
		if slices.Contains(c.names, verb) {
			return c.run(m, arg)
		}
	}
	try := commandHelp()
	if m.s.opts.Machines != nil {
		try += " :kill :revive :condition :reserve"
	}
	m.setStatus("unknown command :"+verb+" (try "+try+")", true)
	return m, nil
}

// contextCommand is :ctx: a picker of the kubeconfig's contexts, or the one named.
func (m Model) contextCommand(arg string) (tea.Model, tea.Cmd) {
	s := &m.s
	if arg == "" {
		if len(s.opts.Contexts) == 0 {
			m.setStatus("no kubeconfig contexts to switch to", true)
			return m, nil
		}
		picker := &listPane{}
		picker.openContextPicker(s.opts.Contexts, s.opts.Where.KubeContext, s)
		m.openPicker(picker)
		return m, nil
	}
	return m.apply(switchContext{arg})
}

// switchTo connects to another context in a Cmd; operations running on this one must end
// first (they belong to this cluster's engine).
func (m Model) switchTo(name string) (tea.Model, tea.Cmd) {
	switch {
	case m.s.opts.Switch == nil:
		m.setStatus("switching contexts is not available here", true)
		return m, nil
	case len(m.s.ops.runningKeys()) > 0 || m.s.campaign.running():
		m.setStatus("operations run on "+orDash(m.s.opts.Where.KubeContext)+": wait for them or stop them before switching", true)
		return m, nil
	case name == m.s.opts.Where.KubeContext:
		m.setStatus("already on "+name, false)
		return m.goHome(), nil
	}
	m.setStatus("connecting to "+name+"…", false)
	sw, ctx := m.s.opts.Switch, m.ctx
	return m, func() tea.Msg {
		to, err := sw(ctx, name)
		return ctxSwitched{to, err}
	}
}

// switched shows the other cluster: a new engine, nothing of the old one's state.
func (m Model) switched(msg ctxSwitched) (tea.Model, tea.Cmd) {
	if msg.err != nil {
		m.setStatus("switching context: "+firstLine(msg.err.Error()), true)
		return m, nil
	}
	m.eng = msg.to.Engine
	o := m.s.opts
	o.Where, o.Maintenances = msg.to.Where, msg.to.Maintenances
	m.s = shared{opts: o, keys: m.s.keys, st: m.s.st, width: m.s.width, height: m.s.height, ops: newOperations(),
		holder: m.eng.Holder()}
	// The nodes for the new cluster, sorted and filtered as here; no other screen's state.
	nodes := m.nodes()
	nodes.filter.SetValue("")
	m.stack = []pane{&nodesPane{filter: nodes.filter, selected: map[string]bool{}, sortBy: nodes.sortBy, cache: &rowCache{}}}
	m.loading = false
	m.setStatus("now on context "+o.Where.KubeContext, false)
	var tick tea.Cmd
	if !m.ticking { // stopped on Kubernetes alone; this context may have Nova
		m.ticking, tick = true, m.tick()
	}
	return m, tea.Batch(m.refresh(true), m.watchKube(), m.watchMaintenances(), tick)
}

// power makes a demo node's machine die (:kill NODE) or come back (:revive NODE).
func (m Model) power(verb, node string) (tea.Model, tea.Cmd) {
	mach := m.s.opts.Machines
	switch {
	case mach == nil:
		m.setStatus(":"+verb+" is the demo's: a real machine is powered off and on outside drainctl", true)
		return m, nil
	case node == "":
		if n, ok := m.nodes().current(&m.s); ok {
			node = n.Name
		}
	}
	do, what := mach.KillHost, "dead: NotReady, nova-compute down; X recovers it once it has been NotReady for [recover] not_ready_for"
	if m.s.opts.AutoRecovery {
		what = "dead: NotReady, nova-compute down; recovered by itself after not_ready_for and heartbeat_timeout (two dead at " +
			"once: a storm, held)"
	}
	if verb == "revive" {
		do, what = mach.ReviveHost, "running again: nothing of it was recovered, so it needs nothing from drainctl"
		if n, ok := m.s.inv.Node(node); ok && n.Kube != nil {
			if j, ok := ops.ReadJournal(*n.Kube); ok && ops.RowOf(j.Op).DeadNode {
				what = "running again; u brings the recovered node back"
			} else if ok {
				what = "running again; it is under " + string(j.Op) + ": u ends it"
			}
		}
	}
	if err := do(node); err != nil {
		m.setStatus(err.Error(), true)
		return m, nil
	}
	m.setStatus(text.Sprintf("%s %s", node, what), false)
	return m, nil
}

// condition is the demo's `:condition NODE TYPE [off]`: the node reports the condition True
// (a degrading host, as node-problem-detector would say it), or clears it.
func (m Model) condition(arg string) (tea.Model, tea.Cmd) {
	mach := m.s.opts.Machines
	f := strings.Fields(arg)
	switch {
	case mach == nil:
		m.setStatus(":condition is the demo's: a real node's conditions are its reporters' (node-problem-detector)", true)
		return m, nil
	case len(f) < 2 || len(f) > 3 || (len(f) == 3 && f[2] != "off"):
		m.setStatus("usage: :condition NODE TYPE [off], e.g. :condition compute-0 KernelDeadlock", true)
		return m, nil
	}
	on := len(f) == 2
	if err := mach.SetCondition(f[0], f[1], on); err != nil {
		m.setStatus(err.Error(), true)
		return m, nil
	}
	what := "reports " + f[1] + ": [proactive] acts on it (the demo's: evacuate) once the controller's next pass sees it"
	if !on {
		what = "no longer reports " + f[1] + "; what [proactive] did stays until a person undoes it (u)"
	}
	m.setStatus(text.Sprintf("%s %s", f[0], what), false)
	return m, nil
}

// reserve is the demo's `:reserve NODE [off]`: the node labelled the failover reserve (as
// kubectl label would), or no longer.
func (m Model) reserve(arg string) (tea.Model, tea.Cmd) {
	mach := m.s.opts.Machines
	f := strings.Fields(arg)
	switch {
	case mach == nil:
		m.setStatus(":reserve is the demo's: label a real node with [recover] reserve_label=true (kubectl label)", true)
		return m, nil
	case len(f) < 1 || len(f) > 2 || (len(f) == 2 && f[1] != "off"):
		m.setStatus("usage: :reserve NODE [off], e.g. :reserve compute-0", true)
		return m, nil
	}
	on := len(f) == 1
	if err := mach.SetReserve(f[0], on); err != nil {
		m.setStatus(err.Error(), true)
		return m, nil
	}
	what := "labelled the failover reserve: the controller disables its nova-compute at its next pass; a recovery rebuilds there first"
	if !on {
		what = "no longer the failover reserve: the controller enables its nova-compute at its next pass"
	}
	m.setStatus(text.Sprintf("%s %s", f[0], what), false)
	return m, nil
}

// ctxSwitched: the connection to another context is made (or failed).
type ctxSwitched struct {
	to  Switched
	err error
}
