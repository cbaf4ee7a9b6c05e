package nova

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/utils"

	"github.com/drainctl/drainctl/ops/answers"
	"github.com/drainctl/drainctl/ops/shared"
)

// Microversions drainctl relies on.
const (
	// MinMicroversion: UUID service and hypervisor ids, PUT /os-services/{uuid}, with_servers.
	MinMicroversion = "2.53"
	// LastWithHypervisorCapacity: from 2.88 os-hypervisors no longer reports capacity (and
	// calls every nova-compute for its uptime). With Placement in the catalog drainctl reads
	// capacity there and negotiates as high as Nova offers, but reads os-hypervisors at this
	// one (hypervisorClient); without Placement, it stays at this one throughout.
	LastWithHypervisorCapacity = "2.87"
)

// Client talks to Nova for one drainctl process. It is safe for concurrent use.
type Client struct {
	requests     sync.Map // server ID -> the request ID of its last move asked here (actions.go)
	compute      *gophercloud.ServiceClient
	placement    *gophercloud.ServiceClient // nil: not in the catalog
	cache        roomCache                  // Placement's providers as last read
	state        tracked                    // servers and migrations as last read (incremental.go)
	fullEvery    time.Duration
	network      *gophercloud.ServiceClient // Neutron; nil: not in the catalog
	admin        bool                       // the token has the admin role
	microversion string
	pageSize     int
	cpuRatio     float64 // for capacity from os-hypervisors
	moves        moves   // the moves under way in the cloud (moves.go)
	watch        watch   // the servers read lately, kept by reading what changed (watch.go)
	answers      *answers.Listeners
}

// Options tune a connection.
type Options struct {
	// Timeout bounds each HTTP request (the API timeout from config).
	Timeout time.Duration
	// Transport, when set, carries every request (tests count requests with it).
	Transport http.RoundTripper
	// PageSize is the limit sent on paginated lists; 0 lets Nova choose (osapi_max_limit).
	PageSize int
	// CPUAllocationRatio applies to os-hypervisors' vCPUs when Placement is absent (Placement
	// carries the real ratios).
	CPUAllocationRatio float64
	// FullReadEvery: a refresh reads what changed since the last one; every this long it
	// reads everything again (default 5 min; negative: always everything, Placement's
	// providers too: how drainctl read before it read what changed).
	FullReadEvery time.Duration
	// MovesGap is the least time between two reads of the moves under way (default 100 ms;
	// a test polling every few milliseconds sets its own).
	MovesGap time.Duration
}

// Connect authenticates once (the token is reused and renewed by gophercloud's reauth) and
// negotiates the compute microversion.
func Connect(ctx context.Context, creds *Credentials, opts Options) (*Client, error) {
	provider, err := openstack.NewClient(creds.Auth.IdentityEndpoint)
	if err != nil {
		return nil, &CredentialError{Source: creds.Source, Problem: "bad auth_url: " + err.Error()}
	}
	transport := opts.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = creds.TLS
		t.MaxIdleConnsPerHost = 16
		transport = t
	}
	heard := &answers.Listeners{}
	provider.HTTPClient = http.Client{Transport: heard.Timed(transport, nil), Timeout: opts.Timeout}
	if err := openstack.Authenticate(ctx, provider, creds.Auth); err != nil {
		return nil, fmt.Errorf("authenticating to Keystone at %s (credentials from %s): %w",
			creds.Auth.IdentityEndpoint, creds.Source, describe(err))
	}
	admin := false // Nova's context_is_admin: the token's admin role
	if r, ok := provider.GetAuthResult().(tokens.CreateResult); ok {
		roles, _ := r.ExtractRoles()
		admin = slices.ContainsFunc(roles, func(role tokens.Role) bool { return role.Name == "admin" })
	}
	compute, err := openstack.NewComputeV2(provider, gophercloud.EndpointOpts{Region: creds.Region, Availability: creds.Interface})
	if err != nil {
		return nil, fmt.Errorf("finding the compute endpoint in the Keystone catalog (region %q, interface %s): %w",
			creds.Region, creds.Interface, err)
	}
	// Placement is what the scheduler consults; an old or restricted catalog may lack it.
	placement, err := openstack.NewPlacementV1(provider, gophercloud.EndpointOpts{Region: creds.Region, Availability: creds.Interface})
	if err != nil {
		placement = nil
	}
	ceiling := ""
	if placement == nil {
		ceiling = LastWithHypervisorCapacity
	}
	mv, err := negotiate(ctx, compute, ceiling)
	if err != nil {
		return nil, err
	}
	compute.Microversion = mv
	ratio := opts.CPUAllocationRatio
	if ratio <= 0 {
		ratio = 1
	}
	// Neutron tells which VMs have a port bound to their host's hardware (SR-IOV).
	network, err := openstack.NewNetworkV2(provider, gophercloud.EndpointOpts{Region: creds.Region, Availability: creds.Interface})
	if err != nil {
		network = nil
	}
	fullEvery := opts.FullReadEvery
	if fullEvery == 0 {
		fullEvery = 5 * time.Minute
	}
	c := &Client{compute: compute, placement: placement, network: network, microversion: mv, pageSize: opts.PageSize, cpuRatio: ratio,
		fullEvery: fullEvery, admin: admin, answers: heard}
	c.moves.calls = shared.Paced(cmp.Or(opts.Timeout, time.Minute), cmp.Or(opts.MovesGap, movesGap), c.readMoves)
	c.watch.calls = shared.Paced(cmp.Or(opts.Timeout, time.Minute), cmp.Or(opts.MovesGap, movesGap), c.readChangedServers)
	return c, nil
}

