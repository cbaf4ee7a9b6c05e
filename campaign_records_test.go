package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// A campaign killed during a node's step, the node then put back to work by hand and given
// a VM: the rerun does not run the step (a reboot) on a node that carries work again. It
// sees the node is no longer emptied under the campaign and evacuates it first.
func TestRollResumesAStepOnlyOnAnEmptiedNode(t *testing.T) {
	c := newRollCluster(t)
	c1 := c.px + "-c1"
	gate := filepath.Join(t.TempDir(), "gate")
	steps := filepath.Join(t.TempDir(), "steps")
	step := `if [ {node} = ` + c1 + ` ]; then while [ ! -e ` + gate + ` ]; do sleep 0.05; done; fi; echo "$DRAINCTL_NODE" >> ` + steps + `; echo stepped {node}`
	args := []string{"--auto", "roll", c.px + "-c0", c1, "--exec", step}
	p := c.startProcess(t, args...)
	p.waitFor(t, c1+" step")
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	// Back to work by hand: kubectl uncordon, openstack compute service set --enable; a VM lands.
	if _, err := c.cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), c1, types.MergePatchType, []byte(`{"spec":{"unschedulable":false,"taints":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	c.world.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) { h[c1].Enabled, h[c1].DisabledReason = true, "" })
	c.world.AddServer("late-1", c1, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	os.WriteFile(gate, nil, 0o600)

	r := c.drainctl(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("rerun: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "evacuated again before its step") {
		t.Errorf("the rerun did not say why it evacuates %s again:\n%s", c1, r.stderr)
	}
	if vm, _ := c.world.ServerByName("late-1"); vm.Host == c1 || len(c.world.MigrationStatuses(vm.ID)) == 0 {
		t.Errorf("late-1 is still on %s: the step ran on a node carrying a VM", vm.Host)
	}
	ran, _ := os.ReadFile(steps)
	if strings.Count(string(ran), c1) != 1 {
		t.Errorf("the step ran %d times on %s", strings.Count(string(ran), c1), c1)
	}
}

// A campaign record is data to check, not orders to follow: a planted record naming an
// option for a node name never reaches the operator's command; a selector that now matches
// other nodes, or a record older than [roll] resume_within, is not resumed unasked; a
// finished record is collected after [roll] keep_records; campaigns lists what is left.
func TestRollChecksItsRecord(t *testing.T) {
	c := newRollCluster(t)
	c0, c1 := c.px+"-c0", c.px+"-c1"
	rack := "rack=" + c.px + "-r1"
	ran := filepath.Join(t.TempDir(), "ran")
	plant := func(name string, rec model.Campaign) {
		data, _ := json.Marshal(rec)
		saveRecord(t, c.cs, "campaign-"+name, data)
	}
	// Planted before the first run, under the name the operator will give, with a node
	// name that ssh would read as an option.
	hostile := "-oProxyCommand=touch " + ran
	plant("planted", model.Campaign{Name: "planted", Selector: rack, State: model.CampaignInterrupted, Updated: time.Now(),
		Nodes: []model.CampaignNode{{Name: hostile, Phase: model.PhaseStep}, {Name: c0, Phase: model.PhasePending}}})
	r := c.drainctl(t, nil, "--auto", "roll", "--selector", rack, "--campaign", "planted", "--gate-cmd", "ssh {node} true; touch "+ran)
	if r.code != 2 || !strings.Contains(r.stderr, "unfinished over other nodes") {
		t.Fatalf("a planted record: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("an operator command ran for a planted record")
	}
	// A record older than resume_within is not resumed without --resume.
	old := model.Campaign{Name: "old", State: model.CampaignInterrupted, Updated: time.Now().Add(-25 * time.Hour),
		Nodes: []model.CampaignNode{{Name: c0, Phase: model.PhaseDone}, {Name: c1, Phase: model.PhaseDone}}}
	plant("old", old)
	r = c.drainctl(t, nil, "--auto", "roll", c0, c1, "--campaign", "old")
	if r.code != 2 || !strings.Contains(r.stderr, "resume_within") || !strings.Contains(r.stderr, "--resume") {
		t.Fatalf("an old record: exit %d\n%s", r.code, r.stderr)
	}
	// Its nodes were finished by it (each node says so, as a campaign marks it): nothing is
	// left to do, and the command never runs.
	for _, n := range []string{c0, c1} {
		patch := []byte(`{"metadata":{"annotations":{"` + campaign.DoneAnnotation + `":"old"}}}`)
		if _, err := c.cs.CoreV1().Nodes().Patch(kubetest.Ctx(t), n, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r = c.drainctl(t, nil, "--auto", "roll", c0, c1, "--campaign", "old", "--resume", "--exec", "bmc-reboot --password hunter2 {node}")
	if r.code != 0 || !strings.Contains(r.stderr, "resuming") {
		t.Fatalf("an old record with --resume: exit %d\n%s", r.code, r.stderr)
	}
	// The command line (and its password) is never stored on the cluster, nor printed.
	cm, err := c.cs.CoreV1().ConfigMaps(kube.LeaseNamespace).Get(kubetest.Ctx(t), kube.RecordName("campaign-old"), metav1.GetOptions{})
	if err != nil || strings.Contains(cm.Data["record.json"], "bmc-reboot") || strings.Contains(r.stderr+r.stdout, "hunter2") {
		t.Errorf("the exec command is stored or printed: %v\n%s\n%s", err, cm.Data["record.json"], r.stderr)
	}
	// --spread-by a label some node lacks: spreading would silently stop.
	r = c.drainctl(t, nil, "--auto", "roll", c0, c1, "--spread-by", "zone", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "have no zone label") {
		t.Fatalf("--spread-by a missing label: exit %d\n%s", r.code, r.stderr)
	}
	// A selector that matches other nodes than its record's: exit 2.
	plant("rack", model.Campaign{Name: "rack", Selector: rack, State: model.CampaignInterrupted, Updated: time.Now(),
		Nodes: []model.CampaignNode{{Name: c0, Phase: model.PhaseDone}}})
	r = c.drainctl(t, nil, "--auto", "roll", "--selector", rack, "--campaign", "rack", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "now matches") {
		t.Fatalf("a selector that matches other nodes: exit %d\n%s", r.code, r.stderr)
	}

	// A finished record past keep_records is collected; campaigns lists the rest, one JSON object a line.
	plant("ancient", model.Campaign{Name: "ancient", State: model.CampaignDone, Updated: time.Now().Add(-8 * 24 * time.Hour),
		Nodes: []model.CampaignNode{{Name: c0, Phase: model.PhaseDone}}})
	r = c.drainctl(t, nil, "--auto", "campaigns", "-o", "json")
	if r.code != 0 {
		t.Fatalf("campaigns: exit %d\n%s", r.code, r.stderr)
	}
	names := map[string]string{}
	for _, line := range ndjson(t, r.stdout) {
		if line["type"] != "campaign" {
			t.Errorf("a line of another type: %v", line)
		}
		names[line["name"].(string)] = line["state"].(string)
	}
	if _, ok := names["ancient"]; ok || names["old"] != string(model.CampaignDone) || names["rack"] != string(model.CampaignInterrupted) {
		t.Errorf("campaigns: %v", names)
	}
	if _, err := c.cs.CoreV1().ConfigMaps(kube.LeaseNamespace).Get(kubetest.Ctx(t), kube.RecordName("campaign-ancient"), metav1.GetOptions{}); err == nil {
		t.Error("the finished record past keep_records is still there")
	}
	r = c.drainctl(t, nil, "--auto", "campaigns")
	if r.code != 0 || !strings.Contains(r.stdout, "NAME") || !strings.Contains(r.stdout, "rack") {
		t.Errorf("campaigns table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
