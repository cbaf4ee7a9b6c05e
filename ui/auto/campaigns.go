package auto

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/text"
)

// campaignRecordLine is one record as -o json gives it: the record, its age and its counts.
type campaignRecordLine struct {
	model.Campaign
	AgeSeconds int64 `json:"ageSeconds"` // since it was last updated
	Done       int   `json:"done"`       // nodes finished (done, skipped, quarantined, failed)
	Total      int   `json:"total"`
}

// campaigns lists the campaign records on the cluster with their state and age; finished
// ones older than [roll] keep_records are collected first.
func (a *Auto) campaigns(ctx context.Context) error {
	if err := campaign.Collect(ctx, a.Engine); err != nil {
		return err
	}
	all, err := campaign.List(ctx, a.Engine)
	if err != nil {
		return err
	}
	now := a.Engine.Now()
	if a.JSON {
		for _, c := range all {
			done, _, _ := c.Count()
			if err := writeLine(a.Stdout, "campaign",
				campaignRecordLine{Campaign: c, AgeSeconds: int64(now.Sub(c.Updated) / time.Second), Done: done,
					Total: len(c.Nodes)}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(all) == 0 {
		fmt.Fprintln(a.Stdout, "no campaign records")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tAGE\tNODES\tOVER\tFORECAST\tMESSAGE")
	for _, c := range all {
		done, _, _ := c.Count()
		over := "selector " + c.Selector
		if c.Selector == "" {
			names := make([]string, len(c.Nodes))
			for i, n := range c.Nodes {
				names[i] = n.Name
			}
			over = strings.Join(names, ",")
		}
		against := "-" // the nodes done against their forecast
		if forecast, took, n := c.ForecastError(); n > 0 {
			against = text.Sprintf("%s for %s (%s)", text.Duration(took), text.Duration(forecast), text.ForecastOff(forecast, took))
		}
		text.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", c.Name, c.State, text.Duration(now.Sub(c.Updated)), done, len(c.Nodes),
			cut(over, 40), against, cut(c.Message, 60))
	}
	return tw.Flush()
}

// cut shortens s to n runes, with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
