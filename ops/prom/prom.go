// Package prom reads the alerts firing in Prometheus, for a campaign's health gate. Its
// credential comes from a file or the environment, never the command line, and its URL is
// only ever printed redacted.
package prom

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/bearer"
)

// Client reads one Prometheus' alerts.
type Client struct {
	base   *url.URL
	token  model.Secret
	match  *regexp.Regexp // nil: every alert
	client *http.Client
}

// Options say where Prometheus is and how to authenticate: a bearer token (from a file or
// the environment), and a CA bundle for its certificate.
type Options struct {
	URL     string
	Token   model.Secret
	CAFile  string
	Match   *regexp.Regexp
	Timeout time.Duration // per request (default 10 s)
}

// New checks the URL (http or https, a host, no credential in it) and the CA file.
func New(o Options) (*Client, error) {
	u, err := url.Parse(o.URL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is no URL: %v", o.URL, err)
	case u.User != nil:
		return nil, fmt.Errorf(
			"%s carries a credential: a command line is readable by every user of the machine (ps); give the token in a file or "+
				"in DRAINCTL_PROMETHEUS_TOKEN",
			u.Redacted(),
		)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%s: the scheme must be http or https", u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("%q has no host", o.URL)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%s: give Prometheus' base URL, without a query", u.Redacted())
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	client, err := bearer.Client(u, o.Token != "", o.CAFile, o.Timeout)
	if err != nil {
		return nil, err
	}
	return &Client{base: u, token: o.Token, match: o.Match, client: client}, nil
}

// String is the URL, as it may be printed.
func (c *Client) String() string { return c.base.Redacted() }

// Firing reads GET /api/v1/alerts and returns the names of the alerts firing that match.
func (c *Client) Firing(ctx context.Context) ([]string, error) {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/alerts"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token.Reveal())
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %s", u.Redacted(), scrub(err.Error(), c.base))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &body); err != nil || body.Status != "success" {
		return nil, fmt.Errorf("GET %s: not a Prometheus alerts answer", u.Redacted())
	}
	var out []string
	for _, a := range body.Data.Alerts {
		name := a.Labels["alertname"]
		if a.State == "firing" && (c.match == nil || c.match.MatchString(name)) {
			out = append(out, name)
		}
	}
	return out, nil
}

// scrub keeps a transport error from repeating the URL unredacted.
func scrub(msg string, u *url.URL) string { return strings.ReplaceAll(msg, u.String(), u.Redacted()) }
