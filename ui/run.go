package ui

import (
	"context"
	"errors"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/ops"
)

// Run shows the TUI until the operator quits. Quitting waits for (or aborts, or records)
// running operations as the operator chose in the quit dialog.
func Run(ctx context.Context, eng *ops.Engine, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := tea.NewProgram(New(ctx, eng, o), tea.WithAltScreen(), tea.WithContext(ctx))
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}
