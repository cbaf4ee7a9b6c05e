package nova

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	neturl "net/url"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
)

// Nova's lists are read page by page, following each page's "next" link, and each page is
// decoded once, straight into the few fields drainctl keeps. gophercloud's pagers decode a
// page three times (IsEmpty, then ExtractInto's re-marshal and unmarshal into maps): at
// 50,000 servers that was 13 of the 21 s of a first inventory.

type pageLink struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

func nextLink(links []pageLink) string {
	for _, l := range links {
		if l.Rel == "next" {
			return l.Href
		}
	}
	return ""
}

// walk GETs url and each next page, decoding each into a fresh *P; page returns the
// page's item count and its links (under linksKey in the body). The next page is asked for
// as soon as its link is read off the raw page (Nova writes the links last), so that the
// server prepares page N+1 while page N is decoded here; the decoded links have the last
// word (a guess that differs is dropped).
func walk[P any](ctx context.Context, client *gophercloud.ServiceClient, url, linksKey string, page func(*P) (int, []pageLink)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a guessed page no longer wanted
	type fetched struct {
		url  string
		body []byte
		err  error
	}
	fetch := func(url string) fetched {
		resp, err := client.Request(ctx, "GET", url, &gophercloud.RequestOpts{KeepResponseBody: true, OkCodes: []int{200}})
		if err != nil {
			return fetched{url, nil, err}
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return fetched{url, body, err}
	}
	follow, err := newFollower(url)
	if err != nil {
		return err
	}
	cur := fetch(url)
	for {
		if cur.err != nil {
			return cur.err
		}
		var ahead chan fetched
		if guess := linkIn(cur.body, linksKey); guess != "" && follow.allowed(guess) == nil {
			ahead = make(chan fetched, 1)
			go func() { ahead <- fetch(guess) }()
		}
		var p P
		if err := json.Unmarshal(cur.body, &p); err != nil {
			return fmt.Errorf("decoding %s: %w", cur.url, err)
		}
		n, links := page(&p)
		next := nextLink(links)
		if n == 0 || next == "" {
			return nil
		}
		if err := follow.take(next); err != nil {
			return fmt.Errorf("reading %s: %w", cur.url, err)
		}
		if ahead != nil {
			if f := <-ahead; f.url == next {
				cur = f
				continue
			}
		}
		cur = fetch(next)
	}
}

// linkIn reads the next link off a raw page, when the links are its last member (as Nova
// writes them); "" when it cannot tell.
func linkIn(body []byte, key string) string {
	i := bytes.LastIndex(body, []byte(`"`+key+`"`))
	if i < 0 {
		return ""
	}
	tail := map[string][]pageLink{}
	if json.Unmarshal(append([]byte("{"), body[i:]...), &tail) != nil {
		return ""
	}
	return nextLink(tail[key])
}

// wireServer is a server of GET /servers/detail as drainctl reads it (microversion 2.47+
// embeds the flavor; older ones give its id alone).
type wireServer struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Host      hideable `json:"OS-EXT-SRV-ATTR:host"`
	Status    string   `json:"status"`
	TaskState string   `json:"OS-EXT-STS:task_state"`
	VMState   string   `json:"OS-EXT-STS:vm_state"`
	TenantID  string   `json:"tenant_id"`
	Locked    *bool    `json:"locked"`
	Flavor    struct {
		OriginalName string  `json:"original_name"`
		ID           string  `json:"id"`
		RAM          float64 `json:"ram"`
		VCPUs        float64 `json:"vcpus"`
		Disk         float64 `json:"disk"`
		Ephemeral    float64 `json:"ephemeral"`
		// From 2.47, to those the policy lets read them (admin by default).
		ExtraSpecs map[string]string `json:"extra_specs"`
	} `json:"flavor"`
	Fault *struct {
		Message string `json:"message"`
	} `json:"fault"`
	Zone string `json:"OS-EXT-AZ:availability_zone"`
	// Image is {"id": …} for a server booted from an image, "" for one booted from a volume.
	Image json.RawMessage `json:"image"`
	// Updated is Nova's updated_at: the mark of an incremental read (changes-since).
	Updated string `json:"updated"`
	// Metadata is the server's key/value metadata, its owner's to set (drainctl:maintenance).
	Metadata map[string]string `json:"metadata"`
}

