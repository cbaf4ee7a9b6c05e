package ui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// screens is the table of screens: each row carries its pane, the `:` commands that open
// it, the key that opens it from anywhere, and what it resets to on another cluster (:ctx).
// A new screen is its pane's file, its constant and a row here; `:`, its help, the global
// keys and the context switch read the table.
var screens = map[screen]screenRow{
	nodesScreen: {pane: func(m *Model) pane { return &m.nodes },
		commands: []colonCommand{{names: []string{"nodes", "node", "no"}, run: openScreen(nodesScreen)}},
		reset: func(m *Model) {
			filter := m.nodes.filter
			filter.SetValue("")
			m.nodes = nodesPane{filter: filter, selected: map[string]bool{}, sortBy: m.nodes.sortBy, cache: &rowCache{}}
		}},
	detailScreen: {
		pane:  func(m *Model) pane { return &m.detail },
		reset: func(m *Model) { m.detail = detailPane{chosen: map[string]bool{}} },
	},
	confirmScreen: {pane: func(m *Model) pane { return &m.confirm }},
	helpScreen: {pane: func(m *Model) pane { return &m.help }, key: func(k *KeyMap) Binding { return k.Help },
		commands: []colonCommand{
			{names: []string{"help", "?"}, run: func(m Model, _ string) (tea.Model, tea.Cmd) { m.push(helpScreen); return m, nil }},
		}},
	quitScreen: {pane: func(m *Model) pane { return quitPane{} }},
	opScreen: {pane: func(m *Model) pane { return &m.op }, key: func(k *KeyMap) Binding { return k.Operations },
		commands: []colonCommand{
			{names: []string{"ops", "operations", "op"}, run: func(m Model, _ string) (tea.Model, tea.Cmd) { return m.apply(showOps{}) }},
		},
		reset: func(m *Model) { m.op = opPane{} }},
	victimsScreen: {pane: func(m *Model) pane { return &m.victims }, key: func(k *KeyMap) Binding { return k.Victims },
		commands: []colonCommand{{names: []string{"victims", "scale-down", "sd"}, run: func(m Model, _ string) (tea.Model, tea.Cmd) {
			m.victims.cursor = 0
			return m.goTo(victimsScreen), nil
		}}},
		reset: func(m *Model) { m.victims = victimsPane{} }},
	campaignScreen: {pane: func(m *Model) pane { return &m.campaign },
		commands: []colonCommand{{names: []string{"campaign", "roll"}, run: func(m Model, _ string) (tea.Model, tea.Cmd) {
			if m.campaign.run == nil { // none of this TUI's own: the one running elsewhere, if any
				return m.openWatch()
			}
			return m.goTo(campaignScreen), nil
		}}},
		reset: func(m *Model) { m.campaign = campaignPane{} }},
	askScreen:      {pane: func(m *Model) pane { return &m.ask }},
	listScreen:     {pane: func(m *Model) pane { return &m.list }, commands: listCommands()},
	describeScreen: {pane: func(m *Model) pane { return &m.desc }},
}

// screenRow is one screen's row.
type screenRow struct {
	pane     func(m *Model) pane
	commands []colonCommand          // the `:` commands that open it
	key      func(k *KeyMap) Binding // the key that opens it from any screen but a modal one (nil: none)
	reset    func(m *Model)          // its state for another cluster (nil: nothing to reset)
}

// colonCommand is a `:` command: its names (the first is the one help shows) and what it does.
type colonCommand struct {
	names []string
	run   func(m Model, arg string) (tea.Model, tea.Cmd)
}

// actions are the `:` commands that open no screen of their own.
var actions = []colonCommand{
	{names: []string{"ctx", "context"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.contextCommand(arg) }},
	{names: []string{"sort"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) {
		if err := m.nodes.setSort(arg, &m.s); err != nil {
			m.setStatus(err.Error(), true)
			return m, nil
		}
		return m.goTo(nodesScreen), nil
	}},
	{names: []string{"kill"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.power("kill", arg) }},
	{names: []string{"revive"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.power("revive", arg) }},
	{names: []string{"condition"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.condition(arg) }},
	{names: []string{"reserve"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.reserve(arg) }},
	{names: []string{"q", "quit", "q!"}, run: func(m Model, _ string) (tea.Model, tea.Cmd) { return m.askQuit() }},
}

// screenOrder is the order screens' commands are listed in (the table is a map).
var screenOrder = []screen{nodesScreen, listScreen, victimsScreen, opScreen, campaignScreen, helpScreen}

// colonCommands is every `:` command: the screens' (in screenOrder, then any other), then the actions.
func colonCommands() []colonCommand {
	var out []colonCommand
	seen := map[screen]bool{}
	for _, s := range screenOrder {
		out, seen[s] = append(out, screens[s].commands...), true
	}
	for s := range numScreens {
		if !seen[s] {
			out = append(out, screens[s].commands...)
		}
	}
	return append(out, actions...)
}

// commandHelp names the `:` commands for help and for an unknown one: ":nodes :vms … :q".
func commandHelp() string {
	var names []string
	for _, c := range colonCommands() {
		switch c.names[0] {
		case "kill", "revive", "condition", "reserve", "help": // the demo's (its banner says them); ? is help's key
		default:
			names = append(names, ":"+c.names[0])
		}
	}
	return strings.Join(names, " ")
}

// openScreen is a command that shows the screen.
func openScreen(s screen) func(m Model, arg string) (tea.Model, tea.Cmd) {
	return func(m Model, _ string) (tea.Model, tea.Cmd) { return m.goTo(s), nil }
}
