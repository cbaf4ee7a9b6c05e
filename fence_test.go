package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// A fence proves one outage. On the real API server, with the simulator over HTTP and
// drainctl as its own process:
//   - a journal annotation saying "fenced" (which the node's own identities may write) proves
//     nothing;
//   - a host recovered, then put back by hand (not by drainctl uncordon) and given a new VM,
//     that dies again is not recovered on the old fence;
//   - a fence command given always runs: one that fails refuses the recovery even when a
//     record proves the outage;
//   - a node seen Ready loses its fence record at the next plan.
func TestAFenceProvesOneOutage(t *testing.T) {
	c := newAutoClusterWith(t, autoOptions{seed: 13, spare: true, pdbMin: 1})
	cs := kubetest.Client(t)
	c0 := c.px + "-c0"
	die := func(since time.Time) {
		c.world.KillHost(c0)
		kubetest.SetReady(t, cs, c0, false, since)
	}
	annotate := func(value string) {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{ops.JournalAnnotation: value}}})
		if value == "" {
			patch = []byte(`{"metadata":{"annotations":{"` + ops.JournalAnnotation + `":null}}}`)
		}
		if _, err := cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), c0, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stays := func(when string, vms ...string) {
		t.Helper()
		h, _ := c.world.Host(c0)
		if h.ForcedDown {
			t.Errorf("%s: nova-compute forced down", when)
		}
		for _, name := range vms {
			if vm, _ := c.world.ServerByName(name); vm.Host != c0 || len(c.world.MigrationStatuses(vm.ID)) != 0 {
				t.Errorf("%s: %s rebuilt (%s, evacuations %v)", when, name, vm.Host, c.world.MigrationStatuses(vm.ID))
			}
		}
	}
	record := func() (model.FenceRecord, bool) {
		cm, err := cs.CoreV1().ConfigMaps(kube.LeaseNamespace).Get(kubetest.Ctx(t), kube.RecordName("fence-"+c0), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return model.FenceRecord{}, false
		} else if err != nil {
			t.Fatal(err)
		}
		var f model.FenceRecord
		if err := json.Unmarshal([]byte(cm.Data["record.json"]), &f); err != nil {
			t.Fatal(err)
		}
		return f, true
	}
	die(time.Now().Add(-5 * time.Minute))

	// Forged: one patch of the node's own annotation, as its kubelet could make.
	annotate(`{"op":"recover","phase":"fenced","holder":"x","fenced":"--fence-cmd exited 0 (run by x)"}`)
	r := c.drainctl(t, nil, "--auto", "recover", c0, "--accept-disk-loss")
	if r.code != 3 || !strings.Contains(r.stderr, "not proven off") {
		t.Fatalf("a forged journal: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stays("after a forged journal", "db-1", "db-2")
	annotate("")

	// A --skip-vm that names no VM of the node (a typo: the VM meant would lose its disk) or
	// several (names are their owners' choice) is refused before anything.
	r = c.drainctl(t, nil, "--auto", "recover", c0, "--confirm-fenced", "--accept-disk-loss", "--skip-vm", "db1")
	if r.code != 2 || !strings.Contains(r.stderr, "--skip-vm db1 names no VM of the targets") || !strings.Contains(r.stderr, "db-1") {
		t.Fatalf("a typo in --skip-vm: exit %d\n%s", r.code, r.stderr)
	}
	twin1 := c.world.AddServer("twin", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	c.world.AddServer("twin", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	r = c.drainctl(t, nil, "--auto", "recover", c0, "--confirm-fenced", "--accept-disk-loss", "--skip-vm", "twin")
	if r.code != 2 || !strings.Contains(r.stderr, "names 2 VMs") || !strings.Contains(r.stderr, "--skip-vm "+twin1.ID) {
		t.Fatalf("an ambiguous --skip-vm: exit %d\n%s", r.code, r.stderr)
	}
	stays("refused for its --skip-vm", "db-1", "db-2", "twin")

	// Losing a local disk is asked for by name.
	r = c.drainctl(t, nil, "--auto", "recover", c0, "--confirm-fenced")
	if r.code != 3 || !strings.Contains(r.stderr, "--accept-disk-loss") {
		t.Fatalf("without --accept-disk-loss: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stays("refused for the disk", "db-1", "db-2")

	// A fence command that hangs, printing without end, is killed at [recover] fence_timeout:
	// nothing proven, nothing changed, its flood cut to a bounded report.
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[timeouts]\npoll = \"100ms\"\n[recover]\nfence_timeout = \"2s\"\n"), 0o600)
	r = c.drainctl(t, nil, "--config", cfg, "--auto", "recover", c0, "--accept-disk-loss", "--fence-cmd", "yes {node} powering off")
	if r.code != 3 || !strings.Contains(r.stderr, "fence command timed out after 2s") || strings.Count(r.stderr, "powering off") > 300 {
		t.Fatalf("an endless fence command: exit %d, %d bytes\n%.2000s", r.code, len(r.stderr), r.stderr)
	}
	stays("after an endless fence command", "db-1", "db-2")

	// Recovered on the operator's word: the record names this outage.
	r = c.drainctl(t, nil, "--auto", "recover", c0, "--confirm-fenced", "--accept-disk-loss")
	if r.code != 0 {
		t.Fatalf("recover: exit %d\n%s", r.code, r.stderr)
	}
	f, ok := record()
	if n, _ := cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{}); !ok || f.NodeUID != string(n.UID) || f.Outage.IsZero() {
		t.Fatalf("fence record: %+v (found %v)", f, ok)
	}

	// Put back by hand, as two commands would (kubectl uncordon; openstack compute service
	// set --up --enable), and given a VM by the scheduler. Nothing of drainctl saw it Ready.
	c.world.ReviveHost(c0)
	c.world.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) {
		h[c0].ForcedDown, h[c0].Enabled, h[c0].DisabledReason = false, true, ""
	})
	kubetest.SetReady(t, cs, c0, true, time.Now().Add(-time.Minute))
	uncordon := []byte(`{"spec":{"unschedulable":false,"taints":null}}`)
	if _, err := cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), c0, types.MergePatchType, uncordon, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	c.world.AddServer("new-1", c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	// It dies again: another outage. The old record proves nothing about it.
	die(time.Now().Add(-2 * time.Minute))
	if _, ok := record(); !ok {
		t.Fatal("the old record is gone: the test would not show that it is not trusted")
	}
	r = c.drainctl(t, nil, "--auto", "recover", c0, "--accept-disk-loss")
	if r.code != 3 || !strings.Contains(r.stderr, "not proven off") || !strings.Contains(r.stdout, "proves nothing now") {
		t.Fatalf("a stale fence after a manual return: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stays("after a stale fence", "new-1")

	// A record for this very outage (an operator's, say) is trusted by a plan...
	n, err := cs.CoreV1().Nodes().Get(kubetest.Ctx(t), c0, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var since time.Time
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			since = cond.LastTransitionTime.Time
		}
	}
	now := model.FenceRecord{Node: c0, NodeUID: string(n.UID), Outage: since, BootID: n.Status.NodeInfo.BootID, How: "the operator's word", By: "test", At: time.Now()}
	data, _ := json.Marshal(now)
	saveRecordAsOperator(t, "fence-"+c0, data) // written by the user who runs drainctl: theirs
	r = c.drainctl(t, nil, "--auto", "plan", "recover", c0, "--accept-disk-loss")
	if r.code != 0 || !strings.Contains(r.stdout, "fenced already for this outage") {
		t.Fatalf("a record of this outage: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// ... but a fence command given runs all the same, and its failure refuses the recovery.
	r = c.drainctl(t, nil, "--auto", "recover", c0, "--accept-disk-loss", "--fence-cmd", "echo BMC of {node} unreachable; exit 1")
	if r.code != 3 || !strings.Contains(r.stderr, "BMC of "+c0+" unreachable") || !strings.Contains(r.stderr, "fence command failed") {
		t.Fatalf("a failing fence command after a record: exit %d\n%s", r.code, r.stderr)
	}
	stays("after a failed fence command", "new-1")

	// Seen Ready, the node's fence is forgotten by the next plan (the journal still mirrors it).
	c.world.ReviveHost(c0)
	kubetest.SetReady(t, cs, c0, true, time.Now())
	r = c.drainctl(t, nil, "--auto", "plan", "evacuate", c0)
	if _, ok := record(); ok {
		t.Fatalf("the fence record of a node seen Ready is still there\n%s%s", r.stdout, r.stderr)
	}
}

// saveRecord writes one of drainctl's records as an operator allowed to would.
// saveRecordAsOperator writes a record as drainctl does for the user the tests run drainctl
// as (their kubeconfig), its writer named: the operator's own record.
func saveRecordAsOperator(t *testing.T, name string, data []byte) {
	t.Helper()
	cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: kubetest.Kubeconfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.NewClient(cs, nil).SaveRecord(kubetest.Ctx(t), name, data); err != nil {
		t.Fatal(err)
	}
}

// saveRecord plants a record by hand (no writer named), as anyone allowed to write records may.
func saveRecord(t *testing.T, cs kubernetes.Interface, name string, data []byte) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.RecordName(name), Namespace: kube.LeaseNamespace,
		Labels: map[string]string{"drainctl.io/record": strings.SplitN(name, "-", 2)[0]}}, Data: map[string]string{"record.json": string(data)}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(kubetest.Ctx(t), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(kube.LeaseNamespace)
	if _, err := cms.Create(kubetest.Ctx(t), cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(kubetest.Ctx(t), cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

// A fence is keyed on the machine drainctl pinned, not on what the Node says now. On the real
// API server: a fence pins the machine's system UUID; the same Node object that then reports
// another machine (as its kubelet can write) is not fenced, and no command is run; a value
// that is no UUID (spaces, shell syntax) never reaches a command, which is refused when it
// would read it.
func TestAFenceIsKeyedOnThePinnedMachine(t *testing.T) {
	c := newAutoClusterWith(t, autoOptions{seed: 13, spare: true, pdbMin: 1})
	cs := kubetest.Client(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	t.Cleanup(func() { // the API server is shared: two NotReady nodes would hold every later campaign (the fleet hurting)
		for _, n := range []string{c0, c1} {
			_ = cs.CoreV1().ConfigMaps(kube.LeaseNamespace).Delete(context.Background(), kube.RecordName("machine-"+n), metav1.DeleteOptions{})
			kubetest.SetReady(t, cs, n, true, time.Now())
		}
	})
	reports := func(node, uuid string) { // as the node's kubelet would write its status
		t.Helper()
		n, err := cs.CoreV1().Nodes().Get(kubetest.Ctx(t), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.NodeInfo.SystemUUID, n.Status.NodeInfo.BootID = uuid, "6b0c5a0e-1f0b-4d52-9d3e-2a1f4c8e9b70"
		if _, err := cs.CoreV1().Nodes().UpdateStatus(kubetest.Ctx(t), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ran := filepath.Join(t.TempDir(), "ran")
	asked := func() string { b, _ := os.ReadFile(ran); return string(b) }
	// Fails on purpose: what matters is what it was told, and that nothing is rebuilt.
	fence := `echo {node} "$DRAINCTL_SYSTEM_UUID" "$DRAINCTL_BOOT_ID" >> ` + ran + `; exit 1`
	const u1, u2 = "4c4c4544-0031-3510-8052-b4c04f4e3332", "4c4c4544-0031-3510-8052-b4c04f4e9999"

	reports(c0, u1)
	c.world.KillHost(c0)
	kubetest.SetReady(t, cs, c0, false, time.Now().Add(-5*time.Minute))
	r := c.drainctl(t, nil, "--auto", "recover", c0, "--accept-disk-loss", "--fence-cmd", fence)
	told := asked() // each of its tries ([recover] fence_retries)
	if r.code != 3 || told == "" || strings.ReplaceAll(told, c0+" "+u1+" 6b0c5a0e-1f0b-4d52-9d3e-2a1f4c8e9b70\n", "") != "" {
		t.Fatalf("the first fence: exit %d, told %q\n%s", r.code, told, r.stderr)
	}
	cm, err := cs.CoreV1().ConfigMaps(kube.LeaseNamespace).Get(kubetest.Ctx(t), kube.RecordName("machine-"+c0), metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["record.json"], u1) {
		t.Fatalf("no pin of %s's machine: %v %v", c0, cm, err)
	}
	for _, forged := range []string{u2, "x -H evil-bmc", ""} {
		reports(c0, forged)
		r = c.drainctl(t, nil, "--auto", "recover", c0, "--accept-disk-loss", "--fence-cmd", fence)
		if r.code != 3 || !strings.Contains(r.stderr, "drainctl pinned "+u1) || asked() != told {
			t.Fatalf("the Node now says %q: exit %d, told %q\n%s", forged, r.code, asked(), r.stderr)
		}
	}

	// No pin yet, and a value that is no UUID: never passed on; a command that reads it is not run.
	reports(c1, "a b; reboot")
	c.world.KillHost(c1)
	kubetest.SetReady(t, cs, c1, false, time.Now().Add(-5*time.Minute))
	r = c.drainctl(t, nil, "--auto", "recover", c1, "--accept-disk-loss", "--fence-cmd", fence)
	if r.code != 3 || !strings.Contains(r.stderr, "gives no UUID for it") || asked() != told {
		t.Fatalf("a system UUID with spaces: exit %d, told %q\n%s", r.code, asked(), r.stderr)
	}
	r = c.drainctl(t, nil, "--auto", "recover", c1, "--accept-disk-loss", "--fence-cmd", "echo {node} >> "+ran+"; exit 1")
	if r.code != 3 || !strings.Contains(asked(), c1+"\n") || !strings.Contains(r.stdout+r.stderr, "DRAINCTL_SYSTEM_UUID left empty") {
		t.Fatalf("a command keyed on the node's name: exit %d, told %q\n%s%s", r.code, asked(), r.stdout, r.stderr)
	}
	if vm, _ := c.world.ServerByName("app-1"); vm.Host != c1 {
		t.Errorf("app-1 rebuilt on %s without a fence", vm.Host)
	}
}
