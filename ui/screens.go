package ui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

// screens is the table of screens, in the order help lists their commands: each row opens
// its pane (a new one, or the one the way back holds) by the `:` commands and the key that
// open it from anywhere. A new screen is its pane's file and a row here; `:`, its help and the
// global keys read the table. The screens opened only from another (a node's detail, a
// confirmation, a describe, a question) have no row: their intents make their panes.
var screens = []screenRow{
	{name: "nodes", commands: []colonCommand{{names: []string{"nodes", "node", "no"},
		run: func(m Model, _ string) (tea.Model, tea.Cmd) { return m.goHome(), nil }}}},
	{name: "lists", commands: listCommands()},
	{name: "victims", key: func(k *KeyMap) Binding { return k.Victims },
		commands: []colonCommand{{names: []string{"victims", "scale-down", "sd"},
			run: func(m Model, _ string) (tea.Model, tea.Cmd) { return m.goTo(&victimsPane{}), nil }}}},
	{name: "operations", key: func(k *KeyMap) Binding { return k.Operations },
		commands: []colonCommand{{names: []string{"ops", "operations", "op"},
			run: func(m Model, _ string) (tea.Model, tea.Cmd) { return m.apply(showOps{}) }}}},
	{name: "campaign", commands: []colonCommand{{names: []string{"campaign", "roll"},
		run: func(m Model, _ string) (tea.Model, tea.Cmd) {
			if m.s.campaign.run == nil { // none of this TUI's own: the one running elsewhere, if any
				return m.openWatch()
			}
			return m.goTo(&campaignPane{}), nil
		}}}},
	{name: "help", key: func(k *KeyMap) Binding { return k.Help },
		commands: []colonCommand{{names: []string{"help", "?"},
			run: func(m Model, _ string) (tea.Model, tea.Cmd) { m.push(&helpPane{}); return m, nil }}}},
}

// screenRow is one screen's row.
type screenRow struct {
	name     string
	commands []colonCommand          // the `:` commands that open it (the first: the key's)
	key      func(k *KeyMap) Binding // the key that opens it from any screen but a modal one (nil: none)
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
		if err := m.nodes().setSort(arg, &m.s); err != nil {
			m.setStatus(err.Error(), true)
			return m, nil
		}
		return m.goHome(), nil
	}},
	{names: []string{"kill"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.power("kill", arg) }},
	{names: []string{"revive"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.power("revive", arg) }},
	{names: []string{"condition"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.condition(arg) }},
	{names: []string{"reserve"}, run: func(m Model, arg string) (tea.Model, tea.Cmd) { return m.reserve(arg) }},
	{names: []string{"q", "quit", "q!"}, run: func(m Model, _ string) (tea.Model, tea.Cmd) { return m.askQuit() }},
}

// colonCommands is every `:` command: the screens', then the actions.
func colonCommands() []colonCommand {
	var out []colonCommand
	for _, row := range screens {
		out = append(out, row.commands...)
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
