package nova

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/hypervisors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/services"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// inProgressStatuses are the os-migrations statuses of a live migration not yet finished.
// os-migrations filters on one status per call, so a refresh makes one call per status:
// a constant number, whatever the number of hosts.
var inProgressStatuses = []string{"accepted", "queued", "preparing", "running", "post-migrating"}

// Snapshot reads the whole Nova side: compute services, hypervisors (with their servers),
// every server of every project, and the live migrations in progress. The number of calls
// depends on the page size, never on the number of hosts.
func (c *Client) Snapshot(ctx context.Context) (model.NovaSnapshot, error) {
	snap, err := c.snapshot(ctx)
	if err != nil && Unavailable(err) {
		return snap, &ops.UnreachableError{Service: "Nova at " + c.compute.Endpoint, Err: err}
	}
	return snap, err
}

// snapshot reads the four lists at once: they are independent, and against a real Nova
// each is mostly waiting (the servers' pages alone take seconds at 50,000 VMs).
func (c *Client) snapshot(ctx context.Context) (model.NovaSnapshot, error) {
	incremental := c.incremental()
	var snap model.NovaSnapshot
	var allocs map[string]map[string]int
	migs := make([][]model.Migration, len(inProgressStatuses))
	serverMark := ""
	full := true
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { snap.Services, err = c.ComputeServices(gctx, ""); return })
	g.Go(func() (err error) { snap.Hypervisors, allocs, err = c.hypervisors(gctx); return })
	g.Go(func() error { snap.ServerGroups = c.ServerGroups(gctx); return nil })
	var ports map[string]string
	g.Go(func() error { ports = c.directPorts(gctx); return nil })
	if incremental {
		g.Go(func() (err error) {
			var ms []model.Migration
			snap.VMs, ms, full, err = c.changed(gctx)
			migs[0] = ms
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return model.NovaSnapshot{}, err
	}
	if !incremental || !full { // the first read, the safety net, or changes-since refused
		g, gctx = errgroup.WithContext(ctx)
		g.Go(func() error {
			snap.VMs = nil
			return c.eachServer(gctx, servers.ListOpts{AllTenants: true, Limit: c.pageSize}, func(s wireServer) {
				snap.VMs = append(snap.VMs, s.model())
				if later(s.Updated, serverMark) {
					serverMark = s.Updated
				}
			})
		})
		for i, st := range inProgressStatuses {
			g.Go(func() (err error) {
				migs[i], err = c.Migrations(gctx, MigrationFilter{Status: st, Type: "live-migration"})
				return
			})
		}
		if err := g.Wait(); err != nil {
			return model.NovaSnapshot{}, err
		}
	}
	for _, m := range migs {
		snap.Migrations = append(snap.Migrations, m...)
	}
	if !incremental || !full {
		c.remember(snap, serverMark) // before the allocations: the state keeps flavors' sizes
	}
	for i := range snap.VMs {
		allocated(&snap.VMs[i], allocs[snap.VMs[i].ID])
	}
	pinByPorts(snap.VMs, ports)
	return snap, nil
}

// ComputeServices lists nova-compute services, on one host or all.
func (c *Client) ComputeServices(ctx context.Context, host string) ([]model.ComputeService, error) {
	pages, err := services.List(c.compute, services.ListOpts{Binary: "nova-compute", Host: host}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing nova-compute services: %w", describe(err))
	}
	list, err := services.ExtractServices(pages)
	if err != nil {
		return nil, err
	}
	// A service's silence on Nova's own clock: the response's Date less its updated_at (both
	// written by Nova's control plane); drainctl's clock where a proxy dropped the Date.
	now := time.Now()
	if page, ok := pages.(services.ServicePage); ok {
		if d, err := http.ParseTime(page.Header.Get("Date")); err == nil {
			now = d
		}
	}
	out := make([]model.ComputeService, 0, len(list))
	for _, s := range list {
		m := serviceModel(s)
		if !s.UpdatedAt.IsZero() {
			// Date is to the second: a report in the second the answer was made is silent for 0.
			m.Silent = max(0, now.Sub(s.UpdatedAt.Truncate(time.Second)))
		}
		out = append(out, m)
	}
	return out, nil
}

func serviceModel(s services.Service) model.ComputeService {
	return model.ComputeService{
		ID: s.ID, Host: s.Host, Zone: s.Zone,
		Enabled: s.Status == "enabled", DisabledReason: s.DisabledReason,
		Up: s.State == "up", ForcedDown: s.ForcedDown, UpdatedAt: s.UpdatedAt,
	}
}

// Hypervisors lists hypervisors with their servers and their capacity (Placement's, else
// os-hypervisors'), following Nova's pagination links.
func (c *Client) Hypervisors(ctx context.Context) ([]model.Hypervisor, error) {
	hvs, _, err := c.hypervisors(ctx)
	return hvs, err
}

func (c *Client) hypervisors(ctx context.Context) ([]model.Hypervisor, map[string]map[string]int, error) {
	hvs, err := c.listHypervisors(ctx)
	if err != nil {
		return nil, nil, err
	}
	allocs, err := c.withCapacity(ctx, hvs)
	return hvs, allocs, err
}

func (c *Client) listHypervisors(ctx context.Context) ([]model.Hypervisor, error) {
	withServers := true
	opts := hypervisors.ListOpts{WithServers: &withServers}
	if c.pageSize > 0 {
		opts.Limit = &c.pageSize
	}
	q, err := opts.ToHypervisorListQuery()
	if err != nil {
		return nil, err
	}
	hc := c.hypervisorClient()
	// At 2.88+ the capacity fields are gone; below, a hypervisor always reports vcpus > 0.
	capacity := !atLeast(hc.Microversion, "2.88")
	var out []model.Hypervisor
	err = walk(ctx, hc, hc.ServiceURL("os-hypervisors", "detail")+q, "hypervisors_links", func(p *hypervisorsPage) (int, []pageLink) {
		for _, h := range p.Hypervisors {
			out = append(out, h.model(capacity))
		}
		return len(p.Hypervisors), p.Links
	})
	if err != nil {
		return nil, fmt.Errorf("listing hypervisors: %w", describe(err))
	}
	return out, nil
}

// hypervisorClient is the compute client for os-hypervisors, at 2.87 at most: from 2.88 Nova
// asks each hypervisor's nova-compute for its uptime in every detail list and show, an RPC
// call per host (measured on a real Nova: a list blocked past drainctl's API timeout while a
// nova-compute had just died and Nova did not see it down yet; at a thousand hosts, a
// thousand calls per read). 2.87 is the last without it, and has the capacity fields too.
func (c *Client) hypervisorClient() *gophercloud.ServiceClient {
	if !c.atLeast(LastWithHypervisorCapacity) || c.microversion == LastWithHypervisorCapacity {
		return c.compute
	}
	hc := *c.compute
	hc.Microversion = LastWithHypervisorCapacity
	return &hc
}

func (h wireHypervisor) model(capacity bool) model.Hypervisor {
	m := model.Hypervisor{
		ID: string(h.ID), Hostname: h.Hostname, Host: h.Service.Host, Type: h.Type,
		State: h.State, Status: h.Status, CapacityKnown: capacity,
		VCPUs: h.VCPUs, VCPUsUsed: h.VCPUsUsed,
		MemoryMB: int64(h.MemoryMB), MemoryMBUsed: int64(h.MemoryMBUsed),
		LocalGB: int64(h.LocalGB), LocalGBUsed: int64(h.LocalGBUsed), RunningVMs: h.RunningVMs,
	}
	for _, s := range h.Servers {
		m.ServerIDs = append(m.ServerIDs, s.UUID)
	}
	return m
}

// Servers lists the servers of every project (all_tenants), on one host or all.
func (c *Client) Servers(ctx context.Context, host string) ([]model.VM, error) {
	var out []model.VM
	began := time.Now()
	if err := c.eachServer(ctx, servers.ListOpts{AllTenants: true, Host: host, Limit: c.pageSize}, func(s wireServer) {
		out = append(out, s.model())
	}); err != nil {
		return nil, err
	}
	if host != "" && len(out) > 0 { // one host's servers (a step's read): their ports too
		ids := make([]string, len(out))
		for i, vm := range out {
			ids[i] = vm.ID
		}
		pinByPorts(out, c.directPorts(ctx, ids...))
	}
	if host != "" {
		c.watch.keep(host, out, began) // the VMs a step acts on next: their reads come from the watch
	}
	return out, nil
}

// eachServer walks the pages of a servers list. A server without its host field is refused:
// Nova hides it from users its policy does not let see it, and a VM whose host is unknown
// would make its node look empty.
func (c *Client) eachServer(ctx context.Context, o servers.ListOpts, each func(wireServer)) error {
	q, err := o.ToServerListQuery()
	if err != nil {
		return err
	}
	hidden := false
	err = walk(ctx, c.compute, c.compute.ServiceURL("servers", "detail")+q, "servers_links", func(p *serversPage) (int, []pageLink) {
		for _, s := range p.Servers {
			hidden = hidden || !s.Host.Shown
			each(s)
		}
		return len(p.Servers), p.Links
	})
	if err != nil {
		return fmt.Errorf("listing servers: %w", describe(err))
	}
	if hidden {
		return ErrHostsHidden
	}
	return nil
}

// ErrHostsHidden: Nova shows the servers without their hosts, so which VMs each node holds is
// unknown.
var ErrHostsHidden = errors.New(
	"Nova does not show the servers' hosts to this user: its policy lacks os_compute_api:os-extended-server-attributes (see " +
		"deploy/README.md for the rules drainctl needs)",
)

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (s wireServer) model() model.VM {
	vm := model.VM{
		ID: s.ID, Name: s.Name, Host: s.Host.Value, Status: s.Status, TaskState: s.TaskState,
		Phase: phaseOf[s.Status], Task: taskOf(s.TaskState),
		VMState: s.VMState, ProjectID: s.TenantID,
	}
	if s.Locked != nil {
		vm.Locked = *s.Locked
	}
	// From 2.47 the flavor is embedded: original_name, ram, vcpus, disk.
	vm.Flavor = s.Flavor.OriginalName
	if vm.Flavor == "" {
		vm.Flavor = s.Flavor.ID
	}
	vm.RAMMB = int64(s.Flavor.RAM)
	vm.VCPUs = int(s.Flavor.VCPUs)
	vm.DiskGB = int64(s.Flavor.Disk + s.Flavor.Ephemeral)
	if s.Fault != nil {
		vm.Fault = s.Fault.Message
	}
	vm.Pinned = pinning(s.Flavor.ExtraSpecs)
	vm.Zone = s.Zone
	vm.VolumeBacked = string(s.Image) == `""`
	var image struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(s.Image, &image) == nil {
		vm.Image = image.ID
	}
	vm.PolicyAsked = s.Metadata[model.VMPolicyKey]
	vm.PriorityAsked = s.Metadata[model.RecoveryPriorityKey]
	vm.GroupAsked, vm.MaxDisruptedAsked = s.Metadata[model.GroupKey], s.Metadata[model.MaxDisruptedKey]
	vm.Notice, vm.MoveNowAsked = s.Metadata[model.NoticeKey], s.Metadata[model.MoveNowKey]
	vm.WindowAsked = s.Metadata[model.WindowKey]
	vm.Updated, _ = time.Parse(time.RFC3339, s.Updated)
	return vm
}

// directPorts maps each server (of ids; every server when none are given) to its port bound
// to the host's hardware ("port ID binding:vnic_type=direct"): an SR-IOV VF or a whole NIC
// passed through, which Nova cannot live-migrate. nil without Neutron in the catalog or when
// it cannot be read: the plan then does not know, and Nova's pre-check still refuses.
func (c *Client) directPorts(ctx context.Context, ids ...string) map[string]string {
	if c.network == nil {
		return nil
	}
	q := url.Values{"binding:vnic_type": {"direct", "direct-physical"}, "fields": {"id", "device_id", "binding:vnic_type"}}
	if len(ids) > 0 {
		q["device_id"] = ids
	}
	var body struct {
		Ports []struct {
			ID       string `json:"id"`
			DeviceID string `json:"device_id"`
			VnicType string `json:"binding:vnic_type"`
		} `json:"ports"`
	}
	if _, err := c.network.Get(ctx, c.network.ServiceURL("ports")+"?"+q.Encode(), &body, nil); err != nil {
		return nil
	}
	out := make(map[string]string, len(body.Ports))
	for _, p := range body.Ports {
		if p.DeviceID != "" && out[p.DeviceID] == "" {
			out[p.DeviceID] = "port " + p.ID + " binding:vnic_type=" + p.VnicType
		}
	}
	return out
}

// pinByPorts marks the VMs that a direct port ties to their host (the flavor's pinning, when
// it has one, is named first).
func pinByPorts(vms []model.VM, ports map[string]string) {
	for i := range vms {
		if p := ports[vms[i].ID]; p != "" && vms[i].Pinned == "" {
			vms[i].Pinned = p
		}
	}
}

// ServerGroups lists every project's server groups with their members (GET
// /os-server-groups?all_projects=True, offset-paged), for the placement rules of the plan and
// the ranking. nil when they cannot be read (a policy that does not let this user list
// them): the plan then counts every host as legal, and Nova's scheduler still enforces them.
func (c *Client) ServerGroups(ctx context.Context) []model.ServerGroup {
	const page = 1000
	var out []model.ServerGroup
	for offset := 0; ; offset += page {
		var body struct {
			Groups []struct {
				ID       string   `json:"id"`
				Name     string   `json:"name"`
				Policy   string   `json:"policy"`   // 2.64+
				Policies []string `json:"policies"` // before 2.64
				Members  []string `json:"members"`
			} `json:"server_groups"`
		}
		u := c.compute.ServiceURL("os-server-groups") + fmt.Sprintf("?all_projects=True&limit=%d&offset=%d", page, offset)
		if _, err := c.compute.Get(ctx, u, &body, nil); err != nil {
			return nil
		}
		for _, g := range body.Groups {
			policy := g.Policy
			if policy == "" && len(g.Policies) > 0 {
				policy = g.Policies[0]
			}
			out = append(out, model.ServerGroup{ID: g.ID, Name: g.Name, Policy: policy, Members: g.Members})
		}
		if len(body.Groups) < page {
			return out
		}
	}
}

// pinning is the first (in key order) extra spec that ties a flavor's VMs to their host's
// hardware, as "key=value"; "" when none does.
func pinning(specs map[string]string) string {
	var keys []string
	for k, v := range specs {
		if model.PinningSpec(k, v) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	return keys[0] + "=" + specs[keys[0]]
}
