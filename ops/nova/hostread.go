package nova

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"golang.org/x/sync/errgroup"
)

// HostSnapshot reads the Nova side of some hosts alone, each by itself: its compute service
// (os-services?host=), its servers, its capacity and allocations (its Placement provider)
// and the live migrations from it. hypervisors maps each host to its hypervisor as a whole
// read gave it; without Placement that hypervisor is read again by ID, for its capacity.
// rooms: each host's Placement room is read afresh (a destination's, which a plan fills);
// else the last read of the provider serves (a plan's own node's, which it empties). What
// it costs depends on those hosts, never on the cloud's size: a campaign's plan reads its
// own node so, on a whole read shared by the fleet (ops.Inventory.ReadNodes). Below 2.53
// (no with_servers on one hypervisor, which a read without Placement needs) it returns
// ErrWholeReadNeeded.
func (c *Client) HostSnapshot(ctx context.Context, hypervisors map[string]model.Hypervisor, rooms bool) (model.NovaSnapshot, error) {
	if !c.atLeast("2.53") {
		return model.NovaSnapshot{}, ops.ErrWholeReadNeeded
	}
	parts := make([]model.NovaSnapshot, 0, len(hypervisors))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(placementWorkers)
	for host, hv := range hypervisors {
		g.Go(func() error {
			part, err := c.hostPart(gctx, host, hv, rooms)
			mu.Lock()
			parts = append(parts, part)
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		if Unavailable(err) {
			return model.NovaSnapshot{}, &ops.UnreachableError{Service: "Nova at " + c.compute.Endpoint, Err: err}
		}
		return model.NovaSnapshot{}, err
	}
	var out model.NovaSnapshot
	for _, p := range parts {
		out.Services = append(out.Services, p.Services...)
		out.Hypervisors = append(out.Hypervisors, p.Hypervisors...)
		out.VMs = append(out.VMs, p.VMs...)
		out.Migrations = append(out.Migrations, p.Migrations...)
	}
	return out, nil
}

// hostPart is one host's part of HostSnapshot, its reads at once. With Placement the
// hypervisor is not read again: what the plan reads of it is its ID and names (as they were),
// its room (Placement's) and its state and status, which Nova derives from the service read
// here (up or down; disabled or enabled).
func (c *Client) hostPart(ctx context.Context, host string, hv model.Hypervisor, fresh bool) (model.NovaSnapshot, error) {
	var part model.NovaSnapshot
	var room *providerRoom
	if !fresh && c.placement != nil {
		c.cache.mu.Lock()
		room = c.cache.rooms[hv.ID]
		c.cache.mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { part.Services, err = c.ComputeServices(gctx, host); return })
	g.Go(func() (err error) { part.VMs, err = c.Servers(gctx, host); return })
	// What a plan shows and follows (each request proves its VM afresh): a read of the
	// moves begun in the last second serves every plan made in it.
	g.Go(func() (err error) { part.Migrations, err = c.liveFrom(gctx, host, time.Second); return })
	switch {
	case room != nil: // the last read's: a VM not in it keeps its flavor's size
	case c.placement != nil:
		g.Go(func() (err error) { room, err = c.providerRoom(gctx, hv.ID); return })
	default:
		g.Go(func() (err error) { hv, err = c.hypervisor(gctx, host, hv.ID); return })
	}
	if err := g.Wait(); err != nil {
		return part, err
	}
	switch {
	case room != nil:
		capacity := room.capacity
		hv.Capacity = &capacity
		hv.ServerIDs = nil
		for i := range part.VMs {
			if a := room.allocs[part.VMs[i].ID]; fresh || sameSize(part.VMs[i], a) {
				allocated(&part.VMs[i], a)
			}
			hv.ServerIDs = append(hv.ServerIDs, part.VMs[i].ID)
		}
		for _, svc := range part.Services {
			hv.State, hv.Status = "down", "disabled"
			if svc.Running() {
				hv.State = "up"
			}
			if svc.Enabled {
				hv.Status = "enabled"
			}
		}
	case c.placement == nil:
		if r, ok := hv.Room(c.cpuRatio); ok {
			hv.Capacity = &r
		}
	}
	part.Hypervisors = []model.Hypervisor{hv}
	return part, nil
}

// hypervisor reads one hypervisor by ID, with its servers.
func (c *Client) hypervisor(ctx context.Context, host, id string) (model.Hypervisor, error) {
	var body struct {
		Hypervisor wireHypervisor `json:"hypervisor"`
	}
	hc := c.hypervisorClient()
	u := hc.ServiceURL("os-hypervisors", id) + "?with_servers=true"
	if _, err := hc.Get(ctx, u, &body, nil); err != nil {
		return model.Hypervisor{}, fmt.Errorf("reading hypervisor %s of host %s: %w", id, host, describe(err))
	}
	return body.Hypervisor.model(hc.Microversion != "" && !atLeast(hc.Microversion, "2.88")), nil
}
