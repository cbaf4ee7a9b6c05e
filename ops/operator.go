package ops

import (
	"context"
	"time"

	"github.com/drainctl/drainctl/ops/opcmd"
)

// runOperator runs an operator's command for a node (a fence, a campaign's exec or gate)
// through opcmd, bounded by its kind's timeout ([recover] fence_timeout, [roll]
// exec_timeout, [roll] gate_timeout).
func (e *Engine) runOperator(ctx context.Context, kind opcmd.Kind, template, node, host string, line func(string)) error {
	return opcmd.Run(ctx, opcmd.Spec{Kind: kind, Template: template, Node: node, Host: host, Timeout: e.commandTimeout(kind)}, line)
}

func (e *Engine) commandTimeout(kind opcmd.Kind) time.Duration {
	switch kind {
	case opcmd.Fence:
		return e.cfg.Recover.FenceTimeout.D()
	case opcmd.Exec:
		return e.cfg.Campaign.ExecTimeout.D()
	case opcmd.Gate:
		return e.cfg.Campaign.GateTimeout.D()
	}
	return 0
}

// ShownCommand is an operator's command line as drainctl prints it for node: its secrets
// masked (opcmd.Shown).
func ShownCommand(template, node string) string { return opcmd.Shown(template, node) }
