package ui

import (
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// lineInput is one line typed into a pane (a reason, a command): enter keeps it, esc drops
// it. While it is open the pane takes every key, so q or : are letters, not commands.
type lineInput struct {
	field string // what is being typed ("" when nothing is)
	in    textinput.Model
}

// open starts typing field, from its value now.
func (l *lineInput) open(field, prompt, value string, limit int) {
	l.in = textinput.New()
	l.in.Prompt, l.in.CharLimit = prompt, limit
	l.in.SetValue(value)
	l.in.Focus()
	l.field = field
}

// typing reports whether a line is open.
func (l *lineInput) typing() bool { return l.field != "" }

// key takes a key while typing; done: enter kept the value (trimmed) of the field.
func (l *lineInput) key(msg tea.KeyMsg) (field, value string, done bool) {
	switch msg.String() {
	case "enter":
		field, value = l.field, strings.TrimSpace(l.in.Value())
		l.field = ""
		return field, value, true
	case "esc":
		l.field = ""
	default:
		l.in, _ = l.in.Update(msg)
	}
	return "", "", false
}

func (l *lineInput) view() string { return l.in.View() }
