package ops_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
	"github.com/drainctl/drainctl/ops/sim"
)

const reserveLabel = "node-restriction.kubernetes.io/drainctl-failover-reserve"

// The failover reserve (#56.2). c2 is labelled the reserve and held: its nova-compute
// disabled with the reserve's reason. An evacuation of c0 sends nothing there though it is
// the roomiest host. c1 dies: its recovery enables c2 and rebuilds there first, though c0
// (back in service) has more room; c2 loses the label. c1 comes back: its uncordon makes it
// the reserve in c2's place (labelled, its service left disabled), and c2 stays in service.
// A canary proves each host that returns ([return] canary, as the demo's): the reserve's is
// disabled again after it.
func TestAReservedHostIsUsedFirstAndReplacedWhenTheDeadHostReturns(t *testing.T) {
	c := canaryCluster(t, time.Minute)
	c.Cfg.Recover.ReserveLabel = reserveLabel
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	c.World.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) {
		h[c0].MemoryMB, h[c2].MemoryMB = 1<<20, 1<<19 // c0 1 TiB, c2 512 GiB, c1 256 GiB
	})
	e := c.Engine("tester@a", nil)
	ctx := kubetest.Ctx(t)
	labelled := func(node string) bool { k, _ := e.KubeNode(node); return k.Labels[reserveLabel] == "true" }
	if err := e.LabelNode(ctx, c2, reserveLabel, "true"); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "the cache seeing c2 labelled", func() bool { return labelled(c2) })
	held, err := e.HoldReserve(ctx)
	if err != nil || len(held) != 1 || !strings.Contains(held[0], "disabled: the failover reserve") {
		t.Fatalf("holding the reserve: %q, %v", held, err)
	}
	if h, _ := c.World.Host(c2); h.Enabled || !strings.HasPrefix(h.DisabledReason, model.ReservePrefix) {
		t.Fatalf("c2 held: enabled %v, reason %q", h.Enabled, h.DisabledReason)
	}
	if again, err := e.HoldReserve(ctx); err != nil || len(again) != 0 {
		t.Errorf("holding it again: %q, %v; want nothing to do", again, err)
	}

	// An evacuation never lands on the reserve.
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	if rec, _, err := run(t, e, model.OpEvacuate, c0, ro); err != nil {
		t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c1 {
			t.Fatalf("%s evacuated to %s; want c1 (c2 is the reserve)", name, vm.Host)
		}
	}
	if rec, _, err := run(t, e, model.OpUncordon, c0, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatalf("uncordon c0: %v\n%s", err, rec.Transcript(c.Px))
	}

	// c1 dies: rebuilt on the reserve first, c0 the roomier.
	dies(t, c, e, c1)
	rro := ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	rec, rep, err := run(t, e, model.OpRecover, c1, rro)
	if err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("recover c1: %v %s\n%s", err, rep.Result, rec.Transcript(c.Px))
	}
	for _, name := range []string{"vm-a", "vm-b"} {
		if vm, _ := c.World.ServerByName(name); vm.Host != c2 || vm.Status != "ACTIVE" {
			t.Errorf("%s after the recovery: %s on %s; want ACTIVE on the reserve c2", name, vm.Status, vm.Host)
		}
	}
	if h, _ := c.World.Host(c2); !h.Enabled {
		t.Errorf("the reserve c2 after the recovery: still disabled (%q)", h.DisabledReason)
	}
	kubetest.Eventually(t, 10*time.Second, "c2 unlabelled: no longer the reserve", func() bool { return !labelled(c2) })

	// c1 comes back: the reserve in c2's place.
	c.World.ReviveHost(c1)
	kubetest.SetReady(t, c.CS, c1, true, time.Now())
	kubetest.Eventually(t, 10*time.Second, "the cache seeing c1 Ready", func() bool { k, _ := e.KubeNode(c1); return k.Ready })
	if rec, _, err := run(t, e, model.OpUncordon, c1, ops.RunOptions{Policy: defaults()}); err != nil {
		t.Fatalf("uncordon c1: %v\n%s", err, rec.Transcript(c.Px))
	}
	kubetest.Eventually(t, 10*time.Second, "c1 labelled: the reserve now", func() bool { return labelled(c1) })
	if h, _ := c.World.Host(c1); h.Enabled || !strings.HasPrefix(h.DisabledReason, model.ReservePrefix) || !h.Up || h.ForcedDown {
		t.Errorf("c1 back: enabled %v, reason %q, up %v, forced down %v; want held as the reserve", h.Enabled, h.DisabledReason, h.Up,
			h.ForcedDown)
	}
	if h, _ := c.World.Host(c2); !h.Enabled {
		t.Errorf("c2 after c1's return: disabled (%q); want in service", h.DisabledReason)
	}
	if k, _ := e.KubeNode(c1); !k.Schedulable {
		t.Errorf("c1 back: cordoned; want schedulable (reserve_cordon is off)")
	}
	if again, err := e.HoldReserve(ctx); err != nil || len(again) != 0 {
		t.Errorf("holding the reserve after the swap: %q, %v; want nothing to do", again, err)
	}
}

