package auto

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/drainctl/drainctl/text"
)

// recoveries lists the recoveries recorded on the cluster, each with its ledger: one line a
// recovery, then one a VM (-o json: one {"type":"recovery"} object a recovery, its moves in it).
func (a *Auto) recoveries(ctx context.Context, _ []string) error {
	all, err := a.Engine.Recoveries(ctx)
	if err != nil {
		return err
	}
	pause, err := a.Engine.RecoveryPause(ctx)
	if err != nil {
		return err
	}
	holds, err := a.Engine.RecoveryHolds(ctx)
	if err != nil {
		return err
	}
	if a.JSON {
		if pause != nil {
			if err := writeLine(a.Stdout, "pause", pause); err != nil {
				return err
			}
		}
		for _, h := range holds {
			if err := writeLine(a.Stdout, "hold", h); err != nil {
				return err
			}
		}
		for _, r := range all {
			if err := writeLine(a.Stdout, "recovery", r); err != nil {
				return err
			}
		}
		return nil
	}
	if pause != nil {
		text.Fprintf(a.Stdout, "%s (drainctl --auto resume-recovery lifts it)\n", text.RecoveryPause(*pause))
	}
	for _, h := range holds {
		if h.Kind != "pause" { // said above, with how to lift it
			text.Fprintf(a.Stdout, "%s\n", text.RecoveryHold(h))
		}
	}
	if len(all) == 0 {
		fmt.Fprintln(a.Stdout, "no recovery records")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE / VM\tOUTCOME\tSTARTED\tTOOK\tTO\tMIGRATION\tWHY")
	for _, r := range all {
		how, took := "by hand", ""
		if r.Automatic {
			how = "automatic"
		}
		if !r.Finished.IsZero() {
			took = text.Duration(r.Finished.Sub(r.Started))
		}
		text.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t%s\n", r.Node, r.Outcome, text.Time(r.Started), took, how, cut(r.Error, 60))
		for _, m := range r.Moves {
			text.Fprintf(
				tw,
				"  %s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				m.VM,
				m.Status,
				text.Time(m.Started),
				text.Duration(m.Duration),
				m.Dest,
				text.MigrationID(m.MigrationID),
				cut(m.Reason, 60),
			)
		}
	}
	return tw.Flush()
}

// pauseRecovery holds every automatic recovery until resume-recovery (--reason says why).
func (a *Auto) pauseRecovery(ctx context.Context) error {
	if err := a.Engine.PauseRecovery(ctx, a.Run.Why); err != nil {
		return err
	}
	if a.Demo { // its pause ends with the process, as its whole cluster does
		fmt.Fprintln(a.Stdout, "automatic recovery paused in the demo's cluster, which ends with this command: a rerun starts "+
			"a new one, unpaused")
		return nil
	}
	fmt.Fprintln(a.Stdout, "automatic recovery paused: no dead node is fenced or rebuilt by itself until drainctl --auto resume-recovery")
	return nil
}

// resumeRecovery lifts the pause.
func (a *Auto) resumeRecovery(ctx context.Context) error {
	if err := a.Engine.ResumeRecovery(ctx); err != nil {
		return err
	}
	fmt.Fprintln(a.Stdout, "automatic recovery resumed")
	return nil
}
