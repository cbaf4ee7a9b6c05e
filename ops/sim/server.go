package sim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Server serves Keystone (/identity/v3) and Nova (/compute/v2.1) for a World over HTTP.
type Server struct {
	URL   string
	world *World
	http  *http.Server
	ln    net.Listener

	logMu  sync.Mutex
	writes io.Writer // LogWrites: every request that changes the world, one line each
}

// Serve starts a server for the world on addr ("127.0.0.1:0" for a random port).
func Serve(world *World, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), world: world, ln: ln}
	s.http = &http.Server{Handler: s.counted(s.routes()), ReadHeaderTimeout: 10 * time.Second}
	go s.http.Serve(ln) //nolint:errcheck // ends with Close
	return s, nil
}

// counted adds each response's body bytes to the world's stats, by API (what a client's reads
// cost grows with the cloud when it reads whole lists).
func (s *Server) counted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The world's clock dates every answer, as a real API's does (drainctl reads a
		// service's silence as Date less updated_at, both on the cloud's clock).
		w.Header().Set("Date", s.world.clock.Now().UTC().Format(http.TimeFormat))
		cw := &countingWriter{ResponseWriter: w}
		began := time.Now()
		body := s.keepBody(r)
		h.ServeHTTP(cw, r)
		s.logWrite(r, body, cw.status, time.Since(began))
		api := "nova"
		switch {
		case strings.HasPrefix(r.URL.Path, "/placement"):
			api = "placement"
		case strings.HasPrefix(r.URL.Path, "/identity"):
			api = "keystone"
		case strings.HasPrefix(r.URL.Path, "/network"):
			api = "neutron"
		}
		s.world.mu.Lock()
		s.world.stats.Bytes[api] += cw.n
		s.world.mu.Unlock()
	})
}

type countingWriter struct {
	http.ResponseWriter
	n      int64
	status int
}

func (c *countingWriter) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

// LogWrites writes a line for every request that changes the world (each method but GET and
// HEAD): when it came, its method, path and body, the status and how long it took. What a
// benchmark keeps when a run fails: the order Nova saw the writes in. Keystone's bodies hold
// passwords and are never written.
func (s *Server) LogWrites(w io.Writer) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.writes = w
}

// keepBody reads a write's body for the log (at most 1 KiB kept) and hands the handler the
// whole of it again.
func (s *Server) keepBody(r *http.Request) string {
	s.logMu.Lock()
	logging := s.writes != nil
	s.logMu.Unlock()
	if !logging || r.Method == http.MethodGet || r.Method == http.MethodHead || r.Body == nil ||
		strings.HasPrefix(r.URL.Path, "/identity") {
		return ""
	}
	data, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(data))
	return secretField.ReplaceAllString(string(data[:min(len(data), 1024)]), `"$1":"***"`)
}

// secretField is a password in a Nova body (a server's adminPass): never logged.
var secretField = regexp.MustCompile(`"(adminPass|password)"\s*:\s*"[^"]*"`)

func (s *Server) logWrite(r *http.Request, body string, status int, took time.Duration) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.writes == nil {
		return
	}
	fmt.Fprintf(s.writes, "%s %s %s %d %s %s\n", time.Now().UTC().Format("15:04:05.000"), r.Method, r.URL.Path,
		cmp.Or(status, http.StatusOK), took.Round(time.Millisecond), body)
}

// World is the state behind the server.
func (s *Server) World() *World { return s.world }

// IdentityURL is the Keystone v3 endpoint, as OS_AUTH_URL.
func (s *Server) IdentityURL() string { return s.URL + "/identity/v3" }

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.http.Shutdown(ctx)
}

// Env is the OS_* environment that points a client (the openstack CLI, gophercloud,
// drainctl) at this server with the first user.
func (s *Server) Env() []string { return s.EnvFor(s.world.opts.Users[0]) }

// AddUser adds a Keystone user (e.g. one with only some policy rules) and returns the OS_*
// variables that authenticate as it.
func (s *Server) AddUser(u User) []string {
	s.world.mu.Lock()
	if u.Project == "" {
		u.Project = "admin"
	}
	s.world.opts.Users = append(s.world.opts.Users, u)
	s.world.mu.Unlock()
	return s.EnvFor(u)
}

// EnvFor is the OS_* variables that authenticate as u.
func (s *Server) EnvFor(u User) []string {
	return []string{
		"OS_AUTH_URL=" + s.IdentityURL(), "OS_USERNAME=" + u.Name, "OS_PASSWORD=" + u.Password,
		"OS_PROJECT_NAME=" + u.Project, "OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default",
		"OS_REGION_NAME=RegionOne", "OS_INTERFACE=public", "OS_IDENTITY_API_VERSION=3",
	}
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /identity/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 300, map[string]any{"versions": map[string]any{"values": []map[string]any{{
			"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
			"links": []map[string]any{{"rel": "self", "href": s.URL + "/identity/v3/"}}}}}})
	})
	mux.HandleFunc("POST /identity/v3/auth/tokens", s.handleTokens)
	mux.Handle("/compute/", http.StripPrefix("/compute", s.novaRoutes()))
	if !s.world.opts.NoPlacement {
		mux.Handle("/placement/", http.StripPrefix("/placement", s.placementRoutes()))
	}
	if s.world.opts.Neutron {
		mux.Handle("/networking/", http.StripPrefix("/networking", s.neutronRoutes()))
	}
	return mux
}

// route is a Nova handler, called with the world locked and advanced to now.
type route func(c *call) (int, any)

