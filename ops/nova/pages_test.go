package nova

import "testing"

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
