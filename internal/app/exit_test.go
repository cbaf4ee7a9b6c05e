package app

import (
	"testing"

	"github.com/drainctl/drainctl/ui"
)

// A TUI closed with work unfinished exits 4, as an interrupted --auto run does: a script
// that ran it must not read success.
func TestUnfinishedTUIExitsInterrupted(t *testing.T) {
	if code := ExitCodeOf(&ui.UnfinishedError{Left: 1}); code != ExitInterrupted {
		t.Errorf("exit %d, want %d", code, ExitInterrupted)
	}
}
