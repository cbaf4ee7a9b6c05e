package nova

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/services"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// serviceUpdate is a raw PUT /os-services/{uuid} body. gophercloud's UpdateOpts cannot send
// forced_down=false (omitempty), so drainctl builds the body itself.
type serviceUpdate map[string]any

func (m serviceUpdate) ToServiceUpdateMap() (map[string]any, error) { return m, nil }

// SetServiceEnabled enables or disables a nova-compute service: the one a step read to decide
// (by its ID), or, given its host alone, the host's (read first). A reason is only sent when
// disabling (Nova refuses one with status=enabled).
func (c *Client) SetServiceEnabled(
	ctx context.Context,
	svc model.ComputeService,
	enabled bool,
	reason string,
) (model.ComputeService, error) {
	host := svc.Host
	if svc.ID == "" {
		svcs, err := c.ComputeServices(ctx, host)
		if err != nil {
			return model.ComputeService{}, err
		}
		if len(svcs) == 0 {
			return model.ComputeService{}, fmt.Errorf("no nova-compute service on host %q", host)
		}
		svc = svcs[0]
	}
	body := serviceUpdate{"status": "enabled"}
	if !enabled {
		body = serviceUpdate{"status": "disabled"}
		if reason != "" {
			body["disabled_reason"] = reason
		}
	}
	s, err := services.Update(ctx, c.compute, svc.ID, body).Extract()
	if err != nil {
		verb := "enabling"
		if !enabled {
			verb = "disabling"
		}
		return model.ComputeService{}, fmt.Errorf("%s nova-compute on %s: %w", verb, host, describe(err))
	}
	return serviceModel(*s), nil
}

// liveMigrate is the os-migrateLive body. gophercloud's LiveMigrateOpts has BlockMigration
// as *bool, so it cannot send "auto", which 2.25+ requires (and which lets Nova pick block
// or shared-storage migration per instance).
type liveMigrate struct{ host *string }

func (o liveMigrate) ToLiveMigrateMap() (map[string]any, error) {
	return map[string]any{"os-migrateLive": map[string]any{"host": o.host, "block_migration": "auto"}}, nil
}

// LiveMigrate asks Nova to live-migrate a server. An empty host lets the scheduler choose.
// Nova answers 202 even when no host can take it: failure is learned by polling.
func (c *Client) LiveMigrate(ctx context.Context, id, host string) error {
	var h *string
	if host != "" {
		h = &host
	}
	r := servers.LiveMigrate(ctx, c.compute, id, liveMigrate{h})
	if err := r.ExtractErr(); err != nil {
		err = fmt.Errorf("live-migrating server %s: %w", id, describe(err))
		if cannotLive(err.Error()) {
			return cannotLiveError{err}
		}
		return err
	}
	c.requests.Store(id, r.Header.Get("X-Openstack-Request-Id"))
	return nil
}

// ActionRequest is the request ID Nova answered this client's last move of the server with
// (live or cold): the one its instance action keeps (openstack server event list). "" when
// none was asked here.
func (c *Client) ActionRequest(id string) string {
	if v, ok := c.requests.Load(id); ok {
		return v.(string)
	}
	return ""
}

// cannotLive reads Nova's words for a server that cannot move live at all: its API refused
// the request, or the conductor's pre-check failed (Nova: "Migration pre-check error: …",
// "… cannot be live-migrated").
func cannotLive(msg string) bool {
	return strings.Contains(msg, "pre-check") || strings.Contains(msg, "cannot be live-migrated")
}

// noValidHost: Nova's scheduler found no host (NoValidHost, as its fault says it).
func noValidHost(msg string) bool { return strings.Contains(msg, "No valid host") }

// cannotLiveError is Nova's refusal, as it said it, that is also ops.ErrCannotMoveLive.
type cannotLiveError struct{ err error }

func (e cannotLiveError) Error() string        { return e.err.Error() }
func (e cannotLiveError) Unwrap() error        { return e.err }
func (e cannotLiveError) Is(target error) bool { return target == ops.ErrCannotMoveLive }

