package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// CloudPool is a simulated cloudpool backend (shared/cloudpool-api.md): machines with a
// state, a membership status and a service state, and a desired size. It answers every
// endpoint of the API with the API's shapes and status codes; like a real pool, it does not
// start machines by itself (the desired size is only recorded).
type CloudPool struct {
	URL string

	mu       sync.Mutex
	machines map[string]*poolMachine
	order    []string
	desired  int
	started  bool
	config   json.RawMessage
	fail     *poolFailure
	seen     []PoolRequest
	srv      *http.Server
}

type poolMachine struct {
	state, service     string
	active, evictable  bool
	launched, requests time.Time
}

type poolFailure struct {
	status        int
	message, path string
}

// PoolRequest is a request the pool received, as it arrived (for forwarding tests).
type PoolRequest struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// ServeCloudPool starts a pool holding the given machine ids, all RUNNING and IN_SERVICE.
func ServeCloudPool(ids ...string) (*CloudPool, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &CloudPool{URL: "http://" + ln.Addr().String(), machines: map[string]*poolMachine{}, desired: len(ids), started: true}
	now := time.Now().UTC()
	for _, id := range ids {
		p.order = append(p.order, id)
		p.machines[id] = &poolMachine{state: "RUNNING", service: "IN_SERVICE", active: true, evictable: true, launched: now, requests: now}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pool", p.pool)
	mux.HandleFunc("GET /pool/size", p.size)
	mux.HandleFunc("POST /pool/size", p.setSize)
	mux.HandleFunc("GET /pool/metadata", p.metadata)
	mux.HandleFunc("POST /pool/{id}/{action}", p.machineAction)
	mux.HandleFunc("GET /status", p.status)
	mux.HandleFunc("GET /config", p.getConfig)
	mux.HandleFunc("POST /config", p.setConfig)
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, _ *http.Request) { p.setStarted(true); w.WriteHeader(200) })
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, _ *http.Request) { p.setStarted(false); w.WriteHeader(200) })
	p.srv = &http.Server{Handler: p.record(mux), ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

// Boot adds a machine the pool has just launched: PENDING, active, no node yet; the desired
// size grows with it.
func (p *CloudPool) Boot(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now().UTC()
	p.order = append(p.order, id)
	p.machines[id] = &poolMachine{state: "PENDING", service: "IN_SERVICE", active: true, evictable: true, launched: now, requests: now}
	p.desired++
}

// Close stops the pool.
func (p *CloudPool) Close() { p.srv.Close() }

// State is a machine's state ("" when unknown).
func (p *CloudPool) State(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.machines[id]; m != nil {
		return m.state
	}
	return ""
}

// Desired is the pool's desired size.
func (p *CloudPool) Desired() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.desired
}

// Bless marks a machine not evictable, as an operator protecting it would.
func (p *CloudPool) Bless(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.machines[id].evictable = false
}

// FailNext makes the next request whose path is path ("" for any) fail with this status and
// message, as a backend in trouble would.
func (p *CloudPool) FailNext(path string, status int, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail = &poolFailure{status: status, message: message, path: path}
}

// Requests are the requests received so far, oldest first.
func (p *CloudPool) Requests() []PoolRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PoolRequest(nil), p.seen...)
}

