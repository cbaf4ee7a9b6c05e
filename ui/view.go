package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// View renders the current screen: the header, the pane on screen, the footer. It only
// formats state: no I/O, no clock, no sorting of the whole inventory.
func (m Model) View() string {
	s := &m.s
	p := m.top()
	body := p.view(s)
	head := m.header()
	if b := m.banner(); b != "" {
		head += "\n" + b
	}
	// The keys take as many lines as they need from the rows the body leaves blank (its
	// trailing blank lines, the screen below it): a key cut off the line was never shown.
	lines := strings.Split(body, "\n")
	blank := 0
	for blank < len(lines)-1 && strings.TrimSpace(lines[len(lines)-1-blank]) == "" {
		blank++
	}
	status := 0
	if m.status != "" {
		status = 1
	}
	free := max(0, s.height-(strings.Count(head, "\n")+1)-len(lines)-status-1) + blank
	foot := m.footer(p, 1+free)
	if extra := strings.Count(foot, "\n") - status; extra > 0 {
		lines = lines[:len(lines)-min(blank, extra)]
		body = strings.Join(lines, "\n")
	}
	return head + "\n" + body + "\n" + foot
}

// banner says what the operator must know on every screen: while automatic recovery is
// held, by what (until it ends); while reading the cluster fails, what failed and since when.
func (m Model) banner() string {
	s := &m.s
	var lines []string
	if len(s.holds) > 0 {
		line := "⏸ " + text.Safe(text.RecoveryHold(s.holds[0]))
		if n := len(s.holds) - 1; n > 0 {
			line = fmt.Sprintf("%s (+%d more: :recoveries)", line, n)
		}
		lines = append(lines, s.st.Warn.Render(truncate(line, s.width)))
	}
	if r := m.readsFailing(); r != "" {
		lines = append(lines, r)
	}
	return strings.Join(lines, "\n")
}

// readsFailing says, while reading the cluster fails, what failed and since when, and what
// the screen shows instead (the Kubernetes half, with the last Nova read).
func (m Model) readsFailing() string {
	s := &m.s
	if s.invErr == nil {
		return ""
	}
	shown := "Kubernetes only, Nova never read"
	if !s.novaAt.IsZero() {
		shown = "VMs and hosts as read at " + s.novaAt.Format("15:04:05")
	}
	line := fmt.Sprintf(
		"⚠ reads failing since %s (showing %s): %s",
		s.errSince.Format("15:04:05"),
		shown,
		firstLine(text.SafeErr(s.invErr)),
	)
	return s.st.Error.Render(truncate(line, s.width))
}

// header names the cluster on every screen (context and server, cloud, region), and says
// DEMO and READ-ONLY: the operator always sees what a key would change.
func (m Model) header() string {
	s, w := &m.s, m.s.opts.Where
	parts := []string{s.st.Title.Render("drainctl")}
	if w.Demo {
		parts = append(parts, s.st.Warn.Render("DEMO"))
	}
	if s.opts.ReadOnly {
		parts = append(parts, s.st.Warn.Render("READ-ONLY"))
	}
	pace, paced := m.paced()
	if paced {
		parts = append(parts, s.st.Warn.Render(fmt.Sprintf("PACED %d/%d", pace.Limit, pace.Max)))
	}
	failover, short := failoverLine(s.failover)
	if short { // said first too: a narrow screen keeps it
		parts = append(parts, s.st.Error.Render("ROOM SHORT"))
	}
	if w.KubeContext != "" || w.KubeServer != "" {
		parts = append(parts, s.st.Header.Render("ctx "+text.Safe(orDash(w.KubeContext)))+s.st.Muted.Render(" "+serverHost(w.KubeServer)))
	}
	if w.AuthHost != "" || w.Cloud != "" {
		cloud := "os " + text.Safe(firstNonEmpty(w.Cloud, w.AuthHost))
		if w.Region != "" {
			cloud += "/" + text.Safe(w.Region)
		}
		parts = append(parts, s.st.Header.Render(cloud))
	}
	if s.opts.Title != "" {
		parts = append(parts, s.st.Muted.Render(s.opts.Title))
	}
	info := fmt.Sprintf("%d nodes · %d VMs · %d pods", len(s.inv.Nodes), s.totalVMs, s.totalPods)
	switch {
	case !s.inv.NovaConfigured && s.loaded && s.invErr == nil:
		info += " · Nova not configured"
	case s.syncing:
		info += " · reading pods…"
	case !s.loaded && s.invErr == nil:
		info += " · loading…"
	}
	parts = append(parts, s.st.Muted.Render(info))
	if failover != "" {
		style := s.st.Muted
		if short {
			style = s.st.Error
		}
		parts = append(parts, style.Render(failover))
	}
	if paced {
		parts = append(parts, s.st.Warn.Render(pace.String()+" since "+pace.Changed.Format("15:04:05")))
	}
	return truncate(strings.Join(parts, s.st.Muted.Render(" · ")), s.width)
}

// failoverLine says the room for the next host failure, zone by zone ("" when [capacity]
// asks none), and whether a zone is short of it: "failover room: a 1/1, 112 GiB 40 vCPU spare"
// or "FAILOVER ROOM SHORT: a 0/1, short 16 GiB 4 vCPU".
func failoverLine(rooms []model.ZoneRoom) (string, bool) {
	if len(rooms) == 0 {
		return "", false
	}
	short := slices.ContainsFunc(rooms, model.ZoneRoom.Short)
	var zones []string
	for _, z := range rooms {
		name := text.Safe(z.Zone)
		if name == "" {
			name = "no zone"
		}
		line := fmt.Sprintf("%s %d/%d, %s GiB %s vCPU spare", name, z.Tolerated, z.Tolerate,
			text.Tenths(z.SpareMB/1024), text.Tenths(z.SpareVCPU))
		if z.Short() {
			line = fmt.Sprintf("%s %d/%d, short %s GiB %s vCPU", name, z.Tolerated, z.Tolerate,
				text.Tenths(z.ShortMB/1024), text.Tenths(z.ShortVCPU))
		}
		zones = append(zones, line)
	}
	if short {
		return "FAILOVER ROOM SHORT: " + strings.Join(zones, "; "), true
	}
	return "failover room: " + strings.Join(zones, "; "), false
}

