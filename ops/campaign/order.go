package campaign

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/drainctl/drainctl/ops"
)

// A campaign's nodes: those named or selected, in the order it works them.

// domainOf is the node's value of the spread label ("" without one).
func domainOf(e *ops.Engine, node, label string) string {
	if label == "" {
		return ""
	}
	k, _ := e.KubeNode(node)
	return k.Labels[label]
}

// orderNodes puts the campaign's nodes in the order it works them: as given or by name, or
// by the ranking's cost (cheapest first; nodes the ranking does not call candidates keep
// their place after them, by name), then, with SpreadBy, round-robin over its values.
func orderNodes(ctx context.Context, e *ops.Engine, o Options, nodes []string) ([]string, error) {
	switch o.Order {
	case "", "given", "name":
		if o.Order == "name" {
			nodes = slices.Clone(nodes)
			slices.Sort(nodes)
		}
	case "cost":
		victims, _, err := e.Recommend(ctx, o.Run.Policy, false)
		if err != nil {
			return nil, err
		}
		cost := map[string]float64{}
		for _, v := range victims {
			if v.Candidate {
				cost[v.Node] = v.Cost
			}
		}
		nodes = slices.Clone(nodes)
		sort.SliceStable(nodes, func(i, j int) bool {
			ci, iok := cost[nodes[i]]
			cj, jok := cost[nodes[j]]
			switch {
			case iok && jok:
				return ci < cj
			case iok != jok:
				return iok
			}
			return nodes[i] < nodes[j]
		})
	default:
		return nil, &ops.UsageError{Option: ops.OptOrder, Problem: fmt.Sprintf("%q", o.Order), Hint: "use name, given or cost"}
	}
	if o.SpreadBy == "" {
		return nodes, nil
	}
	return spread(nodes, func(n string) string { return domainOf(e, n, o.SpreadBy) }), nil
}

// spread interleaves the nodes by domain, round-robin, keeping each domain's own order and
// the domains in the order their first node comes: a1 a2 b1 c1 b2 → a1 b1 c1 a2 b2.
func spread(nodes []string, domainOf func(string) string) []string {
	var domains []string
	by := map[string][]string{}
	for _, n := range nodes {
		d := domainOf(n)
		if _, ok := by[d]; !ok {
			domains = append(domains, d)
		}
		by[d] = append(by[d], n)
	}
	out := make([]string, 0, len(nodes))
	for len(out) < len(nodes) {
		for _, d := range domains {
			if len(by[d]) > 0 {
				out = append(out, by[d][0])
				by[d] = by[d][1:]
			}
		}
	}
	return out
}

// campaignNodes are the nodes named, or those the selector matches, by name.
func campaignNodes(e *ops.Engine, o Options) ([]string, error) {
	if (o.Selector == "") == (len(o.Nodes) == 0) {
		return nil, &ops.UsageError{
			Option:  ops.OptSelector,
			Problem: "given with nodes: a campaign takes its nodes or a selector, not both",
			Hint:    "give one of them",
		}
	}
	if o.Selector == "" {
		for _, n := range o.Nodes {
			if _, ok := e.KubeNode(n); !ok {
				return nil, &ops.UsageError{Problem: fmt.Sprintf("no Kubernetes node named %q", n), Hint: "the node list shows their names"}
			}
		}
		return o.Nodes, nil
	}
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return nil, &ops.UsageError{
			Option:  ops.OptSelector,
			Problem: fmt.Sprintf("%q is no label selector: %v", o.Selector, err),
			Hint:    `use the kubectl form, e.g. "rack=r1"`,
		}
	}
	var out []string
	for _, n := range e.KubeNodeNames() {
		if k, ok := e.KubeNode(n); ok && sel.Matches(labels.Set(k.Labels)) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, &ops.UsageError{Option: ops.OptSelector, Problem: fmt.Sprintf("%q matches no node", o.Selector)}
	}
	sort.Strings(out)
	return out, nil
}
