package nova

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/shared"
	"golang.org/x/sync/errgroup"
)

// The moves under way in the whole cloud, for every question a step asks of them (the caps,
// a node's arrivals, its cold moves to adopt, a host's live migrations, a move's poll): one
// process-wide list of the records that have not ended, kept by reading what changed.
// os-migrations filters on one status per call, so asking by status costs ten calls a
// question; here a question costs the next read of what changed (2.59+): the records changed
// since the newest change seen (changes-since), and the records made since the newest seen
// (the newest page, by ID: Nova leaves a new record's updated_at empty until its first change,
// so changes-since does not show it). That read is shared by every question asked while it
// waits, and each begins after its question was asked: what a cap counts is the world at that
// moment. Every unendedEvery, and below 2.59, the records are read by status again.

// unendedStatuses are every status a record has before it ends, by status: the union of
// the live migration's, the cold one's (moving and awaiting its confirm) and the evacuation's.
var unendedStatuses = func() []string {
	var out []string
	for _, sts := range [][]string{inProgressStatuses, coldMoving, coldWaiting, evacuating} {
		for _, st := range sts {
			if !slices.Contains(out, st) {
				out = append(out, st)
			}
		}
	}
	return out
}()

// fullMarkMargin is how long before the Date of the read by status the next read of what
// changed begins: Nova's Date is to the second, and its updated_at rounded to one.
const fullMarkMargin = 2 * time.Second

// unendedEvery is how long the list is kept by reading what changed before it is read by
// status again: a safety net for a change a read of what changed could miss.
const unendedEvery = 2 * time.Minute

// endedFor is how long a record seen ending is kept for a move's poll to find (a poll reads
// every few seconds; one that finds nothing reads the server's own records).
const endedFor = time.Minute

// movesGap is the least time between two reads of the list: every question asked within it
// shares the next read (begun after it was asked), so a fleet's moves cost a read a gap,
// not one a question; a question waits at most that long more.
const movesGap = 100 * time.Millisecond

// moves is the list of unended records and how it was last read.
type moves struct {
	calls *shared.Calls[movesRead] // readMoves, shared and paced (made in Connect)

	mu      sync.Mutex
	unended map[int64]model.Migration
	ended   map[int64]endedMove // seen ending by a read of what changed, kept endedFor
	mark    time.Time           // reads of what changed ask from it (Nova's clock; see readMoves)
	newest  int64               // the newest record's ID seen
	fullAt  time.Time           // the last read by status (local clock); zero: none yet
}

// movesRead is one read's list, and the newest record's ID in the cloud then (0 below 2.59:
// not known).
type movesRead struct {
	list   []model.Migration
	newest int64
}

// endedMove is a record seen ending, and when (the local clock).
type endedMove struct {
	model.Migration
	seen time.Time
}

// RecentMoves returns every record not ended yet and those seen ending in the last minute,
// newest first, read (or read again for what changed) within fresh before the call (0: after
// it): what every move's poll reads at once, one call for the moves of every node in flight.
// The list is shared by every caller of that read: read it, never change it.
func (c *Client) RecentMoves(ctx context.Context, fresh time.Duration) ([]model.Migration, error) {
	read, err := c.moves.calls.DoFresh(ctx, fresh)
	return read.list, err
}