// The label and the reason are claims: a recovery takes a reserve only while both hold at
// that moment. c2's label taken away by a colleague (its service still disabled with the
// reserve's reason: a stale reserve), and c0 labelled over a service a colleague disabled
// for a repair (a label that forges a reserve): the recovery of c1 enables neither, and
// rebuilds where Nova has room. The keeper then gives the stale one back to service and
// leaves the repair's alone.
func TestAReserveIsProvedBeforeARecoveryTakesIt(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Recover.ReserveLabel = reserveLabel
	c0, c1, c2 := c.Name("c0"), c.Name("c1"), c.Name("c2")
	e := c.Engine("tester@a", nil)
	ctx := kubetest.Ctx(t)
	if err := e.LabelNode(ctx, c2, reserveLabel, "true"); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "the cache seeing c2 labelled", func() bool {
		k, _ := e.KubeNode(c2)
		return k.Labels[reserveLabel] == "true"
	})
	if _, err := e.HoldReserve(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.LabelNode(ctx, c2, reserveLabel, ""); err != nil { // a colleague's: c2 no longer the reserve
		t.Fatal(err)
	}
	c.World.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) {
		h[c0].Enabled, h[c0].DisabledReason = false, "RAM fault, DIMM A3: do not use (ops)"
	})
	if err := e.LabelNode(ctx, c0, reserveLabel, "true"); err != nil {
		t.Fatal(err)
	}
	// vm-a and vm-b on c1, then c1 dies.
	c.World.Update(func(_ map[string]*sim.Host, vms map[string]*sim.VM) {
		for _, vm := range vms {
			vm.Host = c1
		}
	})
	c.World.KillHost(c1)
	kubetest.SetReady(t, c.CS, c1, false, time.Now().Add(-5*time.Minute))
	kubetest.Eventually(t, 10*time.Second, "the cache seeing it all", func() bool {
		k1, _ := e.KubeNode(c1)
		k0, _ := e.KubeNode(c0)
		k2, _ := e.KubeNode(c2)
		return !k1.Ready && k0.Labels[reserveLabel] == "true" && k2.Labels[reserveLabel] == ""
	})
	rro := ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	_, rep, _ := run(t, e, model.OpRecover, c1, rro)
	for _, host := range []string{c0, c2} {
		if h, _ := c.World.Host(host); h.Enabled {
			t.Errorf("%s enabled by the recovery (reason was %q)", host, h.DisabledReason)
		}
	}
	for _, vm := range rep.VMs {
		if vm.Result == ops.MigCompleted {
			t.Errorf("%s rebuilt on %s: no host took VMs", vm.VM, vm.Dest)
		}
	}
	said, err := e.HoldReserve(ctx)
	if err != nil || len(said) != 1 || !strings.Contains(said[0], c2+": no longer labelled") {
		t.Errorf("the keeper after: %q, %v; want c2 given back to service, c0 left", said, err)
	}
	if h, _ := c.World.Host(c0); h.Enabled || h.DisabledReason != "RAM fault, DIMM A3: do not use (ops)" {
		t.Errorf("c0, disabled for a repair: enabled %v, reason %q; want left as the colleague left it", h.Enabled, h.DisabledReason)
	}
	if h, _ := c.World.Host(c2); !h.Enabled {
		t.Errorf("c2, no longer labelled: still disabled (%q)", h.DisabledReason)
	}
}

