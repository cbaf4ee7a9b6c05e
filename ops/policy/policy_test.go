package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/drainctl/drainctl/model"
)

type podOpt func(*model.Pod)

func pod(name string, opts ...podOpt) model.Pod {
	p := model.Pod{Namespace: "ns", Name: name, Phase: "Running", Ready: true, OwnerKind: "ReplicaSet", OwnerName: "rs",
		Labels: map[string]string{}, Annotations: map[string]string{}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func owner(kind string) podOpt      { return func(p *model.Pod) { p.OwnerKind = kind } }
func label(k, v string) podOpt      { return func(p *model.Pod) { p.Labels[k] = v } }
func annotation(k, v string) podOpt { return func(p *model.Pod) { p.Annotations[k] = v } }
func emptyDir(name string) podOpt   { return func(p *model.Pod) { p.LocalVolume = name } }
func phase(ph string) podOpt        { return func(p *model.Pod) { p.Phase = ph } }
func pdbs(names ...string) podOpt   { return func(p *model.Pod) { p.PDBs = names } }
func mirrored() podOpt              { return func(p *model.Pod) { p.Mirror = true } }
func sel(s string) labels.Selector  { x, _ := labels.Parse(s); return x }

func TestClassifyPod(t *testing.T) {
	defaults := Options{IgnoreDaemonSets: true, HypervisorPods: sel("application in (nova, libvirt)")}
	with := func(f func(*Options)) Options { o := defaults; f(&o); return o }
	for _, tc := range []struct {
		desc     string
		pod      model.Pod
		opts     Options
		verdict  Verdict
		code     model.ReasonCode
		override model.Override
	}{
		{"replicated pod is evicted", pod("web"), defaults, Evict, "", ""},
		{"finished pod stays", pod("job", phase("Succeeded")), defaults, Stay, "", ""},
		{"mirror pod stays", pod("kube-apiserver", mirrored(), owner("Node")), defaults, Stay, ControlPlaneNote, ""},
		{"DaemonSet pod stays", pod("kube-proxy", owner("DaemonSet")), defaults, Stay, "", ""},
		{"DaemonSet pod blocks without ignore", pod("kube-proxy", owner("DaemonSet")), with(func(o *Options) { o.IgnoreDaemonSets = false }), Block, model.DaemonSetPod, model.OverrideIgnoreDaemonSets},
		{"protected pod blocks", pod("db", label("tier", "db")), with(func(o *Options) { o.ProtectedPods = []labels.Selector{sel("tier=db")} }), Block, model.ProtectedPod, ""},
		{"safe-to-evict false blocks", pod("x", annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "false")), defaults, Block, model.SafeToEvictFalse, model.OverrideForce},
		{"safe-to-evict false forced", pod("x", annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "false")), with(func(o *Options) { o.Force = true }), Evict, "", ""},
		{"do-not-disrupt blocks", pod("x", annotation("karpenter.sh/do-not-disrupt", "true")), defaults, Block, model.DoNotDisrupt, model.OverrideForce},
		{"emptyDir blocks", pod("cache", emptyDir("scratch")), defaults, Block, model.LocalStorage, model.OverrideDeleteEmptyDirData},
		{"emptyDir allowed by flag", pod("cache", emptyDir("scratch")), with(func(o *Options) { o.DeleteEmptyDirData = true }), Evict, "", ""},
		{"emptyDir allowed by safe-to-evict-local-volumes", pod("cache", emptyDir("scratch"),
			annotation("cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes", "tmp, scratch")), defaults, Evict, "", ""},
		{"emptyDir allowed by safe-to-evict true", pod("cache", emptyDir("scratch"), annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "true")), defaults, Evict, "", ""},
		{"bare pod blocks", pod("shell", owner("")), defaults, Block, model.BarePod, model.OverrideForce},
		{"bare pod forced", pod("shell", owner("")), with(func(o *Options) { o.Force = true }), Evict, "", ""},
		{"carrier pod goes later", pod("libvirt-x", owner("ReplicaSet"), label("application", "libvirt")), defaults, Later, "", ""},
		{"DaemonSet carrier stays", pod("libvirt-x", owner("DaemonSet"), label("application", "libvirt")), defaults, Stay, "", ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			v, r := ClassifyPod(tc.pod, tc.opts)
			if v != tc.verdict {
				t.Errorf("verdict %v, want %v", v, tc.verdict)
			}
			switch {
			case tc.code == "" && r != nil:
				t.Errorf("unexpected reason %+v", r)
			case tc.code != "" && (r == nil || r.Code != tc.code || r.Override != tc.override || r.Object != "ns/"+tc.pod.Name):
				t.Errorf("reason %+v, want %s with override %q", r, tc.code, tc.override)
			}
		})
	}
}

