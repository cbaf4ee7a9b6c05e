package nova

// os-migrations: the records of every move Nova made, read by instance, host or status.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/drainctl/drainctl/model"
)

// MigrationFilter selects os-migrations records.
type MigrationFilter struct {
	InstanceID string
	Host       string // source or destination
	Source     string
	Status     string
	Type       string // live-migration, migration, resize, evacuation
	// ChangesSince: the records updated at or after it (2.59+), Nova's own time format.
	ChangesSince string
	// Limit: the newest this many only (one page, 2.59+); 0: all. Marker: the page after
	// this record's (its uuid).
	Limit  int
	Marker string
}

// wireMigration is an os-migrations or server-migrations record as Nova sends it.
type wireMigration struct {
	ID              int64  `json:"id"`
	UUID            string `json:"uuid"`
	InstanceUUID    string `json:"instance_uuid"`
	ServerUUID      string `json:"server_uuid"`
	MigrationType   string `json:"migration_type"`
	Status          string `json:"status"`
	SourceCompute   string `json:"source_compute"`
	DestCompute     string `json:"dest_compute"`
	MemoryTotal     *int64 `json:"memory_total_bytes"`
	MemoryProcessed *int64 `json:"memory_processed_bytes"`
	MemoryRemaining *int64 `json:"memory_remaining_bytes"`
	DiskTotal       *int64 `json:"disk_total_bytes"`
	DiskProcessed   *int64 `json:"disk_processed_bytes"`
	DiskRemaining   *int64 `json:"disk_remaining_bytes"`
	CreatedAt       string `json:"created_at"`
	UpdatedAt       string `json:"updated_at"`
}

// novaTime reads Nova's "2026-11-21T04:57:00.000000" (UTC, no zone).
func novaTime(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05.999999", s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func (w wireMigration) model() model.Migration {
	inst := w.InstanceUUID
	if inst == "" {
		inst = w.ServerUUID
	}
	typ := w.MigrationType
	if typ == "" {
		typ = "live-migration" // server migrations are always live
	}
	m := model.Migration{ID: w.ID, UUID: w.UUID, InstanceID: inst, Type: typ, Status: MigrationStatus(w.Status),
		SourceCompute: w.SourceCompute, DestCompute: w.DestCompute,
		MemoryTotal: w.MemoryTotal, MemoryProcessed: w.MemoryProcessed, MemoryRemaining: w.MemoryRemaining,
		DiskTotal: w.DiskTotal, DiskProcessed: w.DiskProcessed, DiskRemaining: w.DiskRemaining,
		UpdatedAt: novaTime(w.UpdatedAt), CreatedAt: novaTime(w.CreatedAt)}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = novaTime(w.CreatedAt) // null at accepted
	}
	return m
}

// Migrations lists os-migrations records, newest first, following marker pagination
// (gophercloud's migrations pager stops after the first page).
func (c *Client) Migrations(ctx context.Context, f MigrationFilter) ([]model.Migration, error) {
	out, _, err := c.migrationsDated(ctx, f)
	return out, err
}

// migrationsDated is Migrations, and the Date of Nova's answer to the first page (zero when it
// gave none): Nova's clock when the list began.
func (c *Client) migrationsDated(ctx context.Context, f MigrationFilter) ([]model.Migration, time.Time, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("instance_uuid", f.InstanceID)
	set("host", f.Host)
	set("source_compute", f.Source)
	set("status", f.Status)
	set("migration_type", f.Type)
	set("changes-since", f.ChangesSince)
	set("marker", f.Marker)
	paged := c.atLeast("2.59")
	if paged && c.pageSize > 0 {
		q.Set("limit", strconv.Itoa(c.pageSize))
	}
	if paged && f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out []model.Migration
	var date time.Time
	for {
		var body struct {
			Migrations []wireMigration `json:"migrations"`
		}
		u := c.compute.ServiceURL("os-migrations") + "?" + q.Encode()
		resp, err := c.compute.Get(ctx, u, &body, nil)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("listing migrations: %w", describe(err))
		}
		if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil && date.IsZero() {
			date = d
		}
		for _, w := range body.Migrations {
			out = append(out, w.model())
		}
		// Without an explicit limit Nova still caps a page at osapi_max_limit; a short or
		// empty page is the last one.
		if !paged || f.Limit > 0 || len(body.Migrations) == 0 || (c.pageSize > 0 && len(body.Migrations) < c.pageSize) ||
			(c.pageSize == 0 && len(body.Migrations) < 1000) {
			return out, date, nil
		}
		last := body.Migrations[len(body.Migrations)-1]
		if last.UUID == "" {
			return out, date, nil
		}
		q.Set("marker", last.UUID)
	}
}

// MigrationStatus maps Nova's status words to the one typed status the engine and the views
// use: Nova says "completed", "done" or "confirmed" for a finished migration, and
// "error" or "failed" for one that failed. "finished" is a cold migration that waits in
// VERIFY_RESIZE for its confirm: not done yet. Any other word is kept as it is (an
// in-progress phase: pre-migrating, migrating, confirming, reverting, or a newer Nova's).
func MigrationStatus(s string) model.MigrationStatus {
	switch s {
	case "completed", "done", "confirmed":
		return model.MigrationCompleted
	case "finished":
		return model.MigrationFinished
	case "error", "failed":
		return model.MigrationFailed
	case "cancelled", "aborted":
		return model.MigrationCancelled
	}
	return model.MigrationStatus(s)
}