// A node labelled the reserve while drainctl had it emptied (its service disabled with the
// evacuation's reason) is held as the reserve by its uncordon, never put to work: the
// service's reason becomes the reserve's, with the canary on (it proves the host, then
// disables it again) and without.
func TestANodeLabelledTheReserveWhileEmptiedStaysDisabledAtItsUncordon(t *testing.T) {
	for _, canary := range []bool{false, true} {
		t.Run(map[bool]string{false: "without a canary", true: "with a canary"}[canary], func(t *testing.T) {
			newOne := func() *simtest.Cluster { return newCluster(t, 100) }
			if canary {
				newOne = func() *simtest.Cluster { return canaryCluster(t, time.Minute) }
			}
			c := newOne()
			c.Cfg.Recover.ReserveLabel = reserveLabel
			c2 := c.Name("c2")
			e := c.Engine("tester@a", nil)
			ctx := kubetest.Ctx(t)
			ro := ops.RunOptions{Policy: defaults()}
			if rec, _, err := run(t, e, model.OpEvacuate, c2, ro); err != nil {
				t.Fatalf("evacuate: %v\n%s", err, rec.Transcript(c.Px))
			}
			if err := e.LabelNode(ctx, c2, reserveLabel, "true"); err != nil {
				t.Fatal(err)
			}
			kubetest.Eventually(t, 10*time.Second, "the cache seeing c2 labelled", func() bool {
				k, _ := e.KubeNode(c2)
				return k.Labels[reserveLabel] == "true"
			})
			rec, _, err := run(t, e, model.OpUncordon, c2, ro)
			if err != nil {
				t.Fatalf("uncordon: %v\n%s", err, rec.Transcript(c.Px))
			}
			if h, _ := c.World.Host(c2); h.Enabled || !strings.HasPrefix(h.DisabledReason, model.ReservePrefix) {
				t.Errorf("c2 after its uncordon: enabled %v, reason %q; want held as the reserve", h.Enabled, h.DisabledReason)
			}
		})
	}
}