// record keeps each request and plays an injected failure.
func (p *CloudPool) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		p.seen = append(
			p.seen,
			PoolRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)},
		)
		f := p.fail
		if f != nil && (f.path == "" || f.path == r.URL.Path) {
			p.fail = nil
		} else {
			f = nil
		}
		p.mu.Unlock()
		if f != nil {
			writeJSON(w, f.status, map[string]string{"message": f.message, "detail": "injected by the simulator"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *CloudPool) pool(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ms := []map[string]any{}
	for _, id := range p.order {
		m := p.machines[id]
		ms = append(ms, map[string]any{"id": id, "machineState": m.state, "serviceState": m.service,
			"membershipStatus": map[string]bool{"active": m.active, "evictable": m.evictable}, "cloudProvider": "OpenStack",
			"region": "RegionOne", "machineSize": "m1.xlarge", "launchTime": m.launched.Format(time.RFC3339),
			"requestTime": m.requests.Format(
				time.RFC3339,
			), "publicIps": []string{}, "privateIps": []string{}, "metadata": map[string]any{}})
	}
	writeJSON(w, 200, map[string]any{"timestamp": time.Now().UTC().Format(time.RFC3339), "machines": ms})
}

func (p *CloudPool) size(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	allocated, active := 0, 0
	for _, m := range p.machines {
		if m.state == "RUNNING" || m.state == "PENDING" || m.state == "REQUESTED" {
			allocated++
			if m.active {
				active++
			}
		}
	}
	writeJSON(w, 200, map[string]int{"desiredSize": p.desired, "allocated": allocated, "active": active})
}

func (p *CloudPool) setSize(w http.ResponseWriter, r *http.Request) {
	var body struct {
		DesiredSize *int `json:"desiredSize"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.DesiredSize == nil || *body.DesiredSize < 0 {
		writeJSON(w, 400, map[string]string{"message": "malformed request", "detail": "expected {\"desiredSize\": n} with n >= 0"})
		return
	}
	p.mu.Lock()
	p.desired = *body.DesiredSize
	p.mu.Unlock()
	w.WriteHeader(200)
}

func (p *CloudPool) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{"supportedApiVersions": []string{"4.0"}, "poolIdentifier": "drainctl-sim"})
}

func (p *CloudPool) status(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	writeJSON(w, 200, map[string]bool{"started": p.started, "configured": true})
}

func (p *CloudPool) setStarted(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = on
}

func (p *CloudPool) getConfig(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cfg := p.config
	if cfg == nil {
		cfg = json.RawMessage(`{}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	w.Write(cfg) //nolint:errcheck // the client went away
}

func (p *CloudPool) setConfig(w http.ResponseWriter, r *http.Request) {
	var cfg json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
		writeJSON(w, 400, map[string]string{"message": "malformed configuration", "detail": err.Error()})
		return
	}
	p.mu.Lock()
	p.config = cfg
	p.mu.Unlock()
	w.WriteHeader(200)
}

// machineAction serves terminate, detach, attach, membershipStatus and serviceState.
func (p *CloudPool) machineAction(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Decrement  bool `json:"decrementDesiredSize"`
		Membership *struct {
			Active    *bool `json:"active"`
			Evictable *bool `json:"evictable"`
		} `json:"membershipStatus"`
		ServiceState string `json:"serviceState"`
	}
	action := r.PathValue("action")
	if action != "attach" {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, 400, map[string]string{"message": "malformed request", "detail": err.Error()})
			return
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id := r.PathValue("id")
	m := p.machines[id]
	member := m != nil && m.state != "TERMINATED" && m.state != "TERMINATING"
	if action != "attach" && !member {
		writeJSON(w, 404, map[string]string{"message": "not a member of the pool", "detail": "no machine " + id})
		return
	}
	switch action {
	case "terminate", "detach":
		if action == "terminate" {
			m.state = "TERMINATED"
		} else {
			delete(p.machines, id)
			p.order = slices.DeleteFunc(p.order, func(x string) bool { return x == id })
		}
		if body.Decrement && p.desired > 0 {
			p.desired--
		}
	case "attach":
		if m == nil {
			writeJSON(w, 404, map[string]string{"message": "no such machine in the cloud", "detail": id})
			return
		}
		m.state = "RUNNING"
		p.desired++
	case "membershipStatus":
		if body.Membership == nil || body.Membership.Active == nil || body.Membership.Evictable == nil {
			writeJSON(w, 400, map[string]string{"message": "malformed request", "detail": "expected membershipStatus {active, evictable}"})
			return
		}
		m.active, m.evictable = *body.Membership.Active, *body.Membership.Evictable
	case "serviceState":
		switch body.ServiceState {
		case "BOOTING", "IN_SERVICE", "UNHEALTHY", "OUT_OF_SERVICE", "UNKNOWN":
			m.service = body.ServiceState
		default:
			writeJSON(w, 400, map[string]string{"message": "malformed request", "detail": "unknown serviceState " + body.ServiceState})
			return
		}
	default:
		writeJSON(w, 404, map[string]string{"message": "no such operation", "detail": action})
		return
	}
	w.WriteHeader(200)
}