// PlacementMissing reports whether capacity comes from os-hypervisors: Placement is not in
// the catalog.
func (c *Client) PlacementMissing() bool { return c.placement == nil }

// Admin reports whether the token has the admin role: Nova lets an admin (and no one else)
// move a locked server.
func (c *Client) Admin() bool { return c.admin }

// Microversion is the compute API microversion every request carries.
func (c *Client) Microversion() string { return c.microversion }

// negotiate picks the highest microversion Nova supports, at most ceiling ("" : none), and
// at least MinMicroversion.
func negotiate(ctx context.Context, compute *gophercloud.ServiceClient, ceiling string) (string, error) {
	sv, err := utils.GetSupportedMicroversions(ctx, compute)
	if err != nil {
		return "", fmt.Errorf("reading Nova's supported microversions from %s: %w", compute.Endpoint, describe(err))
	}
	maxMajor, maxMinor := sv.MaxMajor, sv.MaxMinor
	if ceiling != "" {
		if cMajor, cMinor := parseMV(ceiling); cMajor < maxMajor || (cMajor == maxMajor && cMinor < maxMinor) {
			maxMajor, maxMinor = cMajor, cMinor
		}
	}
	minMajor, minMinor := parseMV(MinMicroversion)
	if maxMajor < minMajor || (maxMajor == minMajor && maxMinor < minMinor) {
		return "", fmt.Errorf("Nova at %s supports microversions up to %d.%d; drainctl needs at least %s (Pike or later)",
			compute.Endpoint, sv.MaxMajor, sv.MaxMinor, MinMicroversion)
	}
	return fmt.Sprintf("%d.%d", maxMajor, maxMinor), nil
}

func parseMV(s string) (int, int) {
	a, b, _ := strings.Cut(s, ".")
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x, y
}

// atLeast reports whether the negotiated microversion is at least v.
func (c *Client) atLeast(v string) bool { return atLeast(c.microversion, v) }

// atLeast reports whether microversion mv is at least v.
func atLeast(mv, v string) bool {
	a, b := parseMV(mv)
	x, y := parseMV(v)
	return a > x || (a == x && b >= y)
}

// describe shortens gophercloud's errors to what an operator needs: the status and Nova's
// own message. Request bodies (which may hold credentials) are never part of it.
func describe(err error) error {
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		return &APIError{Status: ue.Actual, Method: ue.Method, URL: ue.URL, Message: novaMessage(ue.Body)}
	}
	return err
}

// APIError is a Nova or Keystone answer other than the one expected.
type APIError struct {
	Status  int
	Method  string
	URL     string
	Message string
}

// HTTPStatus is the answer's status code (the engine tells refusals from failures by it).
func (e *APIError) HTTPStatus() int { return e.Status }

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Status, msg)
}

// Unavailable reports whether err says Nova could not be reached or could not answer: a
// 5xx, a timeout, a refused or reset connection (not an answer such as 403 or 404).
func Unavailable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		return ue.Actual >= 500
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error // timeouts, refused and reset connections (*net.OpError) among them
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// IsStatus reports whether err is an API answer with that HTTP status.
func IsStatus(err error, status int) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status == status
	}
	return gophercloud.ResponseCodeIs(err, status)
}
