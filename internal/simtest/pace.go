package simtest

import (
	"fmt"
	"time"

	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/sim"
)

// SixToPace makes c0 a host of six VMs that every cap lets move at once (to a spare host
// with room for them all), and an engine whose pace decides on short windows and calls a
// 30 ms answer slow: what holds the moves then is the pace alone. It returns c0's name.
func (c *Cluster) SixToPace(holder string) (*ops.Engine, string) {
	c.Cfg.Concurrency.MigrationsPerSource = 6
	c.Cfg.Concurrency.MigrationsPerCluster = 6
	c.Cfg.Concurrency.MigrationsPerDestination = 6
	c0 := c.Name("c0")
	for i := range 4 {
		c.World.AddServer(fmt.Sprintf("vm-p%d", i), c0, sim.Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	}
	c.World.AddHost(c.Name("spare"), 64, 262144, 2000)
	e := c.Engine(holder, func(o *ops.EngineOptions) { o.PaceWindow, o.PaceSlow = 150*time.Millisecond, 30*time.Millisecond })
	return e, c0
}
