package nova

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

// The next page is guessed from the raw page when what follows the links key reads as an
// object's members; a server named like the key (its quotes escaped) does not fool it, and
// anything else gives no guess (walk then waits for the decoded links).
func TestLinkIn(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"servers": [{"name": "a"}], "servers_links": [{"href": "http://n/servers?marker=a", "rel": "next"}]}`, "http://n/servers?marker=a"},
		{`{"servers": [{"name": "\"servers_links\""}], "servers_links": [{"href": "http://n/x", "rel": "next"}]}`, "http://n/x"},
		{`{"servers_links": [{"href": "http://n/x", "rel": "next"}], "servers": [{"name": "a"}]}`, "http://n/x"}, // first: the tail is still an object
		{`{"servers": [{"name": "a", "meta": {"servers_links": 1}}], "other": 2}`, ""},
		{`{"servers": [{"name": "a"}]}`, ""},
		{`{"servers": [], "servers_links": [{"href": "http://n/x", "rel": "prev"}]}`, ""},
	} {
		if got := linkIn([]byte(c.body), "servers_links"); got != c.want {
			t.Errorf("linkIn(%s) = %q, want %q", c.body, got, c.want)
		}
	}
}

// A walk ends, with an error, when Nova's paging repeats itself (the same marker again) or
// sends its next link to another host: it neither loops for ever nor carries the token away.
func TestWalkStopsOnRepeatsAndForeignHosts(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		fmt.Fprint(w, `{"servers": []}`)
	}))
	defer other.Close()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		next := "http://" + r.Host + "/servers?marker=a" // the same marker, page after page
		if r.URL.Query().Get("away") != "" {
			next = other.URL + "/servers?marker=b"
		}
		fmt.Fprintf(w, `{"servers": [{"name": "a"}], "servers_links": [{"href": %q, "rel": "next"}]}`, next)
	}))
	defer srv.Close()
	client := &gophercloud.ServiceClient{ProviderClient: &gophercloud.ProviderClient{HTTPClient: *srv.Client()}, Endpoint: srv.URL + "/"}
	type page struct {
		Servers []struct{ Name string } `json:"servers"`
		Links   []pageLink              `json:"servers_links"`
	}
	read := func(p *page) (int, []pageLink) { return len(p.Servers), p.Links }

	err := walk(context.Background(), client, srv.URL+"/servers", "servers_links", read)
	if err == nil || !strings.Contains(err.Error(), "repeats") || calls.Load() > 3 {
		t.Fatalf("a repeating marker: err %v after %d calls", err, calls.Load())
	}
	err = walk(context.Background(), client, srv.URL+"/servers?away=1", "servers_links", read)
	if err == nil || !strings.Contains(err.Error(), "leaves the endpoint") || elsewhere.Load() != 0 {
		t.Fatalf("a foreign next link: err %v, %d requests to the other host", err, elsewhere.Load())
	}
}
