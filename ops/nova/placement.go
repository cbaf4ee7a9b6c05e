package nova

import (
	"context"
	"fmt"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/placement/v1/resourceproviders"

	"github.com/drainctl/drainctl/model"
)

// Capacity from Placement, what Nova's scheduler consults: per compute node (resource
// provider), inventories with their reserved amounts and allocation ratios, and the
// allocations of every consumer on it (usage is their sum). Placement has no call that
// returns inventories or allocations for many providers at once, so a refresh lists the
// providers once and reads the inventories and allocations of those whose generation moved
// since the last read (Placement moves a provider's generation with any change of either),
// several at a time. At rest a refresh is one request, whatever the number of hosts.

// placementWorkers bounds the requests in flight to Placement.
const placementWorkers = 16

// providerRoom is one provider's capacity and the allocations on it, by consumer, as of
// its generation.
type providerRoom struct {
	capacity   model.Capacity
	allocs     map[string]map[string]int
	generation int // -1: read across a change (the two answers' generations differ): read again
}

// roomCache keeps each provider's last read, by uuid.
type roomCache struct {
	mu    sync.Mutex
	rooms map[string]*providerRoom
}

// placementRooms reads every provider: keyed by provider uuid (the hypervisor's id) and by
// name (the hypervisor hostname).
func (c *Client) placementRooms(ctx context.Context) (map[string]*providerRoom, error) {
	pages, err := resourceproviders.List(c.placement, resourceproviders.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing Placement's resource providers: %w", describe(err))
	}
	rps, err := resourceproviders.ExtractResourceProviders(pages)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*providerRoom, 2*len(rps))
	c.cache.mu.Lock()
	if c.cache.rooms == nil {
		c.cache.rooms = map[string]*providerRoom{}
	}
	listed := make(map[string]bool, len(rps))
	stale := rps[:0:0]
	for _, rp := range rps {
		listed[rp.UUID] = true
		if room := c.cache.rooms[rp.UUID]; room != nil && room.generation == rp.Generation && c.fullEvery >= 0 {
			out[rp.UUID], out[rp.Name] = room, room
			continue
		}
		stale = append(stale, rp)
	}
	for uuid := range c.cache.rooms {
		if !listed[uuid] {
			delete(c.cache.rooms, uuid) // a provider gone
		}
	}
	c.cache.mu.Unlock()
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, placementWorkers)
	var wg sync.WaitGroup
	for _, rp := range stale {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			room, err := c.providerRoom(ctx, rp.UUID)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out[rp.UUID], out[rp.Name] = room, room
			c.cache.mu.Lock()
			c.cache.rooms[rp.UUID] = room
			c.cache.mu.Unlock()
		}()
	}
	wg.Wait()
	return out, firstErr
}

// wireInventories and wireAllocations are a provider's GET .../inventories and
// .../allocations, decoded once into what drainctl reads (gophercloud's Extract decodes
// twice through reflection: a tenth of a 5,000-host refresh).
type wireInventories struct {
	Generation  int `json:"resource_provider_generation"`
	Inventories map[string]struct {
		Total           int64   `json:"total"`
		Reserved        int64   `json:"reserved"`
		AllocationRatio float64 `json:"allocation_ratio"`
	} `json:"inventories"`
}

type wireAllocations struct {
	Generation  int `json:"resource_provider_generation"`
	Allocations map[string]struct {
		Resources map[string]int `json:"resources"`
	} `json:"allocations"`
}

func (c *Client) providerRoom(ctx context.Context, uuid string) (*providerRoom, error) {
	var allocs wireAllocations
	if _, err := c.placement.Get(ctx, c.placement.ServiceURL("resource_providers", uuid, "allocations"), &allocs, nil); err != nil {
		return nil, fmt.Errorf("reading the allocations of resource provider %s: %w", uuid, describe(err))
	}
	// The generation moves with any change of the inventories or the allocations: the same
	// one as the last read's is the same provider, and its inventories need no read.
	c.cache.mu.Lock()
	was := c.cache.rooms[uuid]
	c.cache.mu.Unlock()
	if was != nil && was.generation >= 0 && was.generation == allocs.Generation && c.fullEvery >= 0 {
		return was, nil
	}
	var inv wireInventories
	if _, err := c.placement.Get(ctx, c.placement.ServiceURL("resource_providers", uuid, "inventories"), &inv, nil); err != nil {
		return nil, fmt.Errorf("reading the inventories of resource provider %s: %w", uuid, describe(err))
	}
	used := map[string]int64{}
	room := &providerRoom{allocs: make(map[string]map[string]int, len(allocs.Allocations)), generation: allocs.Generation}
	if inv.Generation != allocs.Generation {
		room.generation = -1 // changed between the two reads: neither can be trusted next time
	}
	for consumer, a := range allocs.Allocations {
		room.allocs[consumer] = a.Resources
		for class, n := range a.Resources {
			used[class] += int64(n)
		}
	}
	res := func(class string) model.Resource {
		i := inv.Inventories[class]
		return model.NewResource(i.Total, i.Reserved, i.AllocationRatio, used[class])
	}
	room.capacity = model.Capacity{Source: model.CapacityPlacement, VCPU: res("VCPU"), MemoryMB: res("MEMORY_MB"), DiskGB: res("DISK_GB")}
	c.cache.mu.Lock()
	if c.cache.rooms == nil {
		c.cache.rooms = map[string]*providerRoom{}
	}
	c.cache.rooms[uuid] = room
	c.cache.mu.Unlock()
	return room, nil
}

// withCapacity sets each hypervisor's capacity: Placement's provider (by uuid, else by
// hostname) when Placement answers, else os-hypervisors' figures with the configured ratio.
// It returns the allocations by consumer (server uuid), for the VMs' real sizes.
func (c *Client) withCapacity(ctx context.Context, hvs []model.Hypervisor) (map[string]map[string]int, error) {
	if c.placement == nil {
		for i := range hvs {
			if room, ok := hvs[i].Room(c.cpuRatio); ok {
				hvs[i].Capacity = &room
			}
		}
		return nil, nil
	}
	rooms, err := c.placementRooms(ctx)
	if err != nil {
		return nil, err
	}
	allocs := map[string]map[string]int{}
	for i := range hvs {
		room := rooms[hvs[i].ID]
		if room == nil {
			room = rooms[hvs[i].Hostname]
		}
		if room == nil {
			continue
		}
		capacity := room.capacity
		hvs[i].Capacity = &capacity
		for consumer, a := range room.allocs {
			allocs[consumer] = a
		}
	}
	return allocs, nil
}

// allocated sets a VM's size to what it holds in Placement, when that differs from its
// flavor (a volume-backed VM holds no disk; a resize in progress holds both).
func allocated(vm *model.VM, a map[string]int) {
	if a == nil {
		return
	}
	if v, ok := a["VCPU"]; ok {
		vm.VCPUs = v
	}
	if v, ok := a["MEMORY_MB"]; ok {
		vm.RAMMB = int64(v)
	}
	vm.DiskGB = int64(a["DISK_GB"])
}

// sameSize says an allocation read earlier is still vm's: the vCPUs and memory of its flavor
// now (a VM resized since holds another). Its disk may differ (a volume-backed VM holds none).
func sameSize(vm model.VM, a map[string]int) bool {
	return a != nil && a["VCPU"] == vm.VCPUs && int64(a["MEMORY_MB"]) == vm.RAMMB
}
