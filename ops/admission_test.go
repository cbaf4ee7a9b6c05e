package ops_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

// One admission list for every row that acts (prerequest.go's beforeRequest): a live move, a
// cold move, a stop in place and a rebuild are each asked of Nova only after one pass through
// the whole list, under the cluster-wide start lock, and each pass is followed by one request:
// the passes counted by VM equal the requests Nova logged for it, a failed request's retry
// passing again.
func TestEveryRequestPassesTheAdmissionListOnce(t *testing.T) {
	c := newCluster(t, 100)
	e := c.Engine("tester@a", nil)
	c0, c1 := c.Name("c0"), c.Name("c1")
	small := sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20}
	c.World.SetMetadata("vm-b", model.VMPolicyKey, "restart-in-place")
	c.World.AddServer("vm-off", c0, small)
	c.World.Stop("vm-off") // stopped: moved cold
	dead := c.World.AddServer("vm-dead", c1, small).ID
	c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) { vms[dead].VolumeBacked = true })
	var log simtest.Buffer
	c.Srv.LogWrites(&log)
	passes, unlocked := ops.Admissions(t)

	// vm-a's first live request fails (Nova answers 500): it is retried, through the list again.
	c.World.InjectFault(sim.Fault{Method: "POST", Path: regexp.MustCompile(`^/servers/` + idOf(t, c, "vm-a") + `/action$`),
		Action: "os-migrateLive", Status: 500, Times: 1})
	ro := ops.RunOptions{Policy: defaults()}
	ro.Policy.Force = true
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	c.World.KillHost(c1)
	kubetest.SetReady(t, c.CS, c1, false, time.Now().Add(-5*time.Minute))
	kubetest.Eventually(t, 10*time.Second, "the engine's cache seeing "+c1+" NotReady",
		func() bool { k, _ := e.KubeNode(c1); return !k.Ready })
	rro := ops.RunOptions{Policy: defaults(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	rro.Policy.AcceptDiskLoss = true // a VM the evacuation took to c1 is rebuilt from its image
	if rec, _, err := run(t, e, model.OpRecover, c1, rro); err != nil {
		t.Fatalf("recover: %v\n%s", err, rec.Transcript(c.Px))
	}

	asked := requests(t, log.String())
	want := map[string]struct {
		action string
		n      int
	}{
		"vm-a":    {"os-migrateLive", 2}, // the 500, then the move
		"vm-off":  {"migrate", 1},
		"vm-b":    {"os-stop", 1},
		"vm-dead": {"evacuate", 1},
	}
	got := passes()
	for name, w := range want {
		id := idOf(t, c, name)
		if n := asked[id][w.action]; n != w.n {
			t.Errorf("%s: Nova logged %d %s request(s), want %d (all it logged: %v)", name, n, w.action, w.n, asked[id])
		}
		requests := 0 // a VM the evacuation took to c1 is rebuilt from there too
		for _, a := range []string{"os-migrateLive", "migrate", "os-stop", "evacuate"} {
			requests += asked[id][a]
		}
		if got[id] != requests {
			t.Errorf("%s: %d pass(es) through the admission list for %d request(s) %v: one pass a request",
				name, got[id], requests, asked[id])
		}
	}
	if u := unlocked(); len(u) > 0 {
		t.Errorf("passes that ended without the cluster's start lock held: %v", u)
	}
}

// idOf is the server's ID in the simulator.
func idOf(t *testing.T, c *simtest.Cluster, name string) string {
	t.Helper()
	vm, ok := c.World.ServerByName(name)
	if !ok {
		t.Fatalf("no server %s", name)
	}
	return vm.ID
}

// requests are the server actions in the simulator's write log, by server ID and action,
// whatever Nova answered.
func requests(t *testing.T, log string) map[string]map[string]int {
	action := regexp.MustCompile(`^/compute/v2\.1/servers/([^/]+)/action$`)
	out := map[string]map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		f := strings.SplitN(line, " ", 6) // time, method, path, status, took, body
		if len(f) < 6 || f[1] != "POST" {
			continue
		}
		m := action.FindStringSubmatch(f[2])
		if m == nil {
			continue
		}
		var body map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f[5]), &body); err != nil {
			t.Fatalf("a logged action's body %q: %v", f[5], err)
		}
		for k := range body {
			if out[m[1]] == nil {
				out[m[1]] = map[string]int{}
			}
			out[m[1]][k]++
		}
	}
	return out
}