// ColdMigrate asks Nova to cold-migrate a server (the migrate action): it is stopped if it
// runs, moved, and waits in VERIFY_RESIZE for ConfirmResize. A host needs 2.56; "" lets the
// scheduler choose. Nova answers 202 and the rest is learned by polling the server.
func (c *Client) ColdMigrate(ctx context.Context, id, host string) error {
	var body map[string]any
	switch {
	case host != "" && c.atLeast("2.56"):
		body = map[string]any{"migrate": map[string]any{"host": host}}
	default:
		body = map[string]any{"migrate": nil}
	}
	resp, err := c.compute.Post(ctx, c.compute.ServiceURL("servers", id, "action"), body, nil,
		&gophercloud.RequestOpts{OkCodes: []int{202}})
	if err != nil {
		return fmt.Errorf("cold-migrating server %s: %w", id, describe(err))
	}
	c.requests.Store(id, resp.Header.Get("X-Openstack-Request-Id"))
	return nil
}

// ConfirmResize ends a cold migration that waits in VERIFY_RESIZE: the source's copy goes.
func (c *Client) ConfirmResize(ctx context.Context, id string) error {
	if _, err := c.compute.Post(ctx, c.compute.ServiceURL("servers", id, "action"), map[string]any{"confirmResize": nil}, nil,
		&gophercloud.RequestOpts{OkCodes: []int{202, 204}}); err != nil {
		return fmt.Errorf("confirming the migration of server %s: %w", id, describe(err))
	}
	return nil
}

// RevertResize undoes a cold migration that waits in VERIFY_RESIZE: the server goes back to
// its source host, as it was.
func (c *Client) RevertResize(ctx context.Context, id string) error {
	if _, err := c.compute.Post(ctx, c.compute.ServiceURL("servers", id, "action"), map[string]any{"revertResize": nil}, nil,
		&gophercloud.RequestOpts{OkCodes: []int{202}}); err != nil {
		return fmt.Errorf("reverting the migration of server %s: %w", id, describe(err))
	}
	return nil
}

// ColdFrom lists the cold migrations from host that have not ended: moving, or waiting in
// VERIFY_RESIZE for their confirm ("finished"); read within fresh before the call (0: after it).
func (c *Client) ColdFrom(ctx context.Context, host string, fresh time.Duration) ([]model.Migration, error) {
	ms, _, err := c.unendedFrom(ctx, host, map[string][]string{model.MigrationTypeCold: append(coldMoving, coldWaiting...)}, fresh)
	return ms, err
}

// MovingFrom lists every move from host ("" : every host) that loads its destination now:
// live migrations not finished, cold migrations moving (not those waiting for a confirm),
// evacuations rebuilding; read within fresh before the call (0: after it). newest is the
// newest record's ID in the cloud at that read (0: not known, below 2.59).
func (c *Client) MovingFrom(ctx context.Context, host string, fresh time.Duration) (moving []model.Migration, newest int64, err error) {
	return c.unendedFrom(ctx, host, map[string][]string{
		model.MigrationTypeLive: inProgressStatuses, model.MigrationTypeCold: coldMoving, model.MigrationTypeEvacuation: evacuating,
	}, fresh)
}

// A cold migration's statuses while it moves, then while it waits to be confirmed or reverted.
var (
	coldMoving  = []string{"pre-migrating", "migrating", "post-migrating"}
	coldWaiting = []string{"finished", "confirming", "reverting"}
)

