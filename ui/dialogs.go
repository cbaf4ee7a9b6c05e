package ui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/drainctl/drainctl/ui/text"
)

// The help and quit screens: panes without state of their own.

// helpView is generated from the key map.
func helpView(s *shared) string {
	titles := []string{"Move and select", "Operations (destructive: confirmed first)", "Views", "In a confirmation", "Quitting while operations run"}
	var b strings.Builder
	for i, g := range s.keys.groups() {
		b.WriteString(s.st.Header.Render(titles[i]) + "\n")
		for _, k := range g {
			h := k.Help()
			desc := h.Desc
			if !k.Enabled() {
				desc += " (read-only: off)"
			} else if k.Dangerous {
				desc += " ⚠"
			}
			b.WriteString(fmt.Sprintf("  %-8s %s\n", h.Key, desc))
		}
	}
	b.WriteString(s.st.Muted.Render("any key to go back"))
	return b.String()
}

// quitKey: wait for the operations, abort them, or leave them recorded to resume.
func quitKey(msg tea.KeyMsg, s *shared) intent {
	k := s.keys
	switch {
	case matches(msg, k.QuitWait):
		return quitWait{}
	case matches(msg, k.QuitLeave):
		return quitLeave{}
	case matches(msg, k.QuitAbort):
		return quitAbort{}
	case matches(msg, k.Interrupt):
		return quitNow{}
	}
	return nil
}

func quitView(s *shared) string {
	var running []string
	for _, n := range s.ops.runningKeys() {
		running = append(running, string(s.ops.views[n].plan.Op)+" "+text.Safe(n))
	}
	k := s.keys
	var b strings.Builder
	b.WriteString(s.st.Warn.Render("Still running: "+strings.Join(running, ", ")) + "\n\n")
	for _, c := range []struct {
		b    Binding
		text string
	}{{k.QuitWait, "wait for it (go back)"}, {k.QuitAbort, "abort it (abort its migrations), then quit"},
		{k.QuitLeave, "leave it: stop at a safe point, recorded on the node; the same command resumes it"}} {
		if c.b.Enabled() {
			fmt.Fprintf(&b, "  %s  %s\n", c.b.Keys()[0], c.text)
		}
	}
	return b.String()
}
