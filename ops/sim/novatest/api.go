package novatest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// API is a plain HTTP client of a cloud's Keystone, Nova and Placement, as an operator's
// openstack CLI would call them: what a test sets up (a boot, a stop, a lock) and reads back
// (a server, its migrations, a provider's allocations) without drainctl's client, whose
// answers are what the test checks.
type API struct {
	t         interface{ Fatalf(string, ...any) }
	ctx       context.Context
	token     string
	endpoints map[string]string // catalog type → public URL
	http      http.Client
}

// Microversion is the compute microversion of every call: the newest both Novas speak.
const Microversion = "2.93"

func (c *Cloud) connect() *API {
	a := &API{t: c.t, ctx: c.ctx, http: http.Client{Timeout: 60 * time.Second}, endpoints: map[string]string{}}
	body := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": map[string]any{
			"name": c.Getenv("OS_USERNAME"), "password": c.Getenv("OS_PASSWORD"), "domain": map[string]any{"name": "Default"}}}},
		"scope": map[string]any{
			"project": map[string]any{"name": c.Getenv("OS_PROJECT_NAME"), "domain": map[string]any{"name": "Default"}},
		},
	}}
	var out struct {
		Token struct {
			Catalog []struct {
				Type      string `json:"type"`
				Endpoints []struct {
					Interface string `json:"interface"`
					URL       string `json:"url"`
				} `json:"endpoints"`
			} `json:"catalog"`
		} `json:"token"`
	}
	b, _ := json.Marshal(body)
	resp, err := a.http.Post(strings.TrimSuffix(c.Getenv("OS_AUTH_URL"), "/")+"/auth/tokens", "application/json", bytes.NewReader(b))
	if err != nil {
		c.t.Fatalf("keystone: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 201 || json.NewDecoder(resp.Body).Decode(&out) != nil {
		c.t.Fatalf("keystone: %s", resp.Status)
	}
	a.token = resp.Header.Get("X-Subject-Token")
	for _, s := range out.Token.Catalog {
		for _, e := range s.Endpoints {
			if e.Interface == "public" {
				a.endpoints[s.Type] = strings.TrimSuffix(e.URL, "/")
			}
		}
	}
	return a
}

