package ui

import (
	"strings"
	"testing"
)

// A VM's describe says the budget of each group it belongs to: how many of its members may be
// disrupted at once, of how many, and whose word it is.
func TestAVMsDescribeSaysItsGroupsBudget(t *testing.T) {
	inv := inventory(3)
	for i := range inv.Nodes {
		for j := range inv.Nodes[i].VMs {
			inv.Nodes[i].VMs[j].GroupAsked, inv.Nodes[i].VMs[j].MaxDisruptedAsked = "db", "1"
		}
	}
	vm := inv.Nodes[0].VMs[0]
	pane, ok := describeVM(vm.ID, &shared{inv: inv})
	if !ok || !strings.Contains(strings.Join(pane.lines, "\n"), "group db: 1 of its 6 members disrupted at once at most (drainctl:max-disrupted of") {
		t.Errorf("describe %s:\n%s", vm.Name, strings.Join(pane.lines, "\n"))
	}
}
