package policy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/drainctl/drainctl/model"
)

// DrainRule is a parsed [[drain.order]] rule.
type DrainRule struct {
	Selector  labels.Selector
	Namespace string
	Order     int
	Skip      bool
}

// ParseDrainRules parses the [[drain.order]] rules; the error names the rule (1-based).
func ParseDrainRules(c model.DrainConfig) ([]DrainRule, error) {
	out := make([]DrainRule, 0, len(c.Order))
	for i, r := range c.Order {
		key := fmt.Sprintf("drain.order[%d].selector", i+1)
		if strings.TrimSpace(r.Selector) == "" && r.Namespace == "" {
			return nil, &model.FieldError{Key: key, Problem: "a rule needs a selector or a namespace",
				Fix: `e.g. selector = "app=ingress", order = 10`}
		}
		sel, err := ParseSelectors(key, []string{r.Selector})
		if err != nil {
			return nil, err
		}
		out = append(out, DrainRule{Selector: sel[0], Namespace: r.Namespace, Order: r.Order, Skip: r.Skip})
	}
	return out, nil
}

// DrainOrder is the pod's eviction group: its drain-order label, else the first matching
// rule's order, else 0. skip: the pod stays on the node. bad is a label that is not a
// number (the pod then goes in group 0, and the plan says so).
func DrainOrder(p model.Pod, o Options) (order int, skip bool, bad *model.Reason) {
	if v, ok := p.Labels[model.DrainOrderLabel]; ok {
		if strings.EqualFold(strings.TrimSpace(v), "skip") {
			return 0, true, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err == nil {
			return n, false, nil
		}
		bad = reason(model.BadDrainOrder, model.Notes, p.Key(), "",
			"label %s=%q is not a number or \"skip\": evicted in group 0", model.DrainOrderLabel, v)
	}
	for _, r := range o.DrainRules {
		if r.Namespace != "" && r.Namespace != p.Namespace {
			continue
		}
		if r.Selector.Matches(labels.Set(p.Labels)) {
			if r.Skip {
				return 0, true, bad
			}
			return r.Order, false, bad
		}
	}
	return 0, false, bad
}

// drainSkip leaves the pods a skip rule or label names on the node, like DaemonSet pods.
func drainSkip(p model.Pod, o Options) (Verdict, *model.Reason, bool) {
	if _, skip, _ := DrainOrder(p, o); !skip {
		return 0, nil, false
	}
	return Stay, reason(
		model.DrainSkip,
		model.Notes,
		p.Key(),
		"",
		"a drain skip rule or %s=skip: stays on the node",
		model.DrainOrderLabel,
	), true
}

// PodGroup is one eviction group: pods with the same order, evicted together.
type PodGroup struct {
	Order int
	Pods  []model.Pod
}

// GroupByOrder splits pods into their eviction groups, lowest order first.
func GroupByOrder(pods []model.Pod, o Options) []PodGroup {
	byOrder := map[int][]model.Pod{}
	for _, p := range pods {
		n, _, _ := DrainOrder(p, o)
		byOrder[n] = append(byOrder[n], p)
	}
	out := make([]PodGroup, 0, len(byOrder))
	for n, ps := range byOrder {
		out = append(out, PodGroup{Order: n, Pods: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out
}
