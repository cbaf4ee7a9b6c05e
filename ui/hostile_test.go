package ui

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
)

// hostile is what a tenant (or anyone who can write a reason) can put in a name or message:
// a title change, a screen clear, a fake line, an OSC 8 link, a bidi override, a C1 CSI.
const hostile = "\x1b]0;pwned\x07\x1b[2J\r\nevacuate done\x1b]8;;http://x\x1b\\ln\x1b]8;;\x1b\\\u202eexe\u009b31m"

// obeyable reports the first character a terminal would act on, if any. The goldens run
// with the ASCII profile, so drainctl's own styling adds none.
func obeyable(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == utf8.RuneError,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
			return r, true
		}
	}
	return 0, false
}

// hostileModel: VM name, Nova fault message, pod name, node name, disabled_reason and a
// NodeMaintenance reason all carry the hostile text.
func hostileModel(t *testing.T, w, h int) Model {
	m := newModel(t, 3, w, h)
	inv := inventory(3)
	n := &inv.Nodes[0]
	n.Name, n.Kube.Name = "compute-0"+hostile, "compute-0"+hostile
	n.VMs[0].Name = "vm" + hostile
	n.VMs[0].Flavor = "m1" + hostile
	n.Pods[1].Name = "web" + hostile
	n.Compute.Enabled, n.Compute.DisabledReason = false, "ticket"+hostile
	n.Migrations = []model.Migration{{ID: 1, InstanceID: n.VMs[0].ID, Status: model.MigrationStatus("running" + hostile), SourceCompute: n.Host}}
	next, _ := m.Update(inventoryMsg{inv: inv, victims: policy.Rank(inv, m.s.opts.Policy, policy.DefaultWeights()),
		maint: []model.NodeMaintenance{{Name: "nm", NodeName: n.Name, Reason: "DIMM" + hostile,
			Status: model.MaintenanceStatus{Phase: model.MaintenanceFailed, LastError: "refused" + hostile}}}})
	m = next.(Model)
	m.s.opts.Maintenances = nil
	return m
}

func TestHostileTextIsShownEscapedInEveryPane(t *testing.T) {
	m := hostileModel(t, 160, 45)
	node := m.s.inv.Nodes[0]
	plan := model.Plan{Op: model.OpEvacuate, Node: node.Name, Host: node.Host, VMs: node.VMs, Pods: node.Pods[1:],
		Steps:   []model.Step{{Kind: model.StepMigrateVMs, Detail: "live-migrate " + node.VMs[0].Name}},
		Reasons: []model.Reason{{Code: model.BarePod, Severity: model.Blocks, Object: "shop/web" + hostile, Message: "no controller" + hostile, Override: model.OverrideForce}}}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	op := m
	op.s.ops = newOperations()
	op.s.ops.add(node.Name, plan, t0, func() {})
	op.s.shownOp = node.Name
	op.push(&opPane{})
	op = feed(op, node.Name,
		ops.NewPlanReady(at(0), plan),
		ops.NewMigrationEvent(at(1), node.Name, ops.MigrationEvent{VM: node.VMs[0].Name, VMID: node.VMs[0].ID, State: ops.MigFailed,
			Source: node.Host, Message: "libvirtError: " + hostile}),
		ops.NewPodEvent(at(2), node.Name, "shop/web"+hostile, ops.PodBlocked, "pdb"+hostile, 1, ""),
		ops.NewNodeChanged(at(3), node.Name, "nova-compute disabled: "+hostile))
	quit := op
	quit.push(&quitPane{})
	confirm, _ := m.Update(planMsg{op: model.OpEvacuate, targets: []string{node.Name}, batch: ops.Batch{Plans: []model.Plan{plan}}})
	status := m
	status.setStatus("cannot migrate vm"+hostile, true)
	panes := map[string]Model{
		"nodes": m, "detail": press(m, "enter"), "victims": press(m, "s"), "operation": op, "quit": quit,
		"confirm": confirm.(Model), "status": status,
	}
	for name, pm := range panes {
		v := pm.View()
		if r, bad := obeyable(v); bad {
			t.Errorf("%s pane shows %U unescaped:\n%s", name, r, v)
		}
		if !strings.Contains(v, `\x1b]0;pwned\x07`) {
			t.Errorf("%s pane does not show the hostile text escaped:\n%s", name, v)
		}
	}
	if v := panes["operation"].View(); !strings.Contains(v, `libvirtError: \x1b]0;pwned`) {
		t.Errorf("Nova's message is not shown:\n%s", v)
	}
	if v := panes["detail"].View(); !strings.Contains(v, `DIMM\x1b]0;pwned`) || !strings.Contains(v, `ticket\x1b]0;pwned`) {
		t.Errorf("NodeMaintenance reason or disabled_reason missing:\n%s", v)
	}
}

func TestGoldenHostileNodes(t *testing.T) { golden(t, hostileModel(t, 160, 20), 160, 20) }
func TestGoldenHostileDetail(t *testing.T) {
	golden(t, press(hostileModel(t, 160, 24), "enter"), 160, 24)
}
