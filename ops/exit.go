package ops

import (
	"context"
	"errors"
)

// Exit codes, the same for every mode and documented in the README.
const (
	ExitOK          = 0 // done
	ExitFailed      = 1 // an operation failed
	ExitUsage       = 2 // bad usage or configuration
	ExitRefused     = 3 // refused by policy before anything changed
	ExitInterrupted = 4 // interrupted or timed out; the cluster records where it stopped
)

// UsageError is a mistake on the command line, with a hint on how to fix it.
type UsageError struct {
	Problem string
	Hint    string
}

func (e *UsageError) Error() string { return e.Problem }

// ExitCode marks usage errors.
func (e *UsageError) ExitCode() int { return ExitUsage }

// ExitCode marks configuration file errors.
func (e *ConfigError) ExitCode() int { return ExitUsage }

// ExitCodeOf maps an error to the process exit code: errors may carry their own code
// (an ExitCode() int method), cancellation is an interruption, anything else a failure.
func ExitCodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ExitInterrupted
	}
	return ExitFailed
}

// HintOf returns the hint an error carries, if any.
func HintOf(err error) string {
	var hinted interface{ HintText() string }
	if errors.As(err, &hinted) {
		return hinted.HintText()
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return ue.Hint
	}
	return ""
}
