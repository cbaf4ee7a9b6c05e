package auto

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const hostile = "\x1b]0;pwned\x07\x1b[2J\r\nevacuate done\x1b]8;;http://x\x1b\\ln\x1b]8;;\x1b\\\u202eexe\u009b31m"

func obeyable(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == utf8.RuneError,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
			return r, true
		}
	}
	return 0, false
}

// Every plain output (progress lines, the summary, plans, the inventory table) shows
// cluster text escaped; -o json keeps JSON's own escaping and the real value.
func TestHostileTextInThePlainPrinter(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	node, vm, pod := "compute-0"+hostile, "vm"+hostile, "shop/web"+hostile
	plan := model.Plan{Op: model.OpEvacuate, Node: node, Host: node, VMs: []model.VM{{ID: "1a2b", Name: vm}},
		Steps:   []model.Step{{Kind: model.StepDisableCompute, Detail: "disable nova-compute on " + node}},
		Reasons: []model.Reason{{Code: model.BarePod, Severity: model.Blocks, Object: pod, Message: "no controller" + hostile, Override: "--force"}}}
	var progress, js bytes.Buffer
	p := NewPrinter(&progress, &js)
	for _, ev := range []ops.Event{
		ops.NewPlanReady(t0, plan),
		ops.NewStepEvent(t0, node, model.StepDisableCompute, ops.StepDone, "drainctl: evacuate by x: "+hostile),
		ops.NewPodEvent(t0, node, pod, ops.PodFailed, "", 1, "evicting "+pod+": "+hostile),
		ops.NewMigrationEvent(t0, node, ops.MigrationEvent{VM: vm, VMID: "1a2b", State: ops.MigFailed, Source: node, Message: "libvirtError: " + hostile}),
		ops.NewNodeChanged(t0, node, "nova-compute disabled: "+hostile),
		ops.NewRunDone(t0, ops.Report{Op: model.OpEvacuate, Node: node, Result: ops.ResultFailed, Error: "1 VM(s) not migrated: " + vm,
			VMs: []ops.VMReport{{VM: vm, Result: ops.MigFailed}}}),
	} {
		p.Emit(ev)
	}
	var out bytes.Buffer
	out.WriteString("# progress\n")
	out.Write(progress.Bytes())
	out.WriteString("# plan\n")
	WritePlan(&out, plan)
	out.WriteString("# list\n")
	inv := model.Inventory{NovaConfigured: true, Nodes: []model.Node{{Name: node, Host: node,
		Kube:    &model.KubeNode{Name: node, Ready: true, Roles: []string{"compute"}},
		Compute: &model.ComputeService{Host: node, Enabled: false, Up: true, DisabledReason: "ticket" + hostile}, VMs: plan.VMs}},
		UnplacedVMs: []model.VM{{ID: "9f9f9f9f-0000", Name: vm, Host: "gone" + hostile}}}
	if err := WriteInventory(&out, inv, FormatTable); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if r, bad := obeyable(got); bad {
		t.Errorf("plain output shows %U unescaped:\n%s", r, got)
	}
	golden(t, "testdata/hostile-plain.golden", got)

	for _, line := range strings.Split(strings.TrimSpace(js.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		if ev["type"] == "migration" && ev["vm"] != vm {
			t.Errorf("JSON must carry the real name, JSON-escaped: %q", ev["vm"])
		}
	}
	if strings.Contains(js.String(), "\x1b") {
		t.Error("JSON shows a raw ESC")
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(path, []byte(got), 0o644)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
