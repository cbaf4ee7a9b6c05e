package sim

import (
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"time"
)

// CloudPool is a simulated cloudpool backend (shared/cloudpool-api.md): machines that can be
// listed and terminated, and a desired size.
type CloudPool struct {
	URL string

	mu       sync.Mutex
	machines map[string]string // id -> machineState
	order    []string
	desired  int
	srv      *http.Server
}

// ServeCloudPool starts a pool holding the given machine ids, all RUNNING.
func ServeCloudPool(ids ...string) (*CloudPool, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &CloudPool{URL: "http://" + ln.Addr().String(), machines: map[string]string{}, order: ids, desired: len(ids)}
	for _, id := range ids {
		p.machines[id] = "RUNNING"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pool", p.pool)
	mux.HandleFunc("GET /pool/size", p.size)
	mux.HandleFunc("POST /pool/{id}/terminate", p.terminate)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

// Close stops the pool.
func (p *CloudPool) Close() { p.srv.Close() }

// State is a machine's state ("" when unknown).
func (p *CloudPool) State(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.machines[id]
}

// Desired is the pool's desired size.
func (p *CloudPool) Desired() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.desired
}

func (p *CloudPool) pool(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ms []map[string]any
	for _, id := range p.order {
		ms = append(ms, map[string]any{"id": id, "machineState": p.machines[id], "serviceState": "IN_SERVICE",
			"membershipStatus": map[string]bool{"active": true, "evictable": true}, "cloudProvider": "OpenStack",
			"machineSize": "m1.xlarge", "publicIps": []string{}, "privateIps": []string{}, "metadata": map[string]any{}})
	}
	writeJSON(w, 200, map[string]any{"timestamp": time.Now().UTC().Format(time.RFC3339), "machines": ms})
}

func (p *CloudPool) size(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	active := 0
	for _, st := range p.machines {
		if st == "RUNNING" || st == "PENDING" || st == "REQUESTED" {
			active++
		}
	}
	writeJSON(w, 200, map[string]int{"desiredSize": p.desired, "allocated": active, "active": active})
}

func (p *CloudPool) terminate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Decrement bool `json:"decrementDesiredSize"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, 400, map[string]string{"message": "malformed request", "detail": err.Error()})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id := r.PathValue("id")
	if st, ok := p.machines[id]; !ok || st == "TERMINATED" {
		writeJSON(w, 404, map[string]string{"message": "not a member of the pool", "detail": id})
		return
	}
	p.machines[id] = "TERMINATED"
	if body.Decrement && p.desired > 0 {
		p.desired--
	}
	w.WriteHeader(200)
}
