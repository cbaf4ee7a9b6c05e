package ui

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// An operation another process runs (the controller's recovery, a colleague's evacuation) is
// known here only by the journal it keeps on its node: the operations screen lists those too,
// so that `o` never says "no operation" while the controller empties a node.

// elsewhere is one such operation, as its node's journal says it.
type elsewhere struct {
	node    string
	journal ops.Journal
}

// operationsElsewhere are the journals on the inventory's nodes that no operation of this
// process wrote, in the inventory's order.
func operationsElsewhere(s *shared) []elsewhere {
	var out []elsewhere
	for _, n := range s.inv.Nodes {
		j, ok := othersJournal(s, n)
		if !ok {
			continue
		}
		if v, here := s.ops.views[n.Name]; here && !v.finished() {
			continue // this view's own, under way: its pane says more than the journal
		}
		out = append(out, elsewhere{node: n.Name, journal: j})
	}
	return out
}

// othersJournal is the node's journal when another process wrote it.
func othersJournal(s *shared, n model.Node) (ops.Journal, bool) {
	if n.Kube == nil {
		return ops.Journal{}, false
	}
	j, ok := ops.ReadJournal(*n.Kube)
	return j, ok && (s.holder == "" || j.Holder != s.holder)
}

// line says the operation in one row: what, where, how far, by whom, since when.
func (e elsewhere) line() string {
	j := e.journal
	by := cmp.Or(j.Holder, "an unnamed process")
	s := text.Sprintf("%s %s: %s, by %s", j.Op, e.node, j.Phase, by)
	if !j.Updated.IsZero() {
		s += " · journal written " + j.Updated.Format("15:04:05")
	}
	if j.Error != "" {
		s += text.Sprintf(" · %s", firstLine(j.Error))
	}
	return s
}

// elsewhereNote is a node row's note for another process's operation on it ("" when none).
func elsewhereNote(s *shared, n model.Node) string {
	j, ok := othersJournal(s, n)
	if !ok || j.Phase == ops.PhaseDone {
		return ""
	}
	return text.Sprintf("%s %s by %s", j.Op, j.Phase, cmp.Or(ops.HolderRole(j.Holder), "another process"))
}

// writeElsewhere lists the operations elsewhere under a heading, at most rows of them.
func writeElsewhere(b *strings.Builder, s *shared, list []elsewhere, rows int) {
	b.WriteString(s.st.Title.Render("Run by other processes") + s.st.Muted.Render("  (their journals on the nodes)") + "\n")
	for i, e := range list {
		if i == rows-1 && len(list) > rows {
			b.WriteString(s.st.Muted.Render(fmt.Sprintf("  … %d more", len(list)-i)) + "\n")
			break
		}
		b.WriteString(truncate("  "+e.line(), s.width) + "\n")
	}
}