// Do sends one request to a service of the catalog ("compute", "placement") and decodes a
// JSON answer into out (nil: ignored). It returns the status and the body as text.
func (a *API) Do(method, service, path string, in, out any) (int, string) {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	base, ok := a.endpoints[service]
	if !ok {
		a.t.Fatalf("no %s endpoint in the catalog", service)
	}
	req, err := http.NewRequestWithContext(a.ctx, method, base+path, body)
	if err != nil {
		a.t.Fatalf("%v", err)
	}
	req.Header.Set("X-Auth-Token", a.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	switch service {
	case "compute":
		req.Header.Set("OpenStack-API-Version", "compute "+Microversion)
		req.Header.Set("X-OpenStack-Nova-API-Version", Microversion)
	case "placement":
		req.Header.Set("OpenStack-API-Version", "placement 1.36")
	}
	resp, err := a.http.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 && len(text) > 0 {
		if err := json.Unmarshal(text, out); err != nil {
			a.t.Fatalf("%s %s: %v\n%s", method, path, err, text)
		}
	}
	return resp.StatusCode, string(text)
}

// Must is Do that fails the test unless the status is one of ok.
func (a *API) Must(method, service, path string, in, out any, ok ...int) {
	st, text := a.Do(method, service, path, in, out)
	for _, o := range ok {
		if st == o {
			return
		}
	}
	a.t.Fatalf("%s %s: %d %s", method, path, st, text)
}

// Server is what a test reads of a server.
type Server struct {
	ID        string                    `json:"id"`
	Name      string                    `json:"name"`
	Status    string                    `json:"status"`
	Host      string                    `json:"OS-EXT-SRV-ATTR:host"`
	TaskState *string                   `json:"OS-EXT-STS:task_state"`
	VMState   string                    `json:"OS-EXT-STS:vm_state"`
	Locked    bool                      `json:"locked"`
	Metadata  map[string]string         `json:"metadata"`
	Fault     *struct{ Message string } `json:"fault"`
}

// Task is the server's task state, "" for none.
func (s Server) Task() string {
	if s.TaskState == nil {
		return ""
	}
	return *s.TaskState
}

// Server reads one server; ok is false once it is gone.
func (c *Cloud) Server(id string) (Server, bool) {
	var out struct{ Server Server }
	st, text := c.API.Do("GET", "compute", "/servers/"+id, nil, &out)
	switch st {
	case 200:
		return out.Server, true
	case 404:
		return Server{}, false
	}
	c.t.Fatalf("GET /servers/%s: %d %s", id, st, text)
	return Server{}, false
}

// WaitServer waits until the server satisfies cond and returns it as last read.
func (c *Cloud) WaitServer(id string, d time.Duration, what string, cond func(Server) bool) Server {
	c.t.Helper()
	var s Server
	c.Wait(d, fmt.Sprintf("server %s %s (last seen %+v)", id, what, &s), func() bool {
		s, _ = c.Server(id)
		return cond(s)
	})
	return s
}

// Boot makes a server of the cloud's flavor (m1.tiny; the guest's in the libvirt world) on host (2.74's requested host: the scheduler's
// filters still run) with no network, and waits until it is ACTIVE there.
func (c *Cloud) Boot(name, host string) string {
	c.t.Helper()
	id := c.BootAsync(map[string]any{"name": name, "host": host})
	c.waitBooted(id, name, host)
	return id
}

// waitBooted waits until the server booted on host runs there.
func (c *Cloud) waitBooted(id, name, host string) {
	c.t.Helper()
	s := c.WaitServer(id, 120*time.Second, "ACTIVE on "+host, func(s Server) bool {
		if s.Status == "ERROR" {
			c.t.Fatalf("boot of %s on %s: ERROR %+v", name, host, s.Fault)
		}
		return s.Status == "ACTIVE" && s.Task() == ""
	})
	if s.Host != host {
		c.t.Fatalf("boot of %s: on %s, asked %s", name, s.Host, host)
	}
}

// BootAsync posts a server (fields over the defaults: the flavor, the image, no network) and
// returns its ID without waiting.
func (c *Cloud) BootAsync(fields map[string]any) string {
	c.t.Helper()
	server := map[string]any{"imageRef": c.image, "flavorRef": c.flavor, "networks": "none"}
	for k, v := range fields {
		server[k] = v
	}
	var out struct{ Server struct{ ID string } }
	c.API.Must("POST", "compute", "/servers", map[string]any{"server": server}, &out, 202)
	return out.Server.ID
}

// Action posts a server action and returns the status and Nova's words.
func (c *Cloud) Action(id string, body map[string]any) (int, string) {
	return c.API.Do("POST", "compute", "/servers/"+id+"/action", body, nil)
}

// MustAction posts a server action that must be accepted (202, or 200/204 where Nova says so).
func (c *Cloud) MustAction(id string, body map[string]any) {
	c.t.Helper()
	c.API.Must("POST", "compute", "/servers/"+id+"/action", body, nil, 200, 202, 204)
}

// Stop stops a server and waits until it is SHUTOFF.
func (c *Cloud) Stop(id string) {
	c.t.Helper()
	c.MustAction(id, map[string]any{"os-stop": nil})
	c.WaitServer(id, 60*time.Second, "SHUTOFF", func(s Server) bool { return s.Status == "SHUTOFF" && s.Task() == "" })
}

// Migration is a record of os-migrations.
type Migration struct {
	ID            int64  `json:"id"`
	UUID          string `json:"uuid"`
	InstanceUUID  string `json:"instance_uuid"`
	Type          string `json:"migration_type"`
	Status        string `json:"status"`
	SourceCompute string `json:"source_compute"`
	DestCompute   string `json:"dest_compute"`
	CreatedAt     string `json:"created_at"`
}

// Migrations lists the server's migration records, newest first.
func (c *Cloud) Migrations(id string) []Migration {
	var out struct{ Migrations []Migration }
	c.API.Must("GET", "compute", "/os-migrations?instance_uuid="+url.QueryEscape(id), nil, &out, 200)
	return out.Migrations
}

// Provider is a host's resource provider in Placement.
func (c *Cloud) Provider(host string) string {
	c.t.Helper()
	var out struct {
		ResourceProviders []struct{ UUID string } `json:"resource_providers"`
	}
	c.API.Must("GET", "placement", "/resource_providers?name="+url.QueryEscape(host), nil, &out, 200)
	if len(out.ResourceProviders) != 1 {
		c.t.Fatalf("Placement has %d providers named %s", len(out.ResourceProviders), host)
	}
	return out.ResourceProviders[0].UUID
}

// Consumers lists the consumers holding an allocation on host's provider.
func (c *Cloud) Consumers(host string) []string {
	var out struct {
		Allocations map[string]any `json:"allocations"`
	}
	c.API.Must("GET", "placement", "/resource_providers/"+c.Provider(host)+"/allocations", nil, &out, 200)
	var ids []string
	for id := range out.Allocations {
		ids = append(ids, id)
	}
	return ids
}

// Service is a host's nova-compute as os-services shows it.
type Service struct {
	ID         string `json:"id"`
	Host       string `json:"host"`
	State      string `json:"state"`
	Status     string `json:"status"`
	ForcedDown bool   `json:"forced_down"`
	UpdatedAt  string `json:"updated_at"`
}

// Service reads host's nova-compute.
func (c *Cloud) Service(host string) Service {
	c.t.Helper()
	var out struct{ Services []Service }
	c.API.Must("GET", "compute", "/os-services?binary=nova-compute&host="+url.QueryEscape(host), nil, &out, 200)
	if len(out.Services) != 1 {
		c.t.Fatalf("os-services has %d nova-compute on %s", len(out.Services), host)
	}
	return out.Services[0]
}

// disabledTrait reports whether host's provider carries COMPUTE_STATUS_DISABLED (Nova's
// scheduler then offers it to no request).
func (c *Cloud) disabledTrait(host string) bool {
	var out struct {
		Traits []string `json:"traits"`
	}
	c.API.Must("GET", "placement", "/resource_providers/"+c.Provider(host)+"/traits", nil, &out, 200)
	for _, tr := range out.Traits {
		if tr == "COMPUTE_STATUS_DISABLED" {
			return true
		}
	}
	return false
}

// UpdateService changes host's nova-compute (status, forced_down) and returns Nova's status
// and words.
func (c *Cloud) UpdateService(host string, body map[string]any) (int, string) {
	return c.API.Do("PUT", "compute", "/os-services/"+c.Service(host).ID, body, nil)
}

func (c *Cloud) imageID() string {
	name := "cirros"
	if c.guests {
		name = "guest"
	}
	var out struct{ Images []struct{ ID string } }
	c.API.Must("GET", "image", "/v2/images?name="+name, nil, &out, 200)
	if len(out.Images) != 1 {
		c.t.Fatalf("the real Nova has %d images named %s (hack/nova/catalog.py makes one)", len(out.Images), name)
	}
	return out.Images[0].ID
}

// Reset makes the real Nova's world clean: every nova-compute running, up, enabled and not
// forced down, no server left.
func (c *Cloud) Reset() {
	c.t.Helper()
	for _, h := range Hosts {
		if c.guests {
			c.script("start-host", h) // the machine powered on: a no-op for one that runs
		} else {
			c.script("start-compute", h) // a no-op for one that runs
		}
	}
	// A forced-down service reports down whatever runs: it is forced up (Nova refuses that
	// while `done` evacuations remain, until the restart above turns them `completed`).
	c.Wait(90*time.Second, "every nova-compute up, enabled, not forced down", func() bool {
		up := true
		for _, h := range Hosts {
			s := c.Service(h)
			if s.Status != "enabled" || s.ForcedDown {
				c.UpdateService(h, map[string]any{"status": "enabled", "forced_down": false})
			}
			up = up && s.State == "up" && s.Status == "enabled" && !s.ForcedDown
		}
		return up
	})
	// Enabling a service asks its nova-compute to drop the COMPUTE_STATUS_DISABLED trait from
	// its provider; one that was not listening yet keeps the trait until its periodic sync:
	// asked again now that every one is up.
	if c.Real() {
		for _, h := range Hosts {
			if c.disabledTrait(h) {
				c.UpdateService(h, map[string]any{"status": "disabled", "disabled_reason": "novatest reset"})
				c.UpdateService(h, map[string]any{"status": "enabled"})
				c.Wait(60*time.Second, "COMPUTE_STATUS_DISABLED gone from "+h, func() bool { return !c.disabledTrait(h) })
			}
		}
	}
	var out struct{ Servers []Server }
	c.API.Must("GET", "compute", "/servers/detail?all_tenants=1", nil, &out, 200)
	for _, s := range out.Servers {
		if s.Locked {
			c.MustAction(s.ID, map[string]any{"unlock": nil})
		}
		c.Wait(90*time.Second, "server "+s.Name+" deleted", func() bool {
			st, _ := c.API.Do("DELETE", "compute", "/servers/"+s.ID, nil, nil)
			return st == 204 || st == 404
		})
	}
	for _, s := range out.Servers {
		c.Wait(90*time.Second, "server "+s.Name+" gone", func() bool { _, ok := c.Server(s.ID); return !ok })
	}
}

// MigrationStatus is a migration's status as Nova writes it (drainctl's model folds some
// together: done and completed are both "completed" there).
func (c *Cloud) MigrationStatus(server string, id int64) string {
	for _, m := range c.Migrations(server) {
		if m.ID == id {
			return m.Status
		}
	}
	return ""
}
