package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// runRolls runs -roll-runs campaigns one after the other and says how many finished every
// node; a run that fails keeps its logs and the next one runs.
func runRolls(ctx context.Context, o options) error {
	failed := 0
	for i := 1; i <= o.roll.runs; i++ {
		if o.roll.runs > 1 {
			logf("roll: run %d of %d, load avg %s", i, o.roll.runs, loadavg())
		}
		if err := runRoll(ctx, o); err != nil {
			if o.roll.runs == 1 || ctx.Err() != nil {
				return err
			}
			failed++
			fmt.Printf("\nrun %d of %d failed: %v\n", i, o.roll.runs, err)
		}
	}
	if o.roll.runs > 1 {
		fmt.Printf("\n%d of %d campaigns of %d nodes finished every node; load avg at the end %s\n",
			o.roll.runs-failed, o.roll.runs, o.roll.nodes, loadavg())
		if failed > 0 {
			return fmt.Errorf("%d of %d campaigns failed (their logs are kept in %s)", failed, o.roll.runs, o.roll.logs)
		}
	}
	return nil
}

// runLogs holds one campaign's whole logs: drainctl's stdout (its JSON lines) and stderr, and
// the simulator's writes in the order it took them. They are removed when the campaign
// finishes every node and kept when it does not, so a failure's cause is never cut to a tail.
type runLogs struct {
	dir                 string
	stdout, stderr, sim *os.File
	kept                bool
}

func keepLogs(dir string) (*runLogs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l := &runLogs{dir: dir}
	for _, f := range []struct {
		to   **os.File
		name string
	}{{&l.stdout, "drainctl.ndjson"}, {&l.stderr, "drainctl.stderr"}, {&l.sim, "nova-writes.log"}} {
		file, err := os.Create(filepath.Join(dir, f.name))
		if err != nil {
			l.close()
			return nil, err
		}
		*f.to = file
	}
	return l, nil
}

// keep marks the logs as a failed run's: close leaves them.
func (l *runLogs) keep() { l.kept = true }

func (l *runLogs) close() {
	for _, f := range []*os.File{l.stdout, l.stderr, l.sim} {
		if f != nil {
			_ = f.Close()
		}
	}
	if !l.kept {
		_ = os.RemoveAll(l.dir)
	}
}