// hideable is a server attribute Nova's policy may hide: absent (hidden from this user) is
// not null (no value: a server the scheduler has not placed yet, or never will, as one left
// in ERROR by no valid host).
type hideable struct {
	Shown bool
	Value string
}

func (h *hideable) UnmarshalJSON(b []byte) error {
	h.Shown = true // called for null too
	if string(b) == "null" {
		h.Value = ""
		return nil
	}
	return json.Unmarshal(b, &h.Value)
}

type serversPage struct {
	Servers []wireServer `json:"servers"`
	Links   []pageLink   `json:"servers_links"`
}

// wireHypervisor is a hypervisor of GET /os-hypervisors/detail. Its id is a UUID from 2.53,
// an integer before; the capacity fields are gone from 2.88.
type wireHypervisor struct {
	ID       flexID `json:"id"`
	Hostname string `json:"hypervisor_hostname"`
	Type     string `json:"hypervisor_type"`
	State    string `json:"state"`
	Status   string `json:"status"`
	Service  struct {
		Host string `json:"host"`
	} `json:"service"`
	VCPUs        int     `json:"vcpus"`
	VCPUsUsed    int     `json:"vcpus_used"`
	MemoryMB     float64 `json:"memory_mb"`
	MemoryMBUsed float64 `json:"memory_mb_used"`
	LocalGB      float64 `json:"local_gb"`
	LocalGBUsed  float64 `json:"local_gb_used"`
	RunningVMs   int     `json:"running_vms"`
	Servers      []struct {
		UUID string `json:"uuid"`
	} `json:"servers"`
}

type hypervisorsPage struct {
	Hypervisors []wireHypervisor `json:"hypervisors"`
	Links       []pageLink       `json:"hypervisors_links"`
}

// flexID reads a JSON string or number as a string.
type flexID string

func (f *flexID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		err := json.Unmarshal(b, &s)
		*f = flexID(s)
		return err
	}
	*f = flexID(b)
	return nil
}

// follower keeps a walk on its endpoint and finite: a "next" link is followed only on the
// host the first page came from (a link elsewhere would carry the token there), and never
// twice, nor to a marker already seen (a server that repeats a page would be read forever).
type follower struct {
	base    *neturl.URL
	seen    map[string]bool
	markers map[string]bool
}

func newFollower(first string) (*follower, error) {
	u, err := neturl.Parse(first)
	if err != nil {
		return nil, err
	}
	return &follower{base: u, seen: map[string]bool{first: true}, markers: map[string]bool{}}, nil
}

// allowed says why next must not be followed (nil: it may).
func (f *follower) allowed(next string) error {
	u, err := neturl.Parse(next)
	switch {
	case err != nil:
		return fmt.Errorf("Nova's next link %q is no URL", next)
	case !strings.EqualFold(u.Scheme, f.base.Scheme) || !strings.EqualFold(u.Host, f.base.Host):
		return fmt.Errorf(
			"Nova's next link leaves the endpoint (%s://%s, not %s://%s): not followed",
			u.Scheme,
			u.Host,
			f.base.Scheme,
			f.base.Host,
		)
	case f.seen[next]:
		return fmt.Errorf("Nova's next link repeats a page already read (%s): stopped", u.Redacted())
	}
	if m := u.Query().Get("marker"); m != "" && f.markers[m] {
		return fmt.Errorf("Nova's paging repeats the marker %s: stopped", m)
	}
	return nil
}

// take records next as followed, or says why it must not be.
func (f *follower) take(next string) error {
	if err := f.allowed(next); err != nil {
		return err
	}
	f.seen[next] = true
	if u, err := neturl.Parse(next); err == nil {
		if m := u.Query().Get("marker"); m != "" {
			f.markers[m] = true
		}
	}
	return nil
}