// A node cannot make itself the reserve, and a label does not make a host that runs VMs one.
// On the real API server with NodeRestriction: c0's kubelet may not set the reserve's label on
// its own Node (a key under node-restriction.kubernetes.io/, which the configuration requires),
// though it may set any other. c0, labelled by someone who may while it runs vm-a and vm-b,
// is flagged and left in service; forged further (its service disabled with the reserve's
// reason by hand), a recovery of c2 still does not take it.
func TestAHostThatRunsVMsIsNoReserve(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Recover.ReserveLabel = reserveLabel
	c0, c2 := c.Name("c0"), c.Name("c2")
	e := c.Engine("tester@a", nil)
	ctx := kubetest.Ctx(t)
	kubelet := kubetest.AsNode(t, c0)
	label := func(key string) error {
		patch := []byte(`{"metadata":{"labels":{"` + key + `":"true"}}}`)
		_, err := kubelet.CoreV1().Nodes().Patch(ctx, c0, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	if err := label(reserveLabel); !apierrors.IsForbidden(err) {
		t.Fatalf("c0's kubelet labelled itself the reserve: %v", err)
	}
	if err := label("drainctl.io/failover-reserve"); err != nil { // why the configuration refuses such a key
		t.Fatalf("c0's kubelet could not set a label of its own: %v", err)
	}

	if err := e.LabelNode(ctx, c0, reserveLabel, "true"); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, "the cache seeing c0 labelled", func() bool {
		k, _ := e.KubeNode(c0)
		return k.Labels[reserveLabel] == "true"
	})
	said, err := e.HoldReserve(ctx)
	if err != nil || len(said) != 1 || !strings.Contains(said[0], "Nova shows 2 VM(s) on it: not the failover reserve") {
		t.Fatalf("holding a labelled host with VMs: %q, %v", said, err)
	}
	if h, _ := c.World.Host(c0); !h.Enabled {
		t.Fatalf("c0, running VMs, disabled as the reserve (%q)", h.DisabledReason)
	}

	c.World.Update(func(h map[string]*sim.Host, _ map[string]*sim.VM) {
		h[c0].Enabled, h[c0].DisabledReason = false, e.ReserveReason()
	})
	c.World.AddServer("vm-x", c2, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	dies(t, c, e, c2)
	rro := ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	rec, _, _ := run(t, e, model.OpRecover, c2, rro)
	if vm, _ := c.World.ServerByName("vm-x"); vm.Host == c0 {
		t.Errorf("vm-x rebuilt on c0, a host with VMs labelled the reserve\n%s", rec.Transcript(c.Px))
	}
	if h, _ := c.World.Host(c0); h.Enabled {
		t.Errorf("c0 enabled by the recovery as a reserve")
	}
	said = nil
	for _, ev := range rec.Events() {
		if st, ok := ev.(ops.StepEvent); ok && st.Step == model.StepTakeReserve {
			said = append(said, st.Detail)
		}
	}
	if !strings.Contains(strings.Join(said, "\n"), c0+" not taken: Nova shows 2 VM(s) on it") {
		t.Errorf("the recovery did not say why c0 was passed over: %q", said)
	}
}

// A person's recovery never takes the controller's fence, even where both run as one
// Kubernetes user (a terminal beside the controller it runs, the demo): after an automatic
// recovery of c0 fenced it, a person's plan of c0's recovery asks for a fence command or their
// word, and names the controller's record as proving nothing of theirs.
func TestAPersonsRecoveryNeverTakesTheControllersFence(t *testing.T) {
	c := newCluster(t, 100)
	c0 := c.Name("c0")
	holder, _ := ops.SingletonHolder("drainctl-controller")
	ctl := c.Engine(holder, nil)
	dies(t, c, ctl, c0)
	auto := ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{Automatic: true, FenceCmd: "true {node}"}}
	if _, rep, err := run(t, ctl, model.OpRecover, c0, auto); err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("the controller's recovery: %v %s", err, rep.Result)
	}
	person := c.Engine("drainctl/alice@laptop/1-abcdef/space", nil)
	kubetest.Eventually(t, 10*time.Second, "the person's cache seeing c0 NotReady", func() bool {
		k, _ := person.KubeNode(c0)
		return !k.Ready
	})
	plan, err := person.Plan(kubetest.Ctx(t), model.OpRecover, c0, ops.RunOptions{Policy: withDiskLoss()})
	if err != nil {
		t.Fatal(err)
	}
	var fence string
	for _, s := range plan.Steps {
		if s.Kind == model.StepFence {
			fence = s.Detail
		}
	}
	if strings.Contains(fence, "fenced already") || !strings.Contains(fence, "not proven off") {
		t.Errorf("the person's plan of the fence: %q; want the controller's record not taken", fence)
	}
	if !slices.ContainsFunc(plan.Reasons, func(r model.Reason) bool { return strings.Contains(r.Message, "made by drainctl-controller") }) {
		t.Errorf("the plan does not say whose record it passed over: %v", plan.Reasons)
	}
}

// With [recover] reserve_label set and no node labelled, a recovery's plan lists no step for
// a reserve there is not.
func TestARecoverPlanListsNoReserveThereIsNot(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Recover.ReserveLabel = reserveLabel
	c0 := c.Name("c0")
	e := c.Engine("tester@a", nil)
	dies(t, c, e, c0)
	plan, err := e.Plan(kubetest.Ctx(t), model.OpRecover, c0, ops.RunOptions{Policy: withDiskLoss(),
		RecoverParams: ops.RecoverParams{ConfirmFenced: true}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(plan.Steps, func(s model.Step) bool { return s.Kind == model.StepTakeReserve }) {
		t.Errorf("the plan lists take-reserve with no node labelled %s: %v", reserveLabel, plan.Steps)
	}
}