// call is one Nova request in progress.
type call struct {
	r   *http.Request
	mv  microversion
	now time.Time
	w   *World
	s   *Server
	// reqID is the request's ID (X-Openstack-Request-Id), which its instance action keeps.
	reqID string
}

func (s *Server) novaRoutes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, f route) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.HandleFunc(method+" /v2.1"+path, func(w http.ResponseWriter, r *http.Request) { s.serveNova(w, r, pattern, f) })
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 300, map[string]any{"versions": []any{s.versionDoc()["version"]}})
	})
	mux.HandleFunc("GET /v2.1/{$}", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, s.versionDoc()) })
	mux.HandleFunc("GET /v2.1", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, s.versionDoc()) })
	handle("GET /os-services", listServices)
	handle("PUT /os-services/{id}", updateService)
	handle("GET /os-hypervisors", listHypervisors(false))
	handle("GET /os-hypervisors/detail", listHypervisors(true))
	handle("GET /os-hypervisors/{id}", showHypervisor)
	handle("GET /servers", listServers(false))
	handle("GET /servers/detail", listServers(true))
	handle("GET /servers/{id}", showServer)
	handle("POST /servers", createServer)
	handle("POST /servers/{id}/metadata", updateMetadata)
	handle("DELETE /servers/{id}/metadata/{key}", deleteMetadatum)
	handle("DELETE /servers/{id}", deleteServer)
	handle("POST /servers/{id}/action", serverAction)
	handle("GET /servers/{id}/migrations", listServerMigrations)
	handle("GET /servers/{id}/migrations/{mid}", showServerMigration)
	handle("POST /servers/{id}/migrations/{mid}/action", forceComplete)
	handle("DELETE /servers/{id}/migrations/{mid}", abortMigration)
	handle("GET /os-migrations", listMigrations)
	handle("GET /os-server-groups", listServerGroups)
	handle("GET /servers/{id}/os-instance-actions", listActions)
	handle("GET /servers/{id}/os-instance-actions/{req}", showAction)
	return mux
}

func (s *Server) versionDoc() map[string]any {
	return map[string]any{"version": map[string]any{
		"id": "v2.1", "status": "CURRENT", "updated": "2013-07-23T11:33:21Z",
		"min_version": minMicroversion.String(), "version": maxMicroversion.String(),
		"links": []map[string]any{{"href": s.URL + "/compute/v2.1/", "rel": "self"},
			{"href": "http://docs.openstack.org/", "rel": "describedby", "type": "text/html"}},
		"media-types": []map[string]any{{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2.1"}},
	}}
}

func (s *Server) serveNova(w http.ResponseWriter, r *http.Request, pattern string, f route) {
	world := s.world
	defer world.answered(time.Now())
	world.mu.Lock()
	world.stats.Requests++
	world.stats.ByRoute[pattern]++
	if r.Method != http.MethodGet {
		world.stats.Mutations++
	}
	if !s.authorized(r) {
		world.mu.Unlock()
		keystoneError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	mv, err := parseMicroversion(r)
	if err != nil {
		world.mu.Unlock()
		novaError(w, err.status, err.msg)
		return
	}
	action := ""
	if pattern == "POST /servers/{id}/action" {
		action = actionOf(r)
	}
	if rule := s.refusedRule(r, novaRules(pattern, r, action)); rule != "" {
		world.mu.Unlock()
		novaError(w, http.StatusForbidden, string(policyFault(rule)))
		return
	}
	fault := world.matchFault(r, strings.TrimPrefix(r.URL.Path, "/v2.1"))
	if d := world.delay(fault); d > 0 {
		world.mu.Unlock()
		time.Sleep(d)
		world.mu.Lock()
	}
	if fault != nil && fault.Meanwhile != nil {
		fault.Meanwhile(world.hosts, world.servers)
		world.changes++
	}
	now := world.clock.Now()
	world.advance(now)
	header := w.Header()
	header.Set("OpenStack-API-Version", "compute "+mv.String())
	header.Set("X-OpenStack-Nova-API-Version", mv.String())
	header.Set("Vary", "OpenStack-API-Version, X-OpenStack-Nova-API-Version")
	// One ID per request, in both headers, and on the instance action it records (Nova's
	// request context).
	reqID := "req-" + world.uuid()
	header.Set("X-Compute-Request-Id", reqID)
	header.Set("X-Openstack-Request-Id", reqID)
	if fault != nil && fault.Status != 0 {
		world.mu.Unlock()
		msg := fault.Message
		if msg == "" {
			msg = "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible."
		}
		novaError(w, fault.Status, msg)
		return
	}
	status, body := f(&call{r: r, mv: mv, now: now, w: world, s: s, reqID: reqID})
	world.mu.Unlock()
	if fault != nil && fault.LatencyAfter > 0 {
		time.Sleep(fault.LatencyAfter)
	}
	if fe, ok := body.(novaFault); ok {
		novaError(w, status, string(fe))
		return
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}

// novaFault is a handler's error message; serveNova wraps it in Nova's fault body.
type novaFault string

func faultf(format string, a ...any) novaFault { return novaFault(fmt.Sprintf(format, a...)) }

// faultNames are Nova's names for error bodies: {"itemNotFound": {"code": 404, "message": ...}}.
var faultNames = map[int]string{400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
	405: "badMethod", 409: "conflictingRequest", 413: "overLimit", 415: "badMediaType", 429: "overLimit",
	501: "notImplemented", 503: "serviceUnavailable"}

func novaError(w http.ResponseWriter, code int, msg string) {
	name, ok := faultNames[code]
	if !ok {
		name = "computeFault"
	}
	writeJSON(w, code, map[string]any{name: map[string]any{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}
