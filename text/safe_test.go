package text

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
)

// Hostile is what a tenant can name a VM or put in a message: a title change, a screen
// clear, a fake line after a newline, an OSC 8 link, a bidi override, C1 controls, bad UTF-8.
const Hostile = "vm\x1b]0;pwned\x07\x1b[2J\x1b[H\r\ndrainctl: evacuate done\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\u202etxt.exe\u009b31m\xff\u2028end"

func TestSafeEscapesEverythingATerminalWouldObey(t *testing.T) {
	got := Safe(Hostile)
	want := `vm\x1b]0;pwned\x07\x1b[2J\x1b[H\x0d\x0adrainctl: evacuate done\x1b]8;;http://x\x1b\link\x1b]8;;\x1b\\u202etxt.exe\u009b31m\xff\u2028end`
	if got != want {
		t.Errorf("Safe:\n got %s\nwant %s", got, want)
	}
	if i := unsafeAt(got); i >= 0 {
		t.Errorf("Safe's output still has an unsafe character at %d: %q", i, got)
	}
	if lipgloss.Width(got) != len(got) { // all ASCII now: the width is the length
		t.Errorf("width %d of %d bytes", lipgloss.Width(got), len(got))
	}
}

func TestSafeKeepsPrintableTextAsItIs(t *testing.T) {
	for _, s := range []string{"", "compute-7", "ns/web-5d9f", "héllo wörld 日本 ✓ → …", `back\slash`} {
		if got := Safe(s); got != s {
			t.Errorf("Safe(%q) = %q", s, got)
		}
	}
	if strings.Contains(Safe("a\tb"), "\t") {
		t.Error("a tab in a value would shift the columns")
	}
}

func TestSprintfMakesEveryTextArgumentSafe(t *testing.T) {
	type status string
	got := Sprintf("%s|%v|%s|%d\n", "a\x1bb", status("c\x07"), errString("e\u009bf"), 7)
	if want := `a\x1bb|c\x07|e\u009bf|7` + "\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
