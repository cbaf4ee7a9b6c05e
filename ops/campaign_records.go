package ops

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/drainctl/drainctl/model"
)

// A campaign's record is kept on the cluster while it runs and after (what each node went
// through); finished ones are collected after [roll] keep_records. Text kept in a record
// (an error, what holds a node) is bounded: a record is read on every resume and listing.

// recordTextMax bounds each piece of text a record keeps.
const recordTextMax = 1 << 10

// bounded cuts s to recordTextMax bytes (on a rune boundary), saying so.
func bounded(s string) string {
	if len(s) <= recordTextMax {
		return s
	}
	const more = " … (cut at 1 KiB)"
	cut := recordTextMax - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

// Campaigns are the campaign records on the cluster, newest first; a record that cannot be
// read is listed by name with its state "unreadable".
func (e *Engine) Campaigns(ctx context.Context) ([]model.Campaign, error) {
	recs, err := e.kube.Records(ctx, "campaign")
	if err != nil {
		return nil, err
	}
	out := make([]model.Campaign, 0, len(recs))
	for key, data := range recs {
		var c model.Campaign
		if json.Unmarshal(data, &c) != nil {
			c = model.Campaign{Name: strings.TrimPrefix(key, "campaign-"), State: "unreadable"}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Updated.Equal(out[j].Updated) {
			return out[i].Updated.After(out[j].Updated)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// CollectCampaigns deletes the records of campaigns that finished more than [roll]
// keep_records ago. Unfinished ones stay: they say where a campaign stopped.
func (e *Engine) CollectCampaigns(ctx context.Context) error {
	all, err := e.Campaigns(ctx)
	if err != nil {
		return err
	}
	keep := e.cfg.Roll.KeepRecords.D()
	for _, c := range all {
		if c.State == model.CampaignDone && e.now().Sub(c.Updated) > keep {
			if err := e.kube.DeleteRecord(ctx, campaignKey(c.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// stillEmptied says whether node i, recorded past its evacuation, is still emptied under
// this campaign: cordoned with its journal naming the campaign, and nothing left to move
// (a fresh evacuation plan with nothing pending). Otherwise it returns why not and the
// plan that empties it again.
func (r *Roll) stillEmptied(ctx context.Context, name string, ro RunOptions) (string, *model.Plan, error) {
	e := r.e
	k, ok := e.kube.Node(name)
	if !ok {
		return "the node is gone", nil, nil
	}
	j, journaled := ReadJournal(k)
	var why string
	switch {
	case k.Schedulable || !k.HasTaint(e.cfg.Policy.TaintKey):
		why = "it is no longer cordoned"
	case !journaled || j.Op != model.OpEvacuate || j.Phase != PhaseDone:
		why = "its journal shows no finished evacuation"
	case j.Campaign != r.o.Name:
		why = "its journal names no evacuation of this campaign"
	}
	plan, err := e.Plan(ctx, model.OpEvacuate, name, ro)
	if err != nil {
		return "", nil, err
	}
	if why == "" && plan.Pending() {
		why = "something is on it again"
	}
	if why == "" {
		return "", nil, nil
	}
	return why, &plan, nil
}
