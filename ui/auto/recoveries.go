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
	if a.JSON {
		if pause != nil {
			if err := writeLine(a.Stdout, "pause", pause); err != nil {
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
		text.Fprintf(a.Stdout, "automatic recovery is paused by %s since %s: %s (drainctl --auto resume-recovery lifts it)\n",
			pause.By, pause.At.Format("2006-01-02 15:04:05"), pause.Reason)
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
		text.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t%s\n", r.Node, r.Outcome, r.Started.Format("2006-01-02 15:04:05"), took, how, cut(r.Error, 60))
		for _, m := range r.Moves {
			started := ""
			if !m.Started.IsZero() {
				started = m.Started.Format("2006-01-02 15:04:05")
			}
			text.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.VM, m.Status, started, text.Duration(m.Duration), m.Dest, migrationID(m.MigrationID), cut(m.Reason, 60))
		}
	}
	return tw.Flush()
}

// migrationID is Nova's migration record as `openstack server migration list` names it.
func migrationID(id int64) string {
	if id == 0 {
		return ""
	}
	return fmt.Sprint(id)
}

// pauseRecovery holds every automatic recovery until resume-recovery (--reason says why).
func (a *Auto) pauseRecovery(ctx context.Context) error {
	if err := a.Engine.PauseRecovery(ctx, a.Run.Why); err != nil {
		return err
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
