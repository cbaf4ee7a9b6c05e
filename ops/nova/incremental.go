package nova

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"golang.org/x/sync/errgroup"

	"github.com/drainctl/drainctl/model"
)

// A refresh reads what changed, not the world. After a full read, the servers are read
// with changes-since (admin, all tenants: the deleted ones come too, as DELETED) and the
// migrations with changes-since (2.59+), from the newest updated_at Nova itself showed (its
// own clock: no skew between drainctl's and Nova's can lose a change). Services, hypervisors
// and server groups are read as before; Placement reads only the providers whose generation
// moved (placement.go). A full read comes back every FullReadEvery as a safety net, when asked
// for (ReadAllNext), and whenever an incremental read cannot be trusted (Nova refuses the
// filter, an older microversion).

// tracked is the Nova side as the last read left it, for the next incremental read.
type tracked struct {
	mu         sync.Mutex
	fullAt     time.Time // the last full read (local clock)
	full       bool      // ReadAllNext: the next read is a full one
	servers    map[string]model.VM
	serverMark string // the newest updated_at among the servers seen, as Nova wrote it
	migrations map[int64]model.Migration
	migMark    time.Time
}

// ReadAllNext makes the next Snapshot a full read (the operator's r).
func (c *Client) ReadAllNext() {
	c.state.mu.Lock()
	c.state.full = true
	c.state.mu.Unlock()
}

// incremental reports whether the next read may be incremental.
func (c *Client) incremental() bool {
	st := &c.state
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.servers != nil && !st.full && c.atLeast("2.59") && time.Since(st.fullAt) < c.fullEvery
}

// remember seeds the state from a full read.
func (c *Client) remember(snap model.NovaSnapshot, serverMark string) {
	st := &c.state
	st.mu.Lock()
	defer st.mu.Unlock()
	st.fullAt, st.full, st.serverMark = time.Now(), false, serverMark
	st.servers = make(map[string]model.VM, len(snap.VMs))
	for _, vm := range snap.VMs {
		st.servers[vm.ID] = vm
	}
	st.migrations = map[int64]model.Migration{}
	st.migMark = time.Time{}
	for _, m := range snap.Migrations {
		st.migrations[m.ID] = m
		if m.UpdatedAt.After(st.migMark) {
			st.migMark = m.UpdatedAt
		}
	}
}

// changed reads what changed since the last read and merges it into the state; false
// when Nova refused the filter (a full read then).
func (c *Client) changed(ctx context.Context) ([]model.VM, []model.Migration, bool, error) {
	st := &c.state
	st.mu.Lock()
	serverMark, migMark := st.serverMark, st.migMark
	st.mu.Unlock()
	var vms []wireServer
	var migs []model.Migration
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return c.eachServer(gctx, servers.ListOpts{AllTenants: true, ChangesSince: serverMark, Limit: c.pageSize},
			func(s wireServer) { vms = append(vms, s) })
	})
	g.Go(func() (err error) {
		since := ""
		if !migMark.IsZero() {
			since = migMark.Format("2006-01-02T15:04:05.999999")
		}
		migs, err = c.Migrations(gctx, MigrationFilter{ChangesSince: since})
		return err
	})
	if err := g.Wait(); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == 400 {
			return nil, nil, false, nil // an old or refused changes-since: read everything
		}
		return nil, nil, false, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, s := range vms {
		if deletedStatus(s.Status) {
			delete(st.servers, s.ID)
		} else {
			st.servers[s.ID] = s.model()
		}
		if later(s.Updated, st.serverMark) {
			st.serverMark = s.Updated
		}
	}
	for _, m := range migs {
		if m.Type == "live-migration" && inProgress(m.Status) {
			st.migrations[m.ID] = m
		} else {
			delete(st.migrations, m.ID)
		}
		if m.UpdatedAt.After(st.migMark) {
			st.migMark = m.UpdatedAt
		}
	}
	outVMs := make([]model.VM, 0, len(st.servers))
	for _, vm := range st.servers {
		outVMs = append(outVMs, vm)
	}
	outMigs := make([]model.Migration, 0, len(st.migrations))
	for _, m := range st.migrations {
		outMigs = append(outMigs, m)
	}
	return outVMs, outMigs, true, nil
}

// later reports whether Nova's timestamp a is after b ("" is before everything).
func later(a, b string) bool {
	ta, err := time.Parse(time.RFC3339, a)
	if err != nil {
		return false
	}
	tb, err := time.Parse(time.RFC3339, b)
	return err != nil || ta.After(tb)
}

func inProgress(s model.MigrationStatus) bool {
	for _, st := range inProgressStatuses {
		if MigrationStatus(st) == s {
			return true
		}
	}
	return false
}