func TestPDBReason(t *testing.T) {
	budgets := map[string]model.PDB{"ns/web-pdb": {Name: "web-pdb", DisruptionsAllowed: 0}, "ns/api-pdb": {Name: "api-pdb", DisruptionsAllowed: 1}}
	if r := PDBReason(pod("web", pdbs("web-pdb")), budgets, Options{}); r == nil || r.Code != model.PDBExhausted || r.Message != "web-pdb" || r.Severity != model.Waits {
		t.Errorf("exhausted: %+v", r)
	}
	if r := PDBReason(pod("api", pdbs("api-pdb")), budgets, Options{}); r != nil {
		t.Errorf("allowed: %+v", r)
	}
	if r := PDBReason(pod("web", pdbs("web-pdb")), budgets, Options{DisableEviction: true}); r != nil {
		t.Errorf("--disable-eviction bypasses budgets: %+v", r)
	}
}

func TestVMMove(t *testing.T) {
	moveStopped := Options{MoveStopped: true}
	pci := model.VM{Name: "gpu", Phase: model.PhaseRunning, Status: "ACTIVE", Flavor: "g1", RAMMB: 16384, Pinned: "pci_passthrough:alias=a100:1"}
	for _, tc := range []struct {
		vm     model.VM
		o      Options
		method model.MoveMethod
		code   model.ReasonCode // "" : no reason
		sev    model.Severity
	}{
		{model.VM{Name: "a", Phase: model.PhaseRunning, Status: "ACTIVE"}, moveStopped, model.MoveLive, "", ""},
		{model.VM{Name: "b", Phase: model.PhasePaused, Status: "PAUSED"}, moveStopped, model.MoveLive, "", ""},
		{model.VM{Name: "c", Phase: model.PhaseMovingLive, Status: "MIGRATING", Task: model.TaskMigrating, TaskState: "migrating"}, moveStopped, model.MoveFollow, "", ""},
		{model.VM{Name: "c2", Phase: model.PhaseMovingCold, Status: "RESIZE", Task: model.TaskColdPrep, TaskState: "resize_prep"}, moveStopped, model.MoveFollow, "", ""},
		{model.VM{Name: "d", Phase: model.PhaseStopped, Status: "SHUTOFF"}, moveStopped, model.MoveCold, "", ""},
		{model.VM{Name: "d2", Phase: model.PhaseStopped, Status: "SHUTOFF"}, Options{}, model.MoveStays, model.VMStopped, model.Blocks},
		{model.VM{Name: "e", Phase: model.PhaseRunning, Status: "ACTIVE", Task: model.TaskOther, TaskState: "image_snapshot"}, moveStopped, model.MoveStays, model.VMTaskInProgress, model.Blocks},
		{model.VM{Name: "f", Phase: model.PhaseRunning, Status: "ACTIVE", Locked: true}, moveStopped, model.MoveLive, model.VMLocked, model.Notes},
		{model.VM{Name: "f2", Phase: model.PhaseStopped, Status: "SHUTOFF", Locked: true}, moveStopped, model.MoveCold, model.VMLocked, model.Notes},
		{model.VM{Name: "f3", Phase: model.PhaseBroken, Status: "ERROR", Locked: true}, moveStopped, model.MoveStays, model.VMError, model.Blocks},
		{model.VM{Name: "f4", Phase: model.PhaseRunning, Status: "ACTIVE", Locked: true}, Options{MoveStopped: true, RespectLocks: true}, model.MoveStays, model.VMLocked, model.Blocks},
		{model.VM{Name: "f5", Phase: model.PhaseRunning, Status: "ACTIVE", Locked: true}, Options{MoveStopped: true, NotAdmin: true}, model.MoveStays, model.VMLocked, model.Blocks},
		{model.VM{Name: "g", Phase: model.PhaseBroken, Status: "ERROR", Fault: "disk full"}, moveStopped, model.MoveStays, model.VMError, model.Blocks},
		{model.VM{Name: "g", Phase: model.PhaseBroken, Status: "ERROR"}, Options{MoveStopped: true, SkipVMs: []string{"g"}}, model.MoveStays, model.VMSkipped, model.Notes},
		{model.VM{Name: "h", Phase: model.PhaseOther, Status: "SUSPENDED"}, moveStopped, model.MoveStays, model.VMUnmovable, model.Blocks},
		{model.VM{Name: "i", Phase: model.PhaseAwaitingConfirm, Status: "VERIFY_RESIZE"}, moveStopped, model.MoveStays, model.VMAwaitsConfirm, model.Blocks},
		{pci, moveStopped, model.MoveStays, model.VMPinned, model.Blocks},
		{pci, Options{ColdMigrateRunning: true}, model.MoveCold, model.Downtime, model.Notes},
		{model.VM{Name: "gpu-p", Phase: model.PhasePaused, Status: "PAUSED", Pinned: "resources:VGPU=1"}, Options{ColdMigrateRunning: true}, model.MoveStays, model.VMPinned, model.Blocks},
		{model.VM{Name: "j", Phase: model.PhaseRunning, Status: "ACTIVE"}, Options{SkipVMs: []string{"j"}}, model.MoveStays, model.VMSkipped, model.Notes},
	} {
		m, r := VMMove(tc.vm, tc.o)
		code, sev := model.ReasonCode(""), model.Severity("")
		if r != nil {
			code, sev = r.Code, r.Severity
		}
		if m != tc.method || code != tc.code || sev != tc.sev {
			t.Errorf("%s (%s): %s %s %s, want %s %s %s", tc.vm.Name, tc.vm.Status, m, code, sev, tc.method, tc.code, tc.sev)
		}
		if r != nil && r.Severity == model.Blocks {
			tc.o.Force = true
			if _, f := VMMove(tc.vm, tc.o); f.Severity != model.Notes {
				t.Errorf("%s with --force: %+v", tc.vm.Name, f)
			}
		}
	}
	// The reasons name what to do, and Nova's fault is quoted.
	if _, r := VMMove(model.VM{Name: "g", Phase: model.PhaseBroken, Status: "ERROR", Fault: "disk full"}, moveStopped); !strings.Contains(r.Message, "disk full") || r.Override != model.OverrideSkipVM {
		t.Errorf("ERROR reason: %+v", r)
	}
	if _, r := VMMove(pci, moveStopped); r.Override != model.OverrideColdMigrateRunning || !strings.Contains(r.Message, "pci_passthrough:alias") || !strings.Contains(r.Message, "16 GiB") {
		t.Errorf("pinned reason: %+v", r)
	}
}

