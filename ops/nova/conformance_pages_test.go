package nova_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// The records made between two reads of the moves under way are read from the newest pages
// back: Nova lists os-migrations newest first, and a page after a marker holds older records.
// More records than a page are read by following the pages, each going back past the last,
// and never by status again (what the guard against pages that never go back falls to).
func TestConformanceNewestPagesGoBack(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		var paged, byStatus atomic.Int64
		cl := drainctlClientWith(t, c, nova.Options{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			if q := r.URL.Query(); strings.HasSuffix(r.URL.Path, "/os-migrations") {
				if q.Get("marker") != "" {
					paged.Add(1)
				}
				if q.Get("status") != "" {
					byStatus.Add(1)
				}
			}
			return http.DefaultTransport.RoundTrip(r)
		})})
		ctx := context.Background()
		vm := c.Boot("pages-live", "compute-0")
		_, before, err := cl.MovingFrom(ctx, "") // read by status: what follows is read by the newest pages
		must(t, err)
		byStatus.Store(0)
		const moves = 7 // more than a page of the newest records (5)
		for i := range moves {
			to := []string{"compute-1", "compute-0"}[i%2]
			must(t, cl.LiveMigrate(ctx, vm, to))
			c.WaitServer(vm, 60*time.Second, "ACTIVE on "+to, func(s novatest.Server) bool {
				return s.Host == to && s.Status == "ACTIVE" && s.Task() == ""
			})
		}
		recent, err := cl.RecentMoves(ctx, 0)
		must(t, err)
		made := 0
		for _, m := range recent {
			if m.ID > before && m.InstanceID == vm {
				made++
			}
		}
		if made != moves {
			t.Errorf("%d of the %d records made since the last read are listed: %+v", made, moves, recent)
		}
		if paged.Load() == 0 {
			t.Errorf("no page after a marker was read: %d records made did not fill a page", moves)
		}
		if n := byStatus.Load(); n != 0 {
			t.Errorf("the list was read by status %d time(s) again: the newest pages did not go back", n)
		}
	})
}