// readMoves is one read: by status when due (or below 2.59), else what changed since the
// newest change seen, and the records still accepted.
func (c *Client) readMoves(ctx context.Context) (movesRead, error) {
	m := &c.moves
	m.mu.Lock()
	full := m.unended == nil || time.Since(m.fullAt) > unendedEvery || !c.atLeast("2.59")
	mark, newest := m.mark, m.newest
	m.mu.Unlock()
	if full {
		began := time.Now()
		// The newest record first: its answer's Date, less a margin, is where the next read of
		// what changed begins. The reads by status take a while, and a record seen by an
		// early one may change before a later one shows a newer change: the newest updated_at
		// they show would pass over it.
		var newest []model.Migration
		var date time.Time
		if c.atLeast("2.59") {
			var err error
			if newest, date, err = c.migrationsDated(ctx, MigrationFilter{Limit: 1}); err != nil {
				return movesRead{}, err
			}
		}
		all, err := c.withStatuses(ctx, "", "", unendedStatuses)
		if err != nil {
			return movesRead{}, err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.unended, m.ended, m.fullAt = map[int64]model.Migration{}, map[int64]endedMove{}, began
		m.keep(newest)
		m.keep(all)
		m.mark = date.Add(-fullMarkMargin)
		if date.IsZero() { // no Date: the newest change among them, as before
			m.mark = newestChange(slices.Concat(newest, all))
		}
		return m.read(c.atLeast("2.59")), nil
	}
	// The two reads at once: they ask apart (by ID, by change), and a question waits for both.
	var made, changed []model.Migration
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { made, err = c.madeSince(gctx, newest); return })
	// From the newest change seen, itself included (Nova compares updated_at >= it, to the
	// second it stores): a change committed a moment after a newer one, in the same second, is
	// read too; one in an earlier second, at the next read by status. A margin before it cost
	// every read a second of the cloud's changes (at 1,000 nodes, 3× a node's Nova bytes).
	since := ""
	if !mark.IsZero() {
		since = mark.Format("2006-01-02T15:04:05.999999")
	}
	g.Go(func() (err error) { changed, err = c.Migrations(gctx, MigrationFilter{ChangesSince: since}); return })
	if err := g.Wait(); errors.Is(err, errPagesEndless) {
		m.mu.Lock()
		m.fullAt = time.Time{} // read by status instead
		m.mu.Unlock()
		return c.readMoves(ctx)
	} else if err != nil {
		return movesRead{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keep(newerOf(made, changed))
	// The mark moves by what changed only: the newest pages were read at once with it, maybe
	// later, and a change they show is newer than what it saw, not than every change since.
	if t := newestChange(changed); t.After(m.mark) {
		m.mark = t
	}
	return m.read(true), nil
}

// newestChange is the newest updated_at among recs (zero: none).
func newestChange(recs []model.Migration) time.Time {
	var t time.Time
	for _, r := range recs {
		if r.UpdatedAt.After(t) {
			t = r.UpdatedAt
		}
	}
	return t
}

// newerOf is the records of both reads, each as the newer of the two says it (they ran at
// once): an ended one over one still under way (a record never comes back from its end),
// then the later change.
func newerOf(a, b []model.Migration) []model.Migration {
	byID := map[int64]model.Migration{}
	for _, r := range slices.Concat(a, b) {
		was, ok := byID[r.ID]
		if !ok || r.Status.Final() && !was.Status.Final() || r.Status.Final() == was.Status.Final() && r.UpdatedAt.After(was.UpdatedAt) {
			byID[r.ID] = r
		}
	}
	out := make([]model.Migration, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	return out
}

// read is the list as it is now; newestKnown: the newest record was read (2.59+). Called
// with mu.
func (m *moves) read(newestKnown bool) movesRead {
	r := movesRead{list: m.list()}
	if newestKnown {
		r.newest = m.newest
	}
	return r
}

// madeSince reads the records made after the one with ID newest: the newest pages, until a
// page reaches it. The whole first page is kept: a record given an ID a moment before the
// newest seen, but committed after it was read, is in it. Pages that do not go back (a
// marker ignored) or more than madePages of them: errPagesEndless.
func (c *Client) madeSince(ctx context.Context, newest int64) ([]model.Migration, error) {
	var out []model.Migration
	marker, last := "", int64(-1)
	for range madePages {
		page, err := c.Migrations(ctx, MigrationFilter{Limit: madePage, Marker: marker})
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < madePage || page[len(page)-1].ID <= newest || page[len(page)-1].UUID == "" {
			return out, nil
		}
		if last >= 0 && page[len(page)-1].ID >= last {
			return nil, errPagesEndless
		}
		marker, last = page[len(page)-1].UUID, page[len(page)-1].ID
	}
	return nil, errPagesEndless
}

// madePages bounds the pages of records made between two reads (a gap apart: a few, even at
// a fleet's pace); past it, the list is read by status.
const madePages = 50

// errPagesEndless: the newest pages did not reach the newest record seen.
var errPagesEndless = errors.New("os-migrations pages did not reach the newest record seen")

// madePage is the page of newest records read for those made since the last read: the moves
// made between two reads fit in one (more: the next page); a page is bytes whether its
// records are new or not (a page of 100 was 8× a campaign node's Nova bytes).
const madePage = 5

// keep merges records read into the list: an unended one is kept (as it is now), an ended
// one leaves it. Called with mu.
func (m *moves) keep(recs []model.Migration) {
	for _, r := range recs {
		if r.Status.Final() {
			delete(m.unended, r.ID)
			seen := time.Now()
			if was, ok := m.ended[r.ID]; ok {
				seen = was.seen
			}
			m.ended[r.ID] = endedMove{r, seen}
		} else {
			m.unended[r.ID] = r
		}
		m.newest = max(m.newest, r.ID)
	}
}

// list is the unended records and those seen ending lately, newest first. Called with mu.
func (m *moves) list() []model.Migration {
	out := make([]model.Migration, 0, len(m.unended)+len(m.ended))
	for _, r := range m.unended {
		out = append(out, r)
	}
	for id, r := range m.ended {
		if time.Since(r.seen) > endedFor {
			delete(m.ended, id)
			continue
		}
		out = append(out, r.Migration)
	}
	slices.SortFunc(out, func(a, b model.Migration) int { return cmp.Compare(b.ID, a.ID) })
	return out
}

// unendedFrom keeps the records from host ("": every host) whose type is in statuses, in one
// of its statuses there (none of them an end: the records seen ending are left out), from a
// read begun within fresh before the call (0: after it); and the newest record's ID then.
func (c *Client) unendedFrom(ctx context.Context, host string, statuses map[string][]string, fresh time.Duration) (
	[]model.Migration, int64, error,
) {
	read, err := c.moves.calls.DoFresh(ctx, fresh)
	if err != nil {
		return nil, 0, err
	}
	var out []model.Migration
	for _, r := range read.list {
		if host != "" && r.SourceCompute != host {
			continue
		}
		if slices.ContainsFunc(statuses[r.Type], func(st string) bool { return MigrationStatus(st) == r.Status }) {
			out = append(out, r)
		}
	}
	return out, read.newest, nil
}
