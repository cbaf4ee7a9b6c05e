package ui

import "reflect"

// Moving between screens: the root's stack of panes is the way back, the pane on screen on
// top and the nodes' at the bottom. Forward pushes, esc pops, and a picker opens over a list.

// top is the pane on screen.
func (m *Model) top() pane { return m.stack[len(m.stack)-1] }

// nodes is the nodes' pane, at the bottom of the stack.
func (m *Model) nodes() *nodesPane { return m.stack[0].(*nodesPane) }

// paneIn is the topmost pane of type P in the way back (nil: none).
func paneIn[P pane](m *Model) P {
	for i := len(m.stack) - 1; i >= 0; i-- {
		if p, ok := m.stack[i].(P); ok {
			return p
		}
	}
	var none P
	return none
}

// on reports whether the pane on screen is a P.
func on[P pane](m *Model) bool {
	_, ok := m.top().(P)
	return ok
}

// sameScreen: a and b are panes of one screen (a picker is a list's).
func sameScreen(a, b pane) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }

// own gives this copy of the model panes of its own: a Model is a value (bubbletea keeps the
// one Update returns, a test may go on from an older one), so its panes must be too.
func (m *Model) own() {
	stack := make([]pane, len(m.stack))
	for i, p := range m.stack {
		v := reflect.ValueOf(p).Elem()
		c := reflect.New(v.Type())
		c.Elem().Set(v)
		stack[i] = c.Interface().(pane)
	}
	m.stack = stack
}

func (m Model) goTo(p pane) Model {
	if !sameScreen(p, m.top()) {
		m.setStatus("", false) // a status belongs to the screen it was said on
	}
	m.push(p)
	return m
}

// goHome returns to the nodes.
func (m Model) goHome() Model { return m.goTo(m.nodes()) }

// push shows p over the screen it came from. A screen already in the way back is returned to
// instead, p in its place: the way back never holds a screen twice, nor grows without bound.
// A picker on screen closes first: the way back shows what it was opened over.
func (m *Model) push(p pane) {
	m.closePicker()
	for i, q := range m.stack {
		if sameScreen(q, p) {
			m.stack = append(m.stack[:i], p)
			return
		}
	}
	m.stack = append(m.stack, p)
}

// swap shows p in place of the pane on screen (a confirmation that runs becomes its operations).
func (m *Model) swap(p pane) {
	if len(m.stack) > 1 {
		m.stack = m.stack[:len(m.stack)-1]
	}
	m.push(p)
}

// openPicker shows a picker over the screen on it, even if that is a list (pickers do not nest).
func (m *Model) openPicker(l *listPane) {
	m.closePicker()
	m.stack = append(m.stack, l)
}

// closePicker takes a picker on screen off the way back.
func (m *Model) closePicker() {
	if l, ok := m.top().(*listPane); ok && l.kind != nil && l.kind.picker && len(m.stack) > 1 {
		m.stack = m.stack[:len(m.stack)-1]
	}
}

// pop returns to the screen before this one, past a confirmation with nothing left to
// confirm; the nodes are never left.
func (m *Model) pop() {
	if len(m.stack) > 1 {
		m.stack = m.stack[:len(m.stack)-1]
	}
	for len(m.stack) > 1 {
		if c, ok := m.top().(*confirmPane); !ok || c.pending != nil {
			return
		}
		m.stack = m.stack[:len(m.stack)-1]
	}
}

// reopen is the pane of type *P in the way back (its state kept), or a new one.
func reopen[P any, PT interface {
	*P
	pane
}](m *Model) PT {
	if p := paneIn[PT](m); p != nil {
		return p
	}
	return PT(new(P))
}