// paced is the engine's pace when it is below its cap: the cloud answered slowly or failed,
// and the next moves start fewer at once than migrations_per_cluster allows. The header
// says it first (short) and last (why and since when) so a narrow screen keeps the first.
func (m Model) paced() (ops.Pace, bool) {
	p := m.s.pace
	return p, p.Limit < p.Max
}

// serverHost is a server URL without its scheme.
func serverHost(u string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		return text.Safe(rest)
	}
	return text.Safe(u)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// footer is the status line and the pane's keys on at most rows lines (p: the pane on screen,
// looked up once a frame).
func (m Model) footer(p pane, rows int) string {
	s := &m.s
	var status string
	if m.status != "" {
		style := s.st.Muted
		if m.statusBad {
			style = s.st.Warn
		}
		status = style.Render(truncate(m.status, s.width)) + "\n"
	}
	switch {
	case m.commanding:
		return status + m.cmdline.View()
	case m.nodes().editing:
		return status + m.nodes().filter.View()
	case m.typingLine():
		return status + m.top().(*listPane).filter.View()
	}
	return status + strings.Join(wrapKeys(footerKeys(p, s), s.width, rows), "\n")
}

// wrapKeys lays the keys out on lines of width, at most rows of them; keys that still do not
// fit end the last line with "…" and the way to see them all.
func wrapKeys(keys []string, width, rows int) []string {
	var out []string
	cur := ""
	for i, k := range keys {
		k = truncate(k, width) // a key wider than a line (its help is long) is cut, marked
		next := k
		if cur != "" {
			next = cur + "  " + k
		}
		if lipgloss.Width(next) <= width {
			cur = next
			continue
		}
		if len(out)+1 >= rows { // the last line: say there are more
			rest := "  … " + strconv.Itoa(len(keys)-i) + " more: ? shows every key"
			out = append(out, truncate(cur, max(1, width-lipgloss.Width(rest)))+rest)
			return out
		}
		out, cur = append(out, cur), k
	}
	return append(out, truncate(cur, width))
}

// scrolled shows the lines of body from *offset that fit in rows (clamping *offset), with
// a last line saying where it is when it does not all fit: long help, long plans.
func scrolled(body string, offset *int, rows int, st *Styles) string {
	lines := strings.Split(body, "\n")
	*offset = max(0, min(*offset, lastOffset(len(lines), rows)))
	if len(lines) <= rows {
		return body
	}
	end := min(len(lines), *offset+rows-1)
	return strings.Join(lines[*offset:end], "\n") + "\n" +
		st.Muted.Render(fmt.Sprintf("lines %d-%d of %d · j/k, pgup/pgdn scroll", *offset+1, end, len(lines)))
}

// lastOffset is the last first line scrolled shows of n lines in rows (one is its footer).
func lastOffset(n, rows int) int {
	if n <= rows {
		return 0
	}
	return n - rows + 1
}

// scrollKey moves a scrolled body's offset by a movement key, clamped as scrolled draws it
// (a pgdn past the end does not leave k presses to spend before the view moves up).
func scrollKey(msg tea.KeyMsg, s *shared, offset *int, body string, rows int) bool {
	k := s.keys
	switch {
	case matches(msg, k.Down):
		*offset++
	case matches(msg, k.Up):
		*offset--
	case matches(msg, k.PageDown):
		*offset += max(1, s.pageSize())
	case matches(msg, k.PageUp):
		*offset -= max(1, s.pageSize())
	default:
		return false
	}
	*offset = max(0, min(*offset, lastOffset(strings.Count(body, "\n")+1, rows)))
	return true
}

// writeLog writes the last rows lines of a log, failures in the error style.
func writeLog(b *strings.Builder, log []logLine, rows int, s *shared) {
	for _, l := range log[max(0, len(log)-rows):] {
		line := truncate(l.at.Format("15:04:05")+" "+l.text, s.width)
		if l.bad {
			b.WriteString(s.st.Error.Render(line) + "\n")
		} else {
			b.WriteString(s.st.Muted.Render(line) + "\n")
		}
	}
}

// marks is a row's first two columns: ▸ under the cursor, ● when selected. The cursor and
// the selection must show without colour (NO_COLOR, monochrome): never by style alone.
func marks(cursor, selected bool) string {
	m := []rune("  ")
	if cursor {
		m[0] = '▸'
	}
	if selected {
		m[1] = '●'
	}
	return string(m)
}

func pad(s string, w int) string {
	s = truncate(s, w)
	if n := lipgloss.Width(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// writeWrapped writes lines wrapped to width in style, never cut: a plan's reasons, a
// campaign's state and forecast.
func writeWrapped(b *strings.Builder, width int, style lipgloss.Style, lines ...string) {
	for _, line := range lines {
		for _, l := range wrap(line, width) {
			b.WriteString(style.Render(l) + "\n")
		}
	}
}

// fit is cluster text made Safe, then cut to w columns: the width is measured on what the
// terminal will show.
func fit(s string, w int) string { return truncate(text.Safe(s), w) }

func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r)) > w-1 {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
