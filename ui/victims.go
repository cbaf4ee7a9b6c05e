package ui

import (
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/text"
)

// victimsPane is the scale-down ranking, cheapest first, with every reason of the node
// under the cursor.
type victimsPane struct {
	listCursor
}

func (p *victimsPane) update(msg tea.KeyMsg, s *shared) (intent, bool) {
	return nil, p.move(msg, s, len(s.victims))
}

func (p *victimsPane) bindings(s *shared) []action {
	k := s.keys
	node, none := "", ""
	if p.cursor < len(s.victims) {
		node = s.victims[p.cursor].Node
	} else {
		none = "no node ranked yet"
	}
	return []action{
		show(k.Up),
		{key: k.Evacuate, disabled: none, do: func() intent { return propose{model.OpEvacuate, []string{node}} }},
		{key: k.Back, do: func() intent { return goHome{} }},
		show(k.Help),
		{key: k.Describe, hidden: true, disabled: none, do: func() intent { return describe{kind: "node", key: node} }},
	}
}

func (p *victimsPane) view(s *shared) string {
	st := s.st
	var b strings.Builder
	b.WriteString(st.Header.Render(pad("  RANK NODE", 7+s.nameWidth)+"   COST  PODS  VMS  VM MEMORY   WHY NOT") + "\n")
	rows := max(3, s.height-12)
	start := 0
	if p.cursor >= rows {
		start = p.cursor - rows + 1
	}
	for i := start; i < min(len(s.victims), start+rows); i++ {
		v := s.victims[i]
		why := ""
		if len(v.Reasons) > 0 { // what it is about (a pod, a VM) and how many more the detail below lists
			why = v.Reasons[0].Message
			if o := v.Reasons[0].Object; o != v.Node {
				why = v.Reasons[0].Text()
			}
			if len(v.Reasons) > 1 {
				why += text.Sprintf(" (+%d more)", len(v.Reasons)-1)
			}
		}
		line := text.Sprintf(
			"%s%4s %s %6.1f  %4d  %3d  %9s   %s",
			marks(i == p.cursor, false),
			rankText(v.Rank),
			pad(text.Safe(v.Node), s.nameWidth),
			v.Cost,
			v.Pods,
			v.VMs,
			text.Bytes(v.VMMemory<<20),
			why,
		)
		line = truncate(line, s.width)
		switch {
		case i == p.cursor:
			line = st.Cursor.Render(pad(line, s.width))
		case !v.Candidate:
			line = st.Muted.Render(line)
		}
		b.WriteString(line + "\n")
	}
	if p.cursor < len(s.victims) {
		v := s.victims[p.cursor]
		if v.Candidate {
			b.WriteString(st.OK.Render(text.Sprintf("%s can go: its pods and VMs fit elsewhere (rank %d); e evacuates it", v.Node, v.Rank)))
		} else {
			b.WriteString(st.Warn.Render(text.Safe(v.Node)+" cannot go:") + "\n")
			for _, r := range v.Reasons {
				b.WriteString(fit("  "+text.Reason(r), s.width) + "\n")
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