func worker(name string, ready, schedulable bool, roles ...string) model.Node {
	return model.Node{Name: name, Kube: &model.KubeNode{Name: name, Ready: ready, Schedulable: schedulable, Roles: roles, Labels: map[string]string{"zone": "a"}}}
}

// A VM's own maintenance policy (#42.1): its owner's metadata first, then the operator's
// [policy.maintenance] by flavor, image, project, then the default; what each does to the move
// its state chose; and a VM an operator moves by hand is moved as asked.
func TestVMPolicy(t *testing.T) {
	byConfig := Options{MoveStopped: true, Maintenance: model.MaintenanceConfig{
		Flavors: map[string]model.VMPolicy{"m1.huge": model.PolicyStopStart}, Images: map[string]model.VMPolicy{"img-db": model.PolicyStays},
		Projects: map[string]model.VMPolicy{"prj-batch": model.PolicyStopStart}, Default: model.PolicyMigrate}}
	for _, tc := range []struct {
		vm     model.VM
		o      Options
		method model.MoveMethod
		code   model.ReasonCode
		sev    model.Severity
		policy model.VMPolicy
		from   string
	}{
		{model.VM{Name: "a", Phase: model.PhaseRunning, Status: "ACTIVE"}, Options{}, model.MoveLive, "", "", model.PolicyMigrate, ""},
		{model.VM{Name: "b", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stop-start"}, Options{}, model.MoveCold, model.Downtime, model.Notes, model.PolicyStopStart, "its metadata drainctl:maintenance"},
		{model.VM{Name: "c", Phase: model.PhaseStopped, Status: "SHUTOFF", PolicyAsked: "stop-start"}, byConfig, model.MoveCold, "", "", model.PolicyStopStart, "its metadata drainctl:maintenance"},
		{model.VM{Name: "d", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays"}, Options{}, model.MoveStays, model.VMAsksToStay, model.Blocks, model.PolicyStays, "its metadata drainctl:maintenance"},
		{model.VM{Name: "d", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays"}, Options{SkipVMs: []string{"d"}}, model.MoveStays, model.VMSkipped, model.Notes, model.PolicyStays, "its metadata drainctl:maintenance"},
		{model.VM{Name: "e", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "restart-in-place"}, Options{}, model.MoveRestart, model.Downtime, model.Notes, model.PolicyRestartInPlace, "its metadata drainctl:maintenance"},
		{model.VM{Name: "e-off", Phase: model.PhaseStopped, Status: "SHUTOFF", PolicyAsked: "restart-in-place"}, Options{MoveStopped: true}, model.MoveRestart, model.VMAsksToStay, model.Notes, model.PolicyRestartInPlace, "its metadata drainctl:maintenance"},
		{model.VM{Name: "e-removed", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "restart-in-place"}, Options{NodeRemoved: true}, model.MoveLive, model.Downtime, model.Notes, model.PolicyRestartInPlace, "its metadata drainctl:maintenance"},
		{model.VM{Name: "e-gpu", Phase: model.PhaseRunning, Status: "ACTIVE", Pinned: "pci_passthrough:alias", PolicyAsked: "restart-in-place"}, Options{}, model.MoveRestart, model.Downtime, model.Notes, model.PolicyRestartInPlace, "its metadata drainctl:maintenance"},
		{model.VM{Name: "e-gpu-removed", Phase: model.PhaseRunning, Status: "ACTIVE", Pinned: "pci_passthrough:alias", PolicyAsked: "restart-in-place"}, Options{NodeRemoved: true}, model.MoveStays, model.VMPinned, model.Blocks, model.PolicyRestartInPlace, "its metadata drainctl:maintenance"},
		{model.VM{Name: "d-overridden", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays"}, Options{OverrideVMPolicies: []string{"d-overridden"}}, model.MoveLive, model.VMAsksToStay, model.Notes, model.PolicyStays, "its metadata drainctl:maintenance"},
		// #52.1: a value that is no policy is the operator's policy with a note, never a
		// blocker a tenant plants on the fleet; metadata honour leaves out is set aside too.
		{model.VM{Name: "f", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "evacuate\x1b[2J"}, Options{}, model.MoveLive, model.VMPolicyUnknown, model.Notes, model.PolicyMigrate,
			`the default; its metadata drainctl:maintenance = "evacuate\x1b[2J" is none of migrate, stop-start, restart-in-place, stays`},
		{model.VM{Name: "f-long", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: strings.Repeat("x", 255)}, Options{}, model.MoveLive, model.VMPolicyUnknown, model.Notes, model.PolicyMigrate,
			`the default; its metadata drainctl:maintenance = "` + strings.Repeat("x", 40) + `…" is none of migrate, stop-start, restart-in-place, stays`},
		{model.VM{Name: "f-none", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays", ProjectID: "prj-t"}, Options{Maintenance: model.MaintenanceConfig{Honour: model.Honour{None: true}}},
			model.MoveLive, model.VMPolicyUnknown, model.Notes, model.PolicyMigrate, `the default; its metadata drainctl:maintenance = "stays" is not honoured for its project ([policy.maintenance] honour)`},
		{model.VM{Name: "f-listed", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays", ProjectID: "prj-ok"}, Options{Maintenance: model.MaintenanceConfig{Honour: model.Honour{Projects: []string{"prj-ok"}}}},
			model.MoveStays, model.VMAsksToStay, model.Blocks, model.PolicyStays, "its metadata drainctl:maintenance"},
		{model.VM{Name: "f-unlisted", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays", ProjectID: "prj-t"}, Options{Maintenance: model.MaintenanceConfig{Honour: model.Honour{Projects: []string{"prj-ok"}}}},
			model.MoveLive, model.VMPolicyUnknown, model.Notes, model.PolicyMigrate, `the default; its metadata drainctl:maintenance = "stays" is not honoured for its project ([policy.maintenance] honour)`},
		{model.VM{Name: "g", Phase: model.PhaseRunning, Status: "ACTIVE", Flavor: "m1.huge", Image: "img-db"}, byConfig, model.MoveCold, model.Downtime, model.Notes, model.PolicyStopStart, "policy.maintenance.flavors"},
		{model.VM{Name: "h", Phase: model.PhaseRunning, Status: "ACTIVE", Image: "img-db", ProjectID: "prj-batch"}, byConfig, model.MoveStays, model.VMAsksToStay, model.Blocks, model.PolicyStays, "policy.maintenance.images"},
		{model.VM{Name: "i", Phase: model.PhaseRunning, Status: "ACTIVE", ProjectID: "prj-batch"}, byConfig, model.MoveCold, model.Downtime, model.Notes, model.PolicyStopStart, "policy.maintenance.projects"},
		{model.VM{Name: "j", Phase: model.PhaseRunning, Status: "ACTIVE", ProjectID: "other"}, byConfig, model.MoveLive, "", "", model.PolicyMigrate, "policy.maintenance.default"},
		{model.VM{Name: "k", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "migrate", Flavor: "m1.huge"}, byConfig, model.MoveLive, "", "", model.PolicyMigrate, "its metadata drainctl:maintenance"},
		{model.VM{Name: "l", Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays"}, Options{ByHand: true}, model.MoveLive, "", "", model.PolicyStays, "its metadata drainctl:maintenance"},
		{model.VM{Name: "m", Phase: model.PhaseBroken, Status: "ERROR", PolicyAsked: "stop-start"}, Options{}, model.MoveStays, model.VMError, model.Blocks, model.PolicyStopStart, "its metadata drainctl:maintenance"},
	} {
		m, r := VMMove(tc.vm, tc.o)
		code, sev := model.ReasonCode(""), model.Severity("")
		if r != nil {
			code, sev = r.Code, r.Severity
		}
		p, from := VMPolicyOf(tc.vm, tc.o)
		if m != tc.method || code != tc.code || sev != tc.sev || p != tc.policy || from != tc.from {
			t.Errorf("%s: %s %s %s, policy %s from %q; want %s %s %s, %s from %q", tc.vm.Name, m, code, sev, p, from, tc.method, tc.code, tc.sev, tc.policy, tc.from)
		}
		if r != nil && r.Severity == model.Blocks && (r.Code == model.VMAsksToStay || r.Code == model.VMPolicyUnknown) && (r.Override != model.OverrideSkipVM || !strings.Contains(r.Message, from)) {
			t.Errorf("%s: the blocker names neither its remedy nor where its policy comes from: %+v", tc.vm.Name, r)
		}
	}
}

func TestNodeReasons(t *testing.T) {
	inv := model.Inventory{Nodes: []model.Node{worker("cp", true, true, "control-plane"), worker("w1", true, true), worker("w2", true, true), worker("w3", false, true)}}
	codes := func(rs []model.Reason) (out []model.ReasonCode) {
		for _, r := range rs {
			out = append(out, r.Code)
		}
		return out
	}
	if rs := NodeReasons(inv.Nodes[1], inv, nil, Options{}); len(rs) != 0 {
		t.Errorf("w1 with w2 remaining: %v", rs)
	}
	if rs := NodeReasons(inv.Nodes[1], inv, map[string]bool{"w2": true}, Options{}); len(rs) != 1 || rs[0].Code != model.LastSchedulable || rs[0].Override != model.OverrideAllowLastNode {
		t.Errorf("w1 when w2 leaves too (w3 NotReady, cp control plane): %v", codes(rs))
	}
	if rs := NodeReasons(inv.Nodes[0], inv, nil, Options{}); len(rs) != 1 || rs[0].Code != model.ControlPlane {
		t.Errorf("cp: %v", codes(rs))
	}
	if rs := NodeReasons(inv.Nodes[0], inv, nil, Options{AllowControlPlane: true}); len(rs) != 0 {
		t.Errorf("cp allowed: %v", codes(rs))
	}
	if rs := NodeReasons(inv.Nodes[1], inv, nil, Options{ProtectedNodes: []labels.Selector{sel("zone=a")}}); len(rs) != 1 || rs[0].Code != model.ProtectedNode {
		t.Errorf("protected: %v", codes(rs))
	}
}

func computeNode(name string, enabled bool, freeMB int64, vcpusFree int) model.Node {
	return model.Node{Name: name, Compute: &model.ComputeService{Host: name, Enabled: enabled, Up: true},
		Hypervisor: &model.Hypervisor{CapacityKnown: true, MemoryMB: 100000, MemoryMBUsed: 100000 - freeMB, VCPUs: 100, VCPUsUsed: 400 - vcpusFree}}
}

func TestCapacityReason(t *testing.T) {
	src := computeNode("src", true, 0, 0)
	vms := []model.VM{{Name: "big", RAMMB: 6000, VCPUs: 2}, {Name: "mid", RAMMB: 4000, VCPUs: 2}, {Name: "small", RAMMB: 2000, VCPUs: 1}}
	// 6000+4000 fits on a, 2000 on b; first-fit-decreasing places all three.
	inv := model.Inventory{Nodes: []model.Node{src, computeNode("a", true, 10000, 10), computeNode("b", true, 2000, 10), computeNode("off", false, 99999, 99)}}
	if r := CapacityReason(src, vms, inv, nil, 4, Options{}); r != nil {
		t.Errorf("fits: %+v", r)
	}
	// Without b, "small" has nowhere to go (the disabled host does not count).
	if r := CapacityReason(src, vms, inv, map[string]bool{"b": true}, 4, Options{}); r == nil || r.Code != model.NoHostWithRoom || r.Severity != model.Blocks {
		t.Errorf("no room: %+v", r)
	}
}

// Zones and hard anti-affinity: a VM moves only within its zone and never next to another
// member of its group, in the plan's placement and in the ranking alike.
func TestPlacementLegality(t *testing.T) {
	zoned := func(n model.Node, zone string, vms ...model.VM) model.Node {
		n.Compute.Zone, n.VMs = zone, vms
		return n
	}
	db := func(name string) model.VM {
		return model.VM{Name: name, Zone: "az1", RAMMB: 1000, VCPUs: 1, AntiAffinity: "db"}
	}
	src := zoned(computeNode("src", true, 0, 0), "az1", db("db-0"))
	a := zoned(computeNode("a", true, 50000, 50), "az1", db("db-1"))
	b := zoned(computeNode("b", true, 50000, 50), "az1")
	other := zoned(computeNode("other", true, 50000, 50), "az2")
	inv := model.Inventory{Nodes: []model.Node{src, a, b, other}}
	if rs := PlacementReasons(src, src.VMs, inv, nil, 4); len(rs) != 0 {
		t.Errorf("b is legal: %v", rs)
	}
	// b leaving too: a holds a member, other is another zone.
	rs := PlacementReasons(src, src.VMs, inv, map[string]bool{"b": true}, 4)
	if len(rs) != 1 || rs[0].Code != model.NoLegalHost || rs[0].Message != "no legal host: anti-affinity group db: members on 1 of the 1 other hosts in zone az1" || rs[0].Override != model.OverrideSkipVM {
		t.Errorf("no legal host: %+v", rs)
	}
	// Two members leaving one host need two legal hosts: b takes one, the other has none.
	two := zoned(computeNode("src", true, 0, 0), "az1", db("db-0"), db("db-2"))
	inv2 := model.Inventory{Nodes: []model.Node{two, b, other}}
	if r := CapacityReason(two, two.VMs, inv2, nil, 4, Options{}); r == nil || r.Code != model.NoHostWithRoom || !strings.Contains(r.Message, "1 VM(s)") {
		t.Errorf("two members, one legal host: %+v", r)
	}
	// The ranking agrees.
	for _, n := range []*model.Node{&src, &a, &b, &other} {
		n.Kube = &model.KubeNode{Name: n.Name, Ready: true, Schedulable: true, Allocatable: model.Resources{MilliCPU: 64000, MemoryBytes: 256 << 30, Pods: 110}}
	}
	inv = model.Inventory{Nodes: []model.Node{src, a, other}}
	judged := false
	for _, v := range Rank(inv, Options{}, WeightsFromConfig(model.DefaultConfig().ScaleDown)) {
		if v.Node == "src" {
			judged = true
			if v.Candidate || !slices.ContainsFunc(v.Reasons, func(r model.Reason) bool { return r.Code == model.NoLegalHost }) {
				t.Errorf("the ranking calls src possible: %+v", v)
			}
		}
	}
	if !judged {
		t.Error("src not ranked")
	}
}

// A locked VM's note stays when it also has its own policy: the plan says both, its policy's
// note (a cold move's downtime) and the lock kept through an admin's move.
func TestALockIsSaidBesideItsOwnPolicy(t *testing.T) {
	for _, vm := range []model.VM{
		{Name: "locked", Phase: model.PhaseRunning, Status: "ACTIVE", Locked: true},
		{Name: "locked-stop-start", Phase: model.PhaseRunning, Status: "ACTIVE", Locked: true, PolicyAsked: "stop-start"},
		{Name: "locked-unknown", Phase: model.PhaseRunning, Status: "ACTIVE", Locked: true, PolicyAsked: "evacuate"},
	} {
		_, r := VMMove(vm, Options{})
		if r == nil || !strings.Contains(r.Message, "locked by its owner") {
			t.Errorf("%s: %+v; want its note to say the lock", vm.Name, r)
		}
	}
	if _, r := VMMove(model.VM{Name: "locked-stop-start", Phase: model.PhaseRunning, Status: "ACTIVE", Locked: true, PolicyAsked: "stop-start"}, Options{}); r == nil || r.Code != model.Downtime {
		t.Errorf("the policy's own note was replaced: %+v", r)
	}
}

// [policy.maintenance] stays_for bounds an owner's stays: it counts for that many days from
// the server's last change (setting the metadata is one); older, the VM is the operator's,
// noted with why. No bound (0), or no updated_at read, leaves it as asked. drainctl's own
// notice to the owner (#57.3) is a change of the server that renews nothing; the owner's
// change after it does.
func TestAnOwnersStaysIsBounded(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	bounded := Options{Now: now, Maintenance: model.MaintenanceConfig{StaysFor: 14}}
	told := now.Add(-10 * time.Minute)
	notice := model.OwnerNotice{What: "live-migration", At: now.Add(time.Hour), By: "campaign c", Told: told}.String()
	for _, tc := range []struct {
		name    string
		updated time.Time
		o       Options
		want    model.VMPolicy
		notice  string
	}{
		{"set 3 days ago", now.AddDate(0, 0, -3), bounded, model.PolicyStays, ""},
		{"set 20 days ago", now.AddDate(0, 0, -20), bounded, model.PolicyMigrate, ""},
		{"no bound", now.AddDate(0, 0, -400), Options{Now: now}, model.PolicyStays, ""},
		{"no updated_at", time.Time{}, bounded, model.PolicyStays, ""},
		{"drainctl's notice its last change", told.Add(2 * time.Second), bounded, model.PolicyMigrate, notice},
		{"changed after drainctl's notice", told.Add(5 * time.Minute), bounded, model.PolicyStays, notice},
	} {
		vm := model.VM{Name: tc.name, Phase: model.PhaseRunning, Status: "ACTIVE", PolicyAsked: "stays", Updated: tc.updated, Notice: tc.notice}
		p, from := VMPolicyOf(vm, tc.o)
		m, r := VMMove(vm, tc.o)
		if p != tc.want {
			t.Errorf("%s: policy %s (%s); want %s", tc.name, p, from, tc.want)
		}
		if tc.want == model.PolicyMigrate && (m != model.MoveLive || r == nil || r.Severity != model.Notes || !strings.Contains(r.Message, "stays_for (14 days)")) {
			t.Errorf("%s: %s, %+v; want it moved live, noted with the bound", tc.name, m, r)
		}
	}
}
