package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// holdForged keeps a caps lease (drainctl-NAME) held by holder, acquired at acquired and
// renewed every 200 ms as a stuck or hostile process would, until the test ends or another
// holder takes it.
func holdForged(t *testing.T, c *simtest.Cluster, name, holder string, acquired time.Time) {
	t.Helper()
	kubetest.Namespace(t, c.CS, kube.LeaseNamespace)
	leases := c.CS.CoordinationV1().Leases(kube.LeaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "drainctl-" + name, Namespace: kube.LeaseNamespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &metav1.MicroTime{Time: acquired}, RenewTime: &now}}
	_ = leases.Delete(kubetest.Ctx(t), l.Name, metav1.DeleteOptions{})
	if _, err := leases.Create(kubetest.Ctx(t), l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		_ = leases.Delete(context.Background(), l.Name, metav1.DeleteOptions{})
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			cur, err := leases.Get(ctx, l.Name, metav1.GetOptions{})
			if err != nil || ptr.Deref(cur.Spec.HolderIdentity, "") != holder {
				return // taken over (or given back): a stuck holder does not notice
			}
			cur.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, _ = leases.Update(ctx, cur, metav1.UpdateOptions{})
		}
	}()
}

// One process holding the migrations lock without end (a node's daemon renewing it, its
// acquireTime kept, as the records policy makes it) holds no move past the lock's bound: an
// evacuation says who holds the lock while it waits, and a lock held past a minute is taken
// over, said with its holder. A dead host's rebuilds take over sooner: a hold of 30 s, which
// no count lasts, holds an evacuation and not a recovery.
func TestAStuckMigrationsLockHoldsNoMoveForLong(t *testing.T) {
	c := newCluster(t, 100)
	c0, c1 := c.Name("c0"), c.Name("c1")
	e := c.Engine(ops.DefaultHolder(), nil)
	const stuck = "drainctl-daemon@compute-9/1-abcdef"
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}

	holdForged(t, c, "migrations.lock", stuck, time.Now().Add(-30*time.Second))
	plan, err := e.Plan(kubetest.Ctx(t), model.OpEvacuate, c0, ro)
	if err != nil {
		t.Fatal(err)
	}
	rec := &simtest.Recorder{}
	ctx, cancel := context.WithTimeout(kubetest.Ctx(t), 3*time.Second)
	_, _ = e.Run(ctx, plan, ro, rec.Emit)
	cancel()
	if vm, _ := c.World.ServerByName("vm-a"); vm.Host != c0 {
		t.Fatalf("vm-a moved to %s while a young hold held the lock", vm.Host)
	}
	if !strings.Contains(said(rec), "moves wait for the migrations lock, held by "+stuck) {
		t.Errorf("the wait does not say who holds the lock:\n%s", said(rec))
	}

	// The VMs are on c0 still, cordoned: c0 dies, and its recovery takes the lock over.
	dies(t, c, e, c0)
	rro := ops.RunOptions{Policy: withDiskLoss(), RecoverParams: ops.RecoverParams{ConfirmFenced: true}}
	rec, rep, err := run(t, e, model.OpRecover, c0, rro)
	if err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("the recovery under a stuck lock: %v %s\n%s", err, rep.Result, said(rec))
	}
	if !strings.Contains(said(rec), "the migrations lock was held by "+stuck) || !strings.Contains(said(rec), "taken over") {
		t.Errorf("the takeover is not said:\n%s", said(rec))
	}

	// A hold of two minutes holds no evacuation either.
	holdForged(t, c, "migrations.lock", stuck, time.Now().Add(-2*time.Minute))
	rec, rep, err = run(t, e, model.OpEvacuate, c1, ro)
	if err != nil || rep.Result != ops.ResultDone || !strings.Contains(said(rec), "past its bound of 1m0s: taken over") {
		t.Fatalf("an evacuation under a lock held two minutes: %v %s\n%s", err, rep.Result, said(rec))
	}
}

// A node slot is a claim that its holder empties its node: a slot whose holder does not hold
// that node's own lease (a lease anyone of the namespace may write) is taken over, said; the
// evacuation under concurrency.nodes = 1 runs.
func TestAForgedNodeSlotIsTakenOver(t *testing.T) {
	c := newCluster(t, 100)
	c.Cfg.Concurrency.Nodes = 1
	c0, c1 := c.Name("c0"), c.Name("c1")
	e := c.Engine(ops.DefaultHolder(), nil)
	forger := "drainctl-daemon@" + c1 + "/1-abcdef#" + c1
	holdForged(t, c, "node-slot.0", forger, time.Now())
	ro := ops.RunOptions{Policy: defaults(), EvacuateParams: ops.EvacuateParams{VMsOnly: true}}
	rec, rep, err := run(t, e, model.OpEvacuate, c0, ro)
	if err != nil || rep.Result != ops.ResultDone {
		t.Fatalf("evacuate under a forged slot: %v %s\n%s", err, rep.Result, said(rec))
	}
	if want := "node slot 1 taken over from " + forger + ": node " + c1 + "'s own lease is held by nobody"; !strings.Contains(said(rec), want) {
		t.Errorf("the takeover is not said (%q):\n%s", want, said(rec))
	}
}
