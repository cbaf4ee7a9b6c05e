package ui

import "github.com/charmbracelet/lipgloss"

// Styles are semantic: what a thing means, not its hue. Built once and passed down.
// lipgloss honours NO_COLOR and the terminal's colour profile by itself.
type Styles struct {
	Title, Header, Muted, OK, Warn, Error, Accent, Selected, Cursor, Danger, Box lipgloss.Style
}

// DefaultStyles are drainctl's theme.
func DefaultStyles() Styles {
	return Styles{
		Title:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.AdaptiveColor{Light: "25", Dark: "75"}),
		Header:   lipgloss.NewStyle().Bold(true),
		Muted:    lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "245", Dark: "243"}),
		OK:       lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "28", Dark: "78"}),
		Warn:     lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "130", Dark: "214"}),
		Error:    lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "124", Dark: "203"}).Bold(true),
		Accent:   lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "91", Dark: "177"}),
		Selected: lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "25", Dark: "81"}).Bold(true),
		Cursor:   lipgloss.NewStyle().Reverse(true),
		Danger:   lipgloss.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "124", Dark: "203"}),
		Box:      lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1),
	}
}

type lipglossStyle = lipgloss.Style
