// Package cloudpool is a client of the cloudpool REST API (shared/cloudpool-api.md): the
// backend that owns the machines under a Kubernetes node pool.
package cloudpool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Machine is a cloudpool machine.
type Machine struct {
	ID               string           `json:"id"`
	MachineState     string           `json:"machineState"`
	MembershipStatus MembershipStatus `json:"membershipStatus"`
	ServiceState     string           `json:"serviceState,omitempty"`
}

// MembershipStatus says whether a machine counts towards the pool's size (active) and
// whether it may be picked for termination (evictable; false "blesses" it).
type MembershipStatus struct {
	Active    bool `json:"active"`
	Evictable bool `json:"evictable"`
}

// UnmarshalJSON applies the API's default: a machine without a membershipStatus is active
// and evictable.
func (m *Machine) UnmarshalJSON(b []byte) error {
	type plain Machine
	p := plain{MembershipStatus: MembershipStatus{Active: true, Evictable: true}}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = Machine(p)
	return nil
}

// Allocated reports whether the machine is requested, pending or running.
func (m Machine) Allocated() bool {
	switch m.MachineState {
	case "REQUESTED", "PENDING", "RUNNING":
		return true
	}
	return false
}

// Active reports whether the machine counts towards the pool's active size.
func (m Machine) Active() bool { return m.Allocated() && m.MembershipStatus.Active }

// Client talks to one cloudpool.
type Client struct {
	base  string
	shown string // base without a password, for messages
	http  *http.Client
}

// New makes a client for the pool at base (e.g. http://pool:9010).
func New(base string, timeout time.Duration) *Client {
	base = strings.TrimRight(base, "/")
	return &Client{base: base, shown: Redacted(base), http: &http.Client{Timeout: timeout}}
}

// Redacted is a pool URL fit for logs: a password in it is replaced by xxxxx.
func Redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// ErrUnreachable is a pool that did not answer (connection refused, timeout).
var ErrUnreachable = errors.New("cloudpool unreachable")

// Error is the API's error message.
type Error struct {
	Status  int
	Message string `json:"message"`
	Detail  string `json:"detail"`
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cloudpool: %d %s", e.Status, e.Message)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w at %s: %w", ErrUnreachable, c.shown, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(data, e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		return e
	}
	if out != nil && len(data) > 0 {
		return json.Unmarshal(data, out)
	}
	return nil
}

// Machines lists the pool's machines.
func (c *Client) Machines(ctx context.Context) ([]Machine, error) {
	var pool struct {
		Machines []Machine `json:"machines"`
	}
	err := c.do(ctx, http.MethodGet, "/pool", nil, &pool)
	return pool.Machines, err
}

// Terminate terminates a machine, shrinking the desired size with it when asked.
func (c *Client) Terminate(ctx context.Context, id string, decrement bool) error {
	return c.do(ctx, http.MethodPost, "/pool/"+url.PathEscape(id)+"/terminate", map[string]bool{"decrementDesiredSize": decrement}, nil)
}

// MachineFor pairs a node with its machine: the node's providerID, or its last path
// segment, else its name.
func MachineFor(machines []Machine, nodeName, providerID string) (Machine, bool) {
	last := providerID
	if i := strings.LastIndex(providerID, "/"); i >= 0 {
		last = providerID[i+1:]
	}
	for _, want := range []string{providerID, last, nodeName} {
		if want == "" {
			continue
		}
		for _, m := range machines {
			if m.ID == want {
				return m, true
			}
		}
	}
	return Machine{}, false
}

// TerminateNode terminates the machine paired with the node and shrinks the pool with it.
func (c *Client) TerminateNode(ctx context.Context, node, providerID string) (string, error) {
	ms, err := c.Machines(ctx)
	if err != nil {
		return "", err
	}
	m, ok := MachineFor(ms, node, providerID)
	if !ok {
		return "", fmt.Errorf("cloudpool at %s has no machine for node %s (providerID %q)", c.shown, node, providerID)
	}
	return m.ID, c.Terminate(ctx, m.ID, true)
}
