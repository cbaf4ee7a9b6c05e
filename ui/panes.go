package ui

import (
	tea "github.com/charmbracelet/bubbletea"
)

// pane is one screen: its own state, the keys it takes and its drawing. The root keeps the
// header, the banner, the status line and the keys that work everywhere, and reaches a pane
// only through the panes table.
type pane interface {
	// update takes the keys that are no action of the pane (a cursor's movement, typing);
	// false: not taken, the actions may have it.
	update(msg tea.KeyMsg, s *shared) (intent, bool)
	// bindings are the pane's keys, each beside what it does and why it cannot act now;
	// the footer is drawn from them.
	bindings(s *shared) []action
	view(s *shared) string
}

// modal is a pane that takes every key: the keys that work everywhere do not work under it
// (a confirmation, a question, the quit dialog, help).
type modal interface{ modal() }

// action is a key of a pane, side by side with its handler and the reason it cannot act.
type action struct {
	key      Binding
	do       func() intent // nil: the root's or the cursor's key, listed for the footer
	disabled string        // why the key cannot act now ("": it can); said when pressed
	hidden   bool          // not in the footer (help lists every key)
}

// show is an action the footer lists but the root or the cursor handles.
func show(b Binding) action { return action{key: b} }

// pressKey carries a key to a pane: its own keys first, then the first of its actions bound to
// the key; an action that cannot act says why.
func pressKey(p pane, msg tea.KeyMsg, s *shared) intent {
	if in, ok := p.update(msg, s); ok {
		return in
	}
	for _, a := range p.bindings(s) {
		switch {
		case !matches(msg, a.key):
		case a.disabled != "":
			return showStatus{a.disabled, true}
		case a.do != nil:
			return a.do()
		}
	}
	return nil
}

// footerKeys draws a pane's actions that show, each by its key and help.
func footerKeys(p pane, s *shared) []string {
	var parts []string
	for _, a := range p.bindings(s) {
		if a.hidden || !a.key.Enabled() {
			continue
		}
		h := a.key.Help()
		parts = append(parts, s.st.Header.Render(h.Key)+" "+s.st.Muted.Render(h.Desc))
	}
	return parts
}

// listCursor is the row under the cursor of a list pane: every list pane embeds it, and it
// takes the movement keys (up, down, top, bottom, page up, page down).
type listCursor struct{ cursor int }

// move applies a movement key to the cursor over n rows; false when msg is none.
func (c *listCursor) move(msg tea.KeyMsg, s *shared, n int) bool {
	k := s.keys
	switch {
	case matches(msg, k.Up):
		c.cursor = max(0, c.cursor-1)
	case matches(msg, k.Down):
		c.cursor = max(0, min(n-1, c.cursor+1))
	case matches(msg, k.Top):
		c.cursor = 0
	case matches(msg, k.Bottom):
		c.cursor = max(0, n-1)
	case matches(msg, k.PageUp):
		c.cursor = max(0, c.cursor-s.pageSize())
	case matches(msg, k.PageDown):
		c.cursor = max(0, min(n-1, c.cursor+s.pageSize()))
	default:
		return false
	}
	return true
}

// step moves the cursor one row down, as selecting a row does.
func (c *listCursor) step(n int) { c.cursor = max(0, min(n-1, c.cursor+1)) }

// clamp keeps the cursor on one of n rows.
func (c *listCursor) clamp(n int) { c.cursor = max(0, min(c.cursor, n-1)) }
