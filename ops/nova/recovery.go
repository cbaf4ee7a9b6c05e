package nova

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/services"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// A dead host, as a real Nova handles it (shared/notes/nova-api.md, "Stopped VMs and dead
// hosts"): its service forced down (2.53+, by the service's UUID), each server evacuated
// (rebuilt by the scheduler on another host), the evacuation records "done" until the host's
// nova-compute starts again and cleans up ("completed"); forcing the service up is refused
// while "done" records remain.

// lastKeepingPowerState: from 2.95 Nova leaves every evacuated server stopped; up to 2.94 a
// server comes back as it was (running, or stopped). drainctl asks at most at this one.
const lastKeepingPowerState = "2.94"

// SetForcedDown forces the host's nova-compute down (a dead machine: Nova lets its servers be
// evacuated at once) or back up. Forcing up while "done" evacuation records remain is
// refused by Nova: that refusal is an *ops.EvacuationsPendingError.
func (c *Client) SetForcedDown(ctx context.Context, host string, down bool) (model.ComputeService, error) {
	svcs, err := c.ComputeServices(ctx, host)
	if err != nil {
		return model.ComputeService{}, err
	}
	if len(svcs) == 0 {
		return model.ComputeService{}, fmt.Errorf("no nova-compute service on host %q", host)
	}
	s, err := services.Update(ctx, c.compute, svcs[0].ID, serviceUpdate{"forced_down": down}).Extract()
	if err != nil {
		err = describe(err)
		var ae *APIError
		if !down && errors.As(err, &ae) && ae.Status == 400 && strings.Contains(ae.Message, "evacuation migration records remain") {
			return model.ComputeService{}, &ops.EvacuationsPendingError{Host: host, Message: ae.Message}
		}
		verb := "forcing up"
		if down {
			verb = "forcing down"
		}
		return model.ComputeService{}, fmt.Errorf("%s nova-compute on %s: %w", verb, host, err)
	}
	return serviceModel(*s), nil
}

// Evacuate asks Nova to rebuild a server of a dead host on another one ("" lets the
// scheduler choose; a host is still checked by it from 2.29). Nova answers 200 and the
// rebuild is learned by polling the server and its evacuation record.
func (c *Client) Evacuate(ctx context.Context, id, host string) error {
	args := map[string]any{}
	if host != "" {
		args["host"] = host
	}
	if !c.atLeast("2.14") {
		args["onSharedStorage"] = false // asked before 2.14; Nova finds out itself since
	}
	sc := c.compute
	if c.atLeast("2.95") {
		at := *c.compute
		at.Microversion = lastKeepingPowerState
		sc = &at
	}
	if _, err := sc.Post(ctx, sc.ServiceURL("servers", id, "action"), map[string]any{"evacuate": args}, nil,
		&gophercloud.RequestOpts{OkCodes: []int{200}}); err != nil {
		return fmt.Errorf("evacuating server %s: %w", id, describe(err))
	}
	return nil
}

// EvacuationsFrom lists the evacuation records of servers from host, newest first, in any
// status: a rerun learns from them which servers were evacuated already.
func (c *Client) EvacuationsFrom(ctx context.Context, host string) ([]model.Migration, error) {
	return c.Migrations(ctx, MigrationFilter{Source: host, Type: "evacuation"})
}

// evacuating: an evacuation's statuses while the server is rebuilt (the caps count these).
var evacuating = []string{"accepted", "pre-migrating", "migrating"}
