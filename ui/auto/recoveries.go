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
	if a.JSON {
		for _, r := range all {
			if err := writeLine(a.Stdout, "recovery", r); err != nil {
				return err
			}
		}
		return nil
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
			text.Fprintf(tw, "  %s\t%s\t\t%s\t%s\t%s\t%s\n", m.VM, m.Status, text.Duration(m.Duration), m.Dest, migrationID(m.MigrationID), cut(m.Reason, 60))
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
