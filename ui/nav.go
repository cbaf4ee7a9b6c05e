package ui

// Moving between screens: forward, back, and the pickers opened over a list.

func (m Model) goTo(s screen) Model {
	if s != m.screen {
		m.setStatus("", false) // a status belongs to the screen it was said on
	}
	m.push(s)
	return m
}

// push shows s, remembering the screen it came from. A screen already in the way back is
// returned to instead (the way back never holds a screen twice, nor grows without bound).
func (m *Model) push(s screen) {
	if s == m.screen {
		return
	}
	m.closePicker()
	for i, b := range m.backs {
		if b == s {
			m.backs, m.screen = m.backs[:i], s
			return
		}
	}
	m.backs = append(m.backs, m.screen)
	m.screen = s
}

// openPicker shows a picker in the list pane, over the screen on it: the list under it is
// kept, and the way back holds this screen even if it is that list's (pickers do not nest).
func (m *Model) openPicker(open func(*listPane)) {
	under := m.list
	m.listUnder = &under
	open(&m.list)
	m.backs = append(m.backs, m.screen)
	m.screen = listScreen
}

// closePicker puts back the list a picker on screen was opened over.
func (m *Model) closePicker() {
	if m.screen == listScreen && m.list.kind != nil && m.list.kind.picker && m.listUnder != nil {
		m.list, m.listUnder = *m.listUnder, nil
	}
}

// pop returns to the screen before this one: never to the screen itself, nor to a
// confirmation with nothing left to confirm; with nothing before it, to the nodes.
func (m *Model) pop() {
	m.closePicker()
	for len(m.backs) > 0 {
		s := m.backs[len(m.backs)-1]
		m.backs = m.backs[:len(m.backs)-1]
		if s != m.screen && (s != confirmScreen || m.confirm.pending != nil) {
			m.screen = s
			return
		}
	}
	m.screen = nodesScreen
}
