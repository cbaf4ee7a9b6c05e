package kube_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// A record is written again as this client last wrote it, without reading it first; written
// meanwhile by another process (a colleague's rollback, a second terminal) or deleted, the
// write is refused as stale, read again and made: the last write still wins.
func TestARecordIsWrittenWithoutReadingItFirst(t *testing.T) {
	var reads atomic.Int32
	cfg := kubetest.Config(t)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/configmaps/") {
				reads.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	ours, theirs := kubetest.KubeClient(t, cfg), kubetest.KubeClient(t, kubetest.Config(t))
	ctx, name := kubetest.Ctx(t), "campaign-"+kubetest.Prefix(t)
	saved := func(c *kube.Client, data string) {
		t.Helper()
		if err := c.SaveRecord(ctx, name, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, _, err := theirs.Record(ctx, name)
		if err != nil || string(got) != data {
			t.Fatalf("the record reads %q (%v), want %q", got, err, data)
		}
	}
	saved(ours, "1")
	before := reads.Load()
	saved(ours, "2")
	saved(ours, "3")
	if n := reads.Load() - before; n != 0 {
		t.Errorf("two writes of our own record read it %d time(s) first, want none", n)
	}
	saved(theirs, "written by another process")
	saved(ours, "4") // stale: read again, and ours is the last write
	if err := theirs.DeleteRecord(ctx, name); err != nil {
		t.Fatal(err)
	}
	saved(ours, "5") // deleted meanwhile: made again
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A record is of a kind kube.RecordKinds has (the reference's table of records is made from
// it): one of no kind is refused before anything is written.
func TestARecordOfNoKnownKindIsRefused(t *testing.T) {
	c := kubetest.KubeClient(t, kubetest.Config(t))
	ctx := kubetest.Ctx(t)
	name := "scratch-" + kubetest.Prefix(t)
	err := c.SaveRecord(ctx, name, []byte("{}"))
	if err == nil || !strings.Contains(err.Error(), "kube.RecordKinds") {
		t.Fatalf("a record of kind scratch: %v; want refused, naming the table", err)
	}
	if _, found, err := c.Record(ctx, name); found || err != nil {
		t.Errorf("the refused record was written (found %v, %v)", found, err)
	}
}
