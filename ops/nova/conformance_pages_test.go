package nova_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
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
		_, before, err := cl.MovingFrom(ctx, "", 0) // read by status: what follows is read by the newest pages
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

// The two reads of the moves under way run at once: what changed, and the newest pages. Only
// the read of what changed moves the mark the next one asks from: a record that changed after
// that read, and is not on the newest pages (older than a page of records), is read as changed
// the next time even when a newer record on those pages changed later still. The newest pages'
// changes are later than what the read of what changed saw, not than every change.
func TestConformanceAChangeBesideTheNewestPagesIsReadNextTime(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		newestPage := func(q url.Values) bool {
			return q.Get("limit") == "5" && q.Get("marker") == "" && q.Get("changes-since") == ""
		}
		changeWhileHeld(t, c, 2, newestPage, func(q url.Values) bool { return q.Get("changes-since") != "" })
	})
}

// The read by status takes ten calls: a record one of them showed may end before the last
// one, while a newer record changes later still. The next read of what changed begins before
// the read by status did (on Nova's clock), and sees that end.
func TestConformanceAChangeDuringTheReadByStatusIsReadNextTime(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		last := func(q url.Values) bool { return q.Get("status") == "reverting" }
		changeWhileHeld(t, c, 0, last, func(q url.Values) bool { return q.Get("status") == "finished" })
	})
}

// changeWhileHeld holds the os-migrations read held picks, in a read of the moves under way
// made after reads before it, until an older record (a cold move waiting for its confirm, not
// on the newest page) has ended and then a newer record changed; it begins to hold once the
// read after picks has answered. The next read must show the older record ended.
func changeWhileHeld(t *testing.T, c *novatest.Cloud, reads int, held, after func(url.Values) bool) {
	var armed atomic.Bool
	answered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cl := drainctlClientWith(t, c, nova.Options{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		q := r.URL.Query()
		if !armed.Load() || !strings.HasSuffix(r.URL.Path, "/os-migrations") {
			return http.DefaultTransport.RoundTrip(r)
		}
		if held(q) {
			<-release
		}
		resp, err := http.DefaultTransport.RoundTrip(r)
		if after(q) {
			once.Do(func() { close(answered) })
		}
		return resp, err
	})})
	ctx := context.Background()
	cold := c.Boot("held-cold", "compute-1")
	c.Stop(cold)
	asked := c.Clock()
	must(t, cl.ColdMigrate(ctx, cold, ""))
	x := recordOf(t, c, ctx, cl, cold, model.MigrationTypeCold, asked)
	c.Wait(60*time.Second, "VERIFY_RESIZE", func() bool { return serverOf(t, ctx, cl, cold).Phase == model.PhaseAwaitingConfirm })
	live := c.Boot("held-live", "compute-0")
	hosts := []string{"compute-1", "compute-0"}
	move := func(i int) {
		must(t, cl.LiveMigrate(ctx, live, hosts[i%2]))
		c.WaitServer(live, 60*time.Second, "ACTIVE on "+hosts[i%2], func(s novatest.Server) bool {
			return s.Host == hosts[i%2] && s.Status == "ACTIVE" && s.Task() == ""
		})
	}
	for i := range 5 { // a page of newer records: the cold one is not on the newest page
		move(i)
	}
	for range reads {
		_, err := cl.RecentMoves(ctx, 0)
		must(t, err)
	}

	armed.Store(true)
	done := make(chan error, 1)
	go func() { _, err := cl.RecentMoves(ctx, 0); done <- err }()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the read before the held one was not made")
	}
	must(t, cl.ConfirmResize(ctx, cold)) // the old record ends
	c.Wait(60*time.Second, "the cold move confirmed", func() bool {
		ms, err := cl.MigrationsOf(ctx, cold)
		must(t, err)
		return slices.ContainsFunc(ms, func(m model.Migration) bool { return m.ID == x.ID && m.Status.Final() })
	})
	time.Sleep(1100 * time.Millisecond) // Nova stores updated_at to the second
	move(5)                             // a newer record changes later
	close(release)
	must(t, <-done)
	armed.Store(false)

	recent, err := cl.RecentMoves(ctx, 0)
	must(t, err)
	i := slices.IndexFunc(recent, func(m model.Migration) bool { return m.ID == x.ID })
	if i >= 0 && !recent[i].Status.Final() {
		t.Errorf("the cold move's record, confirmed, is listed as %s; want it seen ended (or gone)", recent[i].Status)
	}
}
