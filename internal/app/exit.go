package app

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/config"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/text"
	"github.com/drainctl/drainctl/ui"
	"github.com/drainctl/drainctl/ui/auto"
)

// Exit codes, the same for every mode and documented in docs/reference.md. They are decided here
// only, from the typed errors the engine and the clients return.
const (
	ExitOK          = 0 // done
	ExitFailed      = 1 // an operation failed
	ExitUsage       = 2 // bad usage or configuration, or a configured cluster unreachable
	ExitRefused     = 3 // refused by policy before anything changed
	ExitInterrupted = 4 // interrupted or timed out; the cluster records where it stopped
	ExitFindings    = 5 // doctor: Kubernetes and Nova disagree (the findings are printed)
	ExitNotEmpty    = 6 // done as asked, but VMs were left on the node on purpose (--skip-vm, --force)
)

// ExitCodeOf maps an error to the process exit code.
func ExitCodeOf(err error) int {
	var unreachable *unreachableError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, new(*auto.FindingsError)):
		return ExitFindings
	case errors.As(err, new(*ops.NotEmptyError)):
		return ExitNotEmpty
	case errors.As(err, &unreachable):
		if errors.Is(err, context.Canceled) {
			return ExitInterrupted // stopped while connecting
		}
		return ExitUsage
	case errors.As(err, new(*ops.UnreachableError)):
		return ExitUsage // a configured cluster unreachable before anything changed
	case errors.As(err, new(*ops.UsageError)), errors.As(err, new(*config.Error)),
		errors.As(err, new(*kube.ConfigError)), errors.As(err, new(*nova.CredentialError)):
		return ExitUsage
	case errors.As(err, new(*ops.RefusedError)), errors.As(err, new(*ops.LeaseHeldError)):
		return ExitRefused
	case errors.As(err, new(*ops.Interrupted)),
		errors.As(err, new(*ui.UnfinishedError)),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return ExitInterrupted
	}
	return ExitFailed
}

// HintOf returns the hint an error carries, if any.
func HintOf(err error) string { // (ErrorText says the error itself)
	var hinted interface{ HintText() string }
	if errors.As(err, &hinted) {
		return hinted.HintText()
	}
	var ue *ops.UsageError
	if errors.As(err, &ue) {
		if len(ue.Fix) == 0 {
			return ue.Hint
		}
		var flags []string
		for _, o := range ue.Fix {
			flags = append(flags, flagOf(o))
		}
		return ue.Hint + " (" + strings.Join(flags, ", ") + ")"
	}
	// The engine names overrides in its own words; the command line names its flags.
	var reasons []model.Reason
	var refused *ops.RefusedError
	var notMoved *ops.NotMovedError
	switch {
	case errors.As(err, &refused):
		reasons = refused.Reasons
	case errors.As(err, &notMoved):
		reasons = notMoved.VMs
	}
	var flags []string
	for _, r := range reasons {
		if r.Severity == model.Blocks && len(text.Flags(r)) == 0 {
			// No flag lifts this one: naming the others' would send the operator the wrong way.
			return "no flag overrides " + r.Object + ": " + firstClause(r.Message)
		}
		for _, f := range text.Flags(r) {
			if !slices.Contains(flags, f) {
				flags = append(flags, f)
			}
		}
	}
	if len(flags) > 0 {
		return "use " + strings.Join(flags, ", ") + " to override"
	}
	return ""
}

// ErrorText is the error as the command line says it: the engine's typed option named by its
// flag ("--on-failure \"x\"", not the engine's "on-failure \"x\"").
func ErrorText(err error) string {
	var ue *ops.UsageError
	if errors.As(err, &ue) && ue.Option != "" && err == error(ue) {
		return flagOf(ue.Option) + " " + ue.Problem
	}
	return err.Error()
}

// flagOf is the flag that sets an engine option: the command line's word for it.
func flagOf(o ops.Option) string { return "--" + string(o) }

// firstClause is a message up to its first colon: what holds, without the why.
func firstClause(msg string) string {
	head, _, _ := strings.Cut(msg, ":")
	return head
}