// withStatuses lists the migrations of one type from host ("" : every host) in any of the
// statuses: os-migrations filters on one status per call, so one call per status.
func (c *Client) withStatuses(ctx context.Context, host, typ string, statuses []string) ([]model.Migration, error) {
	var out []model.Migration
	for _, st := range statuses {
		ms, err := c.Migrations(ctx, MigrationFilter{Source: host, Status: st, Type: typ})
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// ServerMigrations lists a server's in-progress live migrations (GET /servers/{id}/migrations):
// queued, preparing, running. Empty before and after; an empty list is not success.
func (c *Client) ServerMigrations(ctx context.Context, id string) ([]model.Migration, error) {
	var body struct {
		Migrations []wireMigration `json:"migrations"`
	}
	if _, err := c.compute.Get(ctx, c.compute.ServiceURL("servers", id, "migrations"), &body, nil); err != nil {
		return nil, fmt.Errorf("reading migrations of server %s: %w", id, describe(err))
	}
	out := make([]model.Migration, 0, len(body.Migrations))
	for _, w := range body.Migrations {
		if w.ServerUUID == "" {
			w.ServerUUID = id
		}
		out = append(out, w.model())
	}
	return out, nil
}

// ForceComplete asks a running live migration to finish now (pausing the VM briefly).
func (c *Client) ForceComplete(ctx context.Context, id string, migrationID int64) error {
	_, err := c.compute.Post(ctx, c.compute.ServiceURL("servers", id, "migrations", strconv.FormatInt(migrationID, 10), "action"),
		map[string]any{"force_complete": nil}, nil, &gophercloud.RequestOpts{OkCodes: []int{202}})
	if err != nil {
		return fmt.Errorf("force-completing migration %d of server %s: %w", migrationID, id, describe(err))
	}
	return nil
}

// AbortMigration cancels an in-progress live migration (queued/preparing need 2.65).
func (c *Client) AbortMigration(ctx context.Context, id string, migrationID int64) error {
	_, err := c.compute.Delete(ctx, c.compute.ServiceURL("servers", id, "migrations", strconv.FormatInt(migrationID, 10)),
		&gophercloud.RequestOpts{OkCodes: []int{202}})
	if err != nil {
		return fmt.Errorf("aborting migration %d of server %s: %w", migrationID, id, describe(err))
	}
	return nil
}

// instanceActions are Nova's names of the instance actions that move a server, by method.
var instanceActions = map[model.MoveMethod]string{
	model.MoveLive:    "live-migration",
	model.MoveCold:    "migrate",
	model.MoveRebuild: "evacuate",
}

// LastActionError returns the message of the failed event of the server's most recent move
// by method (its instance action: live-migration, migrate, evacuate), or "" when it did not fail.
func (c *Client) LastActionError(ctx context.Context, id string, method model.MoveMethod) (ops.ActionFailure, error) {
	msg, err := c.lastActionError(ctx, id, instanceActions[method])
	return ops.ActionFailure{Message: msg, CannotLive: cannotLive(msg), NoValidHost: noValidHost(msg)}, err
}

func (c *Client) lastActionError(ctx context.Context, id, action string) (string, error) {
	var list struct {
		Actions []struct {
			Action    string `json:"action"`
			RequestID string `json:"request_id"`
			Message   string `json:"message"`
		} `json:"instanceActions"`
	}
	if _, err := c.compute.Get(ctx, c.compute.ServiceURL("servers", id, "os-instance-actions"), &list, nil); err != nil {
		return "", fmt.Errorf("reading actions of server %s: %w", id, describe(err))
	}
	for _, a := range list.Actions { // newest first
		if a.Action != action {
			continue
		}
		var detail struct {
			Action struct {
				Message string `json:"message"`
				Events  []struct {
					Event   string `json:"event"`
					Result  string `json:"result"`
					Details string `json:"details"`
				} `json:"events"`
			} `json:"instanceAction"`
		}
		if _, err := c.compute.Get(ctx, c.compute.ServiceURL("servers", id, "os-instance-actions", a.RequestID), &detail, nil); err != nil {
			return "", fmt.Errorf("reading action %s of server %s: %w", a.RequestID, id, describe(err))
		}
		for _, e := range detail.Action.Events {
			if e.Result == "Error" {
				if e.Details != "" {
					return e.Details, nil
				}
				return e.Event + " failed", nil
			}
		}
		if detail.Action.Message != "" {
			return detail.Action.Message, nil
		}
		return "", nil
	}
	return "", nil
}

// MigrationsOf lists a server's migrations, newest first.
func (c *Client) MigrationsOf(ctx context.Context, id string) ([]model.Migration, error) {
	return c.Migrations(ctx, MigrationFilter{InstanceID: id})
}

// RecentLiveMigrations are the newest n live migrations that completed, for the cloud's
// measured migration rate.
func (c *Client) RecentLiveMigrations(ctx context.Context, n int) ([]model.Migration, error) {
	return c.Migrations(ctx, MigrationFilter{Status: "completed", Type: "live-migration", Limit: n})
}

// InProgressFrom lists the live migrations leaving host that have not finished.
func (c *Client) InProgressFrom(ctx context.Context, host string) ([]model.Migration, error) {
	return c.liveFrom(ctx, host, 0)
}

// liveFrom lists the live migrations leaving host not finished, read within fresh before the
// call (0: after it).
func (c *Client) liveFrom(ctx context.Context, host string, fresh time.Duration) ([]model.Migration, error) {
	ms, _, err := c.unendedFrom(ctx, host, map[string][]string{model.MigrationTypeLive: inProgressStatuses}, fresh)
	return ms, err
}

var _ ops.Nova = (*Client)(nil)
