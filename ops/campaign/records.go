package campaign

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/opcmd"
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
func List(ctx context.Context, e *ops.Engine) ([]model.Campaign, error) {
	recs, err := e.Records().Records(ctx, "campaign")
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
func Collect(ctx context.Context, e *ops.Engine) error {
	all, err := List(ctx, e)
	if err != nil {
		return err
	}
	keep := e.Config().Campaign.KeepRecords.D()
	for _, c := range all {
		if c.State == model.CampaignDone && e.Now().Sub(c.Updated) > keep {
			if err := e.Records().DeleteRecord(ctx, campaignKey(c.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// stillEmptied says why node name, recorded past its evacuation, is no longer emptied under
// this campaign ("": it still is): cordoned with its journal naming the campaign, and
// nothing left to move (a fresh evacuation plan with nothing pending).
func (r *Campaign) stillEmptied(ctx context.Context, name string, ro ops.RunOptions) (string, error) {
	e := r.e
	k, ok := e.KubeNode(name)
	if !ok {
		return "the node is gone", nil
	}
	j, journaled := ops.ReadJournal(k)
	switch {
	case k.Schedulable || !k.HasTaint(e.Config().Policy.TaintKey):
		return "it is no longer cordoned", nil
	case !journaled || j.Op != model.OpEvacuate || j.Phase != ops.PhaseDone:
		return "its journal shows no finished evacuation", nil
	case j.Campaign != r.o.Name:
		return "its journal names no evacuation of this campaign", nil
	}
	plan, err := e.Plan(ctx, model.OpEvacuate, name, ro)
	if err != nil {
		return "", err
	}
	if plan.Pending() {
		return "something is on it again", nil
	}
	return "", nil
}

// checkResumable refuses to resume a record that does not match the request or the
// cluster: another selector's or other nodes' record, a node that is no Node (a planted
// name such as "-oProxyCommand=…" never reaches an operator's command), a record older than
// [roll] resume_within without --resume.
func checkResumable(e *ops.Engine, old model.Campaign, o Options, nodes []string) error {
	name := old.Name
	if !sameNodes(old.Nodes, nodes) || old.Selector != o.Selector {
		what := "the nodes " + strings.Join(nodes, ", ")
		if o.Selector != "" {
			what = fmt.Sprintf("the selector %q now matches %s", o.Selector, strings.Join(nodes, ", "))
		}
		return &ops.UsageError{
			Problem: fmt.Sprintf("campaign %s is unfinished over other nodes (%s); %s", name, nodeNames(old.Nodes), what),
			Hint:    "rerun it as it was started to resume it, or give this one another name",
			Fix:     []ops.Option{ops.OptCampaign},
		}
	}
	for _, n := range old.Nodes {
		if err := opcmd.CheckNode(n.Name); err != nil {
			return &ops.UsageError{Problem: fmt.Sprintf("campaign %s's record names %s: nothing of it is resumed", name, err),
				Hint: "delete that record (the campaigns' list shows the records) and start again"}
		}
		if _, ok := e.KubeNode(n.Name); !ok {
			return &ops.UsageError{Problem: fmt.Sprintf("campaign %s's record names node %q, which does not exist", name, n.Name),
				Hint: "give this campaign another name", Fix: []ops.Option{ops.OptCampaign}}
		}
	}
	if age := e.Now().Sub(old.Updated); age > e.Config().Campaign.ResumeWithin.D() && !o.Resume {
		return &ops.UsageError{
			Problem: fmt.Sprintf(
				"campaign %s stopped %s ago (%s): a record older than [roll] resume_within (%s) is not resumed unasked, since "+
					"its nodes may be back at work by other hands",
				name,
				age.Round(time.Minute),
				old.Updated.UTC().Format(time.RFC3339),
				e.Config().Campaign.ResumeWithin,
			),
			Hint: "ask to resume it (each node is checked again), or give this one another name",
			Fix:  []ops.Option{ops.OptResume, ops.OptCampaign},
		}
	}
	return nil
}

// checkSpreadLabel refuses --spread-by when a node lacks the label: spreading would
// silently stop for it.
func checkSpreadLabel(e *ops.Engine, nodes []string, label string) error {
	var without []string
	for _, n := range nodes {
		if k, _ := e.KubeNode(n); k.Labels[label] == "" {
			without = append(without, n)
		}
	}
	if len(without) > 0 {
		return &ops.UsageError{
			Problem: fmt.Sprintf("%d node(s) of the campaign have no %s label: %s", len(without), label, strings.Join(without, ", ")),
			Hint:    "label them (kubectl label node NODE " + label + "=VALUE), or spread by another label",
		}
	}
	return nil
}

// campaignName is stable for the same selector or set of nodes, so a rerun finds its record,
// and says what it is: "roll-rack-r1-3f2a9c", "roll-compute-0-compute-4-and-1-more-8e61a0"
// (a DNS-1123 label: the hash keeps two selectors that read alike apart).
func campaignName(selector string, nodes []string) string {
	key := "selector:" + selector
	what := selector
	if selector == "" {
		sorted := slices.Clone(nodes)
		sort.Strings(sorted)
		key = "nodes:" + strings.Join(sorted, ",")
		what = strings.Join(sorted[:min(2, len(sorted))], "-")
		if len(sorted) > 2 {
			what += fmt.Sprintf("-and-%d-more", len(sorted)-2)
		}
	}
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	for _, r := range strings.ToLower(what) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	readable := strings.Trim(b.String(), "-")
	if len(readable) > 44 {
		readable = strings.Trim(readable[:44], "-")
	}
	if readable == "" {
		return "roll-" + hex.EncodeToString(sum[:])[:10]
	}
	return "roll-" + readable + "-" + hex.EncodeToString(sum[:])[:6]
}

func sameNodes(rec []model.CampaignNode, nodes []string) bool {
	a := make([]string, len(rec))
	for i, n := range rec {
		a[i] = n.Name
	}
	b := slices.Clone(nodes)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

func nodeNames(ns []model.CampaignNode) string {
	names := make([]string, len(ns))
	for i, n := range ns {
		names[i] = n.Name
	}
	return strings.Join(names, ", ")
}

// Get reads one campaign's record by its name; found is false when there is none. A record
// that cannot be read is an error (a view says so rather than showing nothing).
func Get(ctx context.Context, e *ops.Engine, name string) (c model.Campaign, found bool, err error) {
	data, found, err := e.Records().Record(ctx, campaignKey(name))
	if err != nil || !found {
		return c, found, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, true, fmt.Errorf("the record of campaign %s cannot be read: %w", name, err)
	}
	return c, true, nil
}

// DoneAnnotation on a node names the campaign that last finished it (cordoned, emptied, its
// step run, returned under that campaign's journal): a record's "done" is a claim anyone
// allowed to write records may make, and a node counts as done on resume only while it says
// so too.
const DoneAnnotation = "drainctl.io/campaign-done"

// unprovenDone puts back to pending every node the record says is done but whose node does
// not name this campaign as the one that finished it (a planted or stale record), and says
// which ("": none).
func unprovenDone(e *ops.Engine, rec *model.Campaign) string {
	var again []string
	for i, n := range rec.Nodes {
		if n.Phase != model.PhaseDone {
			continue
		}
		if k, ok := e.KubeNode(n.Name); ok && k.Annotations[DoneAnnotation] == rec.Name {
			continue
		}
		rec.Nodes[i] = model.CampaignNode{Name: n.Name, Domain: n.Domain, Budgets: n.Budgets, Phase: model.PhasePending}
		again = append(again, n.Name)
	}
	if len(again) == 0 {
		return ""
	}
	return fmt.Sprintf("the record says %s done, but nothing on the node shows this campaign finished it (%s): worked again",
		strings.Join(again, ", "), DoneAnnotation)
}
