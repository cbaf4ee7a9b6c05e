package nova

import (
	"context"
	"fmt"
	"slices"

	"github.com/drainctl/drainctl/model"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/drainctl/drainctl/ops"
)

// BootOn boots a server on host as a requested destination (2.74 "host"): the scheduler's
// filters run on it as on a tenant's VM, so a host whose service is disabled takes none
// (no valid host). Before 2.74 an admin's forced host ("ZONE:HOST") names it, skipping the
// filters.
func (c *Client) BootOn(ctx context.Context, host, zone string, spec ops.BootSpec) (string, error) {
	if zone == "" {
		zone = "nova"
	}
	az := zone + ":" + host
	var builder servers.CreateOptsBuilder
	if c.atLeast("2.74") {
		az = zone
	}
	var networks any = []servers.Network{{UUID: spec.Network}}
	if spec.Network == ops.NoNetwork {
		networks = ops.NoNetwork
	}
	opts := servers.CreateOpts{
		Name: spec.Name, ImageRef: spec.Image, FlavorRef: spec.Flavor, AvailabilityZone: az,
		Networks: networks, Metadata: spec.Metadata,
	}
	builder = opts
	if c.atLeast("2.74") {
		builder = requestedHost{opts, host}
	}
	s, err := servers.Create(ctx, c.compute, builder, nil).Extract()
	if err != nil {
		return "", fmt.Errorf("booting server %s on %s: %w", spec.Name, host, describe(err))
	}
	return s.ID, nil
}

// requestedHost adds 2.74's "host" to a create request (gophercloud's CreateOpts has no field
// for it).
type requestedHost struct {
	servers.CreateOpts
	host string
}

func (r requestedHost) ToServerCreateMap() (map[string]any, error) {
	m, err := r.CreateOpts.ToServerCreateMap()
	if err != nil {
		return nil, err
	}
	m["server"].(map[string]any)["host"] = r.host
	return m, nil
}

// ConsoleOutput is the last lines of a server's console log.
func (c *Client) ConsoleOutput(ctx context.Context, id string, lines int) (string, error) {
	out, err := servers.ShowConsoleOutput(ctx, c.compute, id, servers.ShowConsoleOutputOpts{Length: lines}).Extract()
	if err != nil {
		return "", fmt.Errorf("reading the console log of server %s: %w", id, describe(err))
	}
	return out, nil
}

// DeleteServer deletes a server; one already gone is not an error.
func (c *Client) DeleteServer(ctx context.Context, id string) error {
	err := servers.Delete(ctx, c.compute, id).ExtractErr()
	if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		return fmt.Errorf("deleting server %s: %w", id, describe(err))
	}
	return nil
}

// ProviderConsumers lists the consumers (server UUIDs, or migration records holding a
// move's source room) with an allocation on a resource provider: the hypervisor's ID.
func (c *Client) ProviderConsumers(ctx context.Context, provider string) ([]string, error) {
	if c.placement == nil {
		return nil, ops.ErrNoPlacement
	}
	var allocs wireAllocations
	if _, err := c.placement.Get(ctx, c.placement.ServiceURL("resource_providers", provider, "allocations"), &allocs, nil); err != nil {
		return nil, fmt.Errorf("reading the allocations of resource provider %s: %w", provider, describe(err))
	}
	out := make([]string, 0, len(allocs.Allocations))
	for consumer := range allocs.Allocations {
		out = append(out, consumer)
	}
	return out, nil
}

// StopServer and StartServer are Nova's os-stop and os-start (202; the server's status says
// when it has stopped or started): a VM restarted in place.
// StopServer returns the request's ID, which Nova keeps as the stop's instance action: the
// proof, when the node returns, that the server's newest stop is drainctl's.
func (c *Client) StopServer(ctx context.Context, id string) (string, error) {
	r := servers.Stop(ctx, c.compute, id)
	if err := r.ExtractErr(); err != nil {
		return "", fmt.Errorf("stopping server %s: %w", id, describe(err))
	}
	return r.Header.Get("X-Openstack-Request-Id"), nil
}

// LastPowerAction is the server's newest stop or start, as its instance actions keep it
// (zero when it has none).
func (c *Client) LastPowerAction(ctx context.Context, id string) (model.InstanceAction, error) {
	return c.newestAction(ctx, id, "stop", "start")
}

// LastColdAction is the server's newest cold move or resize (its instance actions): the
// one a VM waiting in VERIFY_RESIZE waits for.
func (c *Client) LastColdAction(ctx context.Context, id string) (model.InstanceAction, error) {
	return c.newestAction(ctx, id, "migrate", "resize")
}

// newestAction is the server's newest instance action named one of names.
func (c *Client) newestAction(ctx context.Context, id string, names ...string) (model.InstanceAction, error) {
	var list struct {
		Actions []model.InstanceAction `json:"instanceActions"`
	}
	if _, err := c.compute.Get(ctx, c.compute.ServiceURL("servers", id, "os-instance-actions"), &list, nil); err != nil {
		return model.InstanceAction{}, fmt.Errorf("reading actions of server %s: %w", id, describe(err))
	}
	for _, a := range list.Actions { // newest first
		if slices.Contains(names, a.Action) {
			return a, nil
		}
	}
	return model.InstanceAction{}, nil
}

func (c *Client) StartServer(ctx context.Context, id string) error {
	if err := servers.Start(ctx, c.compute, id).ExtractErr(); err != nil {
		return fmt.Errorf("starting server %s: %w", id, describe(err))
	}
	return nil
}
