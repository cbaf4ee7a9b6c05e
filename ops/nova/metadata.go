package nova

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

// SetMetadata sets one key of a server's metadata, the others kept (POST
// /servers/{id}/metadata). Nova refuses it (409) while the server is in a state but active,
// paused, suspended or stopped (a cold move awaiting its confirmation: resized), or has a task
// under way; a value past 255 bytes is 400. An admin may set it on a locked server.
func (c *Client) SetMetadata(ctx context.Context, id, key, value string) error {
	err := servers.UpdateMetadata(ctx, c.compute, id, servers.MetadataOpts{key: value}).Err
	if err != nil {
		return fmt.Errorf("setting %s on server %s: %w", key, id, describe(err))
	}
	return nil
}

// DeleteMetadata removes one key of a server's metadata; a key (or server) already gone is
// not an error. Nova refuses it in the states SetMetadata names.
func (c *Client) DeleteMetadata(ctx context.Context, id, key string) error {
	err := servers.DeleteMetadatum(ctx, c.compute, id, key).ExtractErr()
	if err != nil && !gophercloud.ResponseCodeIs(err, 404) {
		return fmt.Errorf("removing %s from server %s: %w", key, id, describe(err))
	}
	return nil
}
