package controllers_test

import (
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// The daemon and the NodeMaintenance controller work with a Nova user granted exactly the
// rules deploy/README.md lists (no admin role), as their Kubernetes side works with exactly
// the RBAC deploy/ ships: the daemon follows a cordon and an uncordon, the controller takes a
// node through a NodeMaintenance and back.
func TestControllersWithTheOperatorsNovaPolicy(t *testing.T) {
	c := newCluster(t, 50)
	rules, _ := simtest.DeployRules(t, "../../deploy/README.md")
	c.AsOperator("operator", rules)
	c0, c1 := c.Name("c0"), c.Name("c1")

	stop := c.startDaemon(c0)
	c.SetUnschedulable(c0, true)
	kubetest.Eventually(t, 20*time.Second, "the daemon moving both VMs off "+c0, func() bool {
		a, _ := c.World.ServerByName("vm-a")
		b, _ := c.World.ServerByName("vm-b")
		h, _ := c.World.Host(c0)
		return a.Host != c0 && b.Host != c0 && !h.Enabled
	})
	c.SetUnschedulable(c0, false)
	kubetest.Eventually(t, 20*time.Second, "the daemon re-enabling nova-compute on "+c0, func() bool {
		h, _ := c.World.Host(c0)
		return h.Enabled
	})
	stop()

	store, _ := c.maintenances("")
	stop = c.startController()
	defer func() { stop() }()
	if _, err := store.Create(kubetest.Ctx(t), c1, "firmware"); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "the NodeMaintenance of "+c1+" Succeeded", func() bool {
		nm, _ := maintenanceOf(store, c1)
		return nm.Status.Phase == model.MaintenanceSucceeded
	})
	if h, _ := c.World.Host(c1); h.Enabled {
		t.Errorf("nova-compute on %s still enabled under maintenance", c1)
	}
}
