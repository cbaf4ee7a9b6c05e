// Package proxy is drainctl's cloudpool proxy (kubeaware-cloudpool-proxy's mode): it speaks
// the cloudpool REST API (shared/cloudpool-api.md) to an autoscaler that presents its token,
// and forwards the API's documented requests to a backend pool as they came, except the two
// that shrink the pool. Those pick
// victims with the scale-down policy (pods and VMs must fit elsewhere), empty each one with
// the engine, delete its Node and only then let the backend terminate the machine.
//
// One scale-down runs at a time; a request arriving meanwhile is answered 503 with what is
// in progress. A scale-down belongs to the proxy, not to the request that asked for it: a
// client that goes away does not stop it half-way (the proxy's own shutdown does, at a safe
// point, recorded on the node like any interrupted operation).
package proxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drainctl/drainctl/internal/controllers/cloudpool"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/policy"
	"github.com/drainctl/drainctl/text"
)

// Options configure a proxy.
type Options struct {
	Backend        string        // the backend cloudpool's base URL ([cloudpool] url)
	BackendTimeout time.Duration // per backend request ([cloudpool] backend_timeout, default 300 s)
	Run            ops.RunOptions
	// MinSize and MaxSize bound the desired size a client may ask for ([cloudpool] min_size,
	// max_size; 0 leaves MaxSize unbounded): beyond them the request is a 400.
	MinSize, MaxSize int
	// MaxScaleDown bounds the nodes one request removes, MaxScaleDownPerHour those removed in
	// any hour ([cloudpool] max_scale_down, max_scale_down_per_hour; 0: the defaults, 1 and 4):
	// a caller, even an authenticated one gone wrong, empties the pool no faster.
	MaxScaleDown, MaxScaleDownPerHour int
	Emit                              func(ops.Event)               // progress of the scale-downs (logs, metrics)
	Logf                              func(format string, a ...any) // what the proxy decides, one line each
	// Token is the bearer token every caller presents (Authorization: Bearer …, from [cloudpool]
	// proxy_token_file); "" serves without one, which drainctl allows on a loopback address only.
	Token string
}

// Proxy serves the cloudpool API in front of a backend pool.
type Proxy struct {
	engine  *ops.Engine
	pool    *cloudpool.Client
	forward *httputil.ReverseProxy
	o       Options
	life    context.Context // scale-downs live as long as the proxy, not as their request

	mu      sync.Mutex
	busy    string          // what the scale-down in progress is doing; "" when idle
	orphans map[string]bool // machine -> decrement: its Node is gone but its termination failed
	removed []time.Time     // when each node was removed, the last hour's
	wg      sync.WaitGroup
}

// New makes a proxy whose scale-downs stop when life ends.
func New(life context.Context, engine *ops.Engine, o Options) (*Proxy, error) {
	target, err := url.Parse(o.Backend)
	if err != nil || target.Scheme == "" || target.Host == "" {
		return nil, &ops.UsageError{Problem: fmt.Sprintf("[cloudpool] url %q is not an http(s) URL", cloudpool.Redacted(o.Backend)),
			Hint: "set [cloudpool] url in config.toml to the backend pool, e.g. http://cloudpool:9010"}
	}
	if o.BackendTimeout == 0 {
		o.BackendTimeout = 300 * time.Second
	}
	o.MaxScaleDown, o.MaxScaleDownPerHour = cmp.Or(o.MaxScaleDown, 1), cmp.Or(o.MaxScaleDownPerHour, 4)
	if o.Emit == nil {
		o.Emit = func(ops.Event) {}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.ResponseHeaderTimeout = o.BackendTimeout
	p := &Proxy{engine: engine, pool: cloudpool.New(o.Backend, o.BackendTimeout), o: o, life: life, orphans: map[string]bool{}}
	p.forward = &httputil.ReverseProxy{
		// Rewrite without SetXForwarded: the backend sees the request as the client sent it.
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, http.StatusBadGateway, "the backend cloudpool did not answer", err.Error())
		},
	}
	return p, nil
}

// forwarded are the cloudpool API's documented requests the backend answers as they came
// (shared/cloudpool-api.md); any other is refused, never forwarded.
var forwarded = []string{
	"GET /pool", "GET /pool/size", "GET /pool/metadata",
	"POST /pool/{id}/detach", "POST /pool/{id}/attach", "POST /pool/{id}/membershipStatus", "POST /pool/{id}/serviceState",
	"GET /config", "POST /config", "POST /start", "POST /stop", "GET /status",
}

// Handler routes the API, its callers authenticated: the two scale-down requests to the
// proxy, the rest of the documented API to the backend, nothing else anywhere.
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /pool/size", p.setSize)
	mux.HandleFunc("POST /pool/{id}/terminate", p.terminate)
	for _, route := range forwarded {
		mux.Handle(route, p.forward)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not a request of the cloudpool API",
			fmt.Sprintf("%s %q: the proxy serves the API's documented requests only", r.Method, r.URL.Path))
	})
	return p.authenticate(mux)
}

// Wait blocks until the scale-downs in progress have stopped (after life ends, at their
// next safe point).
func (p *Proxy) Wait() { p.wg.Wait() }

// setSize is POST /pool/size: below the number of active machines that have a node, a
// scale-down; otherwise the backend's business.
func (p *Proxy) setSize(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var msg struct {
		DesiredSize *int `json:"desiredSize"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.DesiredSize == nil || *msg.DesiredSize < 0 {
		writeError(w, http.StatusBadRequest, "malformed setDesiredSize request", `expected {"desiredSize": n} with n >= 0`)
		return
	}
	want := *msg.DesiredSize
	if want < p.o.MinSize || (p.o.MaxSize > 0 && want > p.o.MaxSize) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("desired size %d is outside the pool's limits", want),
			fmt.Sprintf("[cloudpool] min_size = %d, max_size = %d (0: no maximum)", p.o.MinSize, p.o.MaxSize))
		return
	}
	if _, ok := p.begin(w, r, fmt.Sprintf("setting the desired size to %d", want)); !ok {
		return
	}
	// Every active machine counts, with a node or not (one still booting): a shrink below
	// them would let the backend choose which to terminate, perhaps a hypervisor full of VMs.
	// drainctl chooses and empties the victims instead, among the machines with a node.
	active, err := p.activeMachines(r.Context())
	if err != nil {
		p.end()
		writeFailure(w, err)
		return
	}
	if want >= active {
		defer p.end()
		p.o.Logf("desired size %d >= %d active machines: forwarded", want, active)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.forward.ServeHTTP(w, r)
		return
	}
	excess := active - want
	if why := p.bounded(excess); why != "" {
		p.end()
		p.o.Logf("desired size %d < %d active machines: refused: %s", want, active, why)
		w.Header().Set("Retry-After", "600")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("removing %d node(s) is refused", excess), why)
		return
	}
	p.o.Logf("desired size %d < %d active machines: removing %d node(s)", want, active, excess)
	p.detach(w, r, func(ctx context.Context) error { return p.scaleDown(ctx, excess) })
}

// terminate is POST /pool/{id}/terminate: the machine's node must be a safe victim; it is
// emptied and deleted before the backend terminates the machine.
func (p *Proxy) terminate(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var msg struct {
		Decrement bool `json:"decrementDesiredSize"`
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &msg); err != nil {
			writeError(w, http.StatusBadRequest, "malformed terminateMachine request", `expected {"decrementDesiredSize": true|false}`)
			return
		}
	}
	id := r.PathValue("id")
	pairs, ok := p.begin(w, r, "terminating machine "+id)
	if !ok {
		return
	}
	var pr *pair
	for i := range pairs {
		if pairs[i].machine.ID == id {
			pr = &pairs[i]
		}
	}
	if pr == nil {
		// Not a member, or a machine without a node (booting, or its node already removed):
		// nothing in Kubernetes to protect, so the backend decides.
		defer p.end()
		p.o.Logf("terminate %s: no Kubernetes node on this machine: forwarded", id)
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.forward.ServeHTTP(w, r)
		return
	}
	if reasons := pr.reasons(); len(reasons) > 0 && !pr.ours(p.engine.Holder()) {
		p.end()
		p.o.Logf("terminate %s refused: node %s is not a safe victim", id, pr.victim.Node)
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("machine %s (node %s) cannot be terminated safely", id, pr.victim.Node),
			describe([]pair{*pr}))
		return
	}
	if why := p.bounded(1); why != "" && !pr.ours(p.engine.Holder()) { // one of ours half-done is finished
		p.end()
		p.o.Logf("terminate %s refused: %s", id, why)
		w.Header().Set("Retry-After", "600")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("terminating machine %s is refused", id), why)
		return
	}
	p.detach(w, r, func(ctx context.Context) error { return p.remove(ctx, *pr, msg.Decrement, "") })
}

// begin claims the one scale-down slot (or answers 503 with what holds it) and reads the
// pool and the ranking. On false the request is answered and the slot free.
func (p *Proxy) begin(w http.ResponseWriter, r *http.Request, what string) ([]pair, bool) {
	p.mu.Lock()
	if p.busy != "" {
		busy := p.busy
		p.mu.Unlock()
		w.Header().Set("Retry-After", "30")
		writeError(w, http.StatusServiceUnavailable, "a scale-down is in progress: try again when it ends", busy)
		return nil, false
	}
	p.busy = what
	p.mu.Unlock()
	pairs, err := p.pairs(r.Context())
	if err != nil {
		p.end()
		writeFailure(w, err)
		return nil, false
	}
	return pairs, true
}

func (p *Proxy) status(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy = what
}

func (p *Proxy) end() { p.status("") }

// detach runs job on the proxy's lifetime and answers the request with its outcome, unless
// the client left first: then the job goes on and only the answer is lost.
func (p *Proxy) detach(w http.ResponseWriter, r *http.Request, job func(context.Context) error) {
	done := make(chan error, 1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.end()
		done <- job(p.life)
	}()
	select {
	case err := <-done:
		if err != nil {
			p.o.Logf("%s %s failed: %v", r.Method, r.URL.Path, err)
			writeFailure(w, err)
			return
		}
		w.WriteHeader(http.StatusOK)
	case <-r.Context().Done():
		p.o.Logf("%s %s: the client went away; the scale-down goes on to a safe end", r.Method, r.URL.Path)
	}
}

// scaleDown removes excess nodes one at a time, re-ranking after each: every removal
// changes where the next victim's pods and VMs can go.
func (p *Proxy) scaleDown(ctx context.Context, excess int) error {
	if err := p.retryOrphans(ctx); err != nil {
		return err
	}
	for i := range excess {
		pairs, err := p.pairs(ctx)
		if err != nil {
			return err
		}
		v, ok := pick(pairs, p.engine.Holder())
		if !ok {
			msg := "no node can be removed safely"
			if i > 0 {
				msg = fmt.Sprintf("removed %d of %d nodes; no further node can be removed safely", i, excess)
			}
			return &refusal{message: msg, detail: describe(pairs)}
		}
		if err := p.remove(ctx, v, true, fmt.Sprintf(" (%d of %d)", i+1, excess)); err != nil {
			return err
		}
	}
	return nil
}

// remove empties the victim's node (VMs and pods), deletes the Node and terminates its
// machine. A rerun resumes: every step is skipped when already done.
func (p *Proxy) remove(ctx context.Context, v pair, decrement bool, of string) error {
	p.status(fmt.Sprintf("removing node %s, machine %s%s", v.victim.Node, v.machine.ID, of))
	p.o.Logf("removing node %s (machine %s)%s", v.victim.Node, v.machine.ID, of)
	t := &terminator{p: p, id: v.machine.ID, decrement: decrement}
	if _, err := p.engine.ScaleDown(ctx, v.victim.Node, p.o.Run, t, p.o.Emit); err != nil {
		return err
	}
	p.o.Logf("node %s removed, machine %s terminated", v.victim.Node, v.machine.ID)
	p.mu.Lock()
	p.removed = append(p.removed, time.Now())
	p.mu.Unlock()
	return nil
}

// terminator terminates one machine after its Node was deleted. If that fails the machine
// has no node left to pair with, so the proxy remembers it and retries first next time.
type terminator struct {
	p         *Proxy
	id        string
	decrement bool
}

func (t *terminator) TerminateNode(ctx context.Context, _, _ string) (string, error) {
	err := t.p.pool.Terminate(ctx, t.id, t.decrement)
	t.p.mu.Lock()
	defer t.p.mu.Unlock()
	if err != nil && !isStatus(err, http.StatusNotFound) {
		t.p.orphans[t.id] = t.decrement
		return t.id, err
	}
	delete(t.p.orphans, t.id)
	return t.id, nil
}

// retryOrphans terminates the machines whose Node a failed scale-down already deleted.
func (p *Proxy) retryOrphans(ctx context.Context) error {
	p.mu.Lock()
	ids := make([]string, 0, len(p.orphans))
	for id := range p.orphans {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		p.mu.Lock()
		dec := p.orphans[id]
		p.mu.Unlock()
		p.o.Logf("terminating machine %s, whose node an earlier scale-down removed", id)
		if _, err := (&terminator{p: p, id: id, decrement: dec}).TerminateNode(ctx, "", ""); err != nil {
			return err
		}
	}
	return nil
}

// pair is an active machine and the node on it, with the node's ranking.
type pair struct {
	machine cloudpool.Machine
	victim  policy.Victim
	journal *ops.Journal
}

// reasons are why the pair cannot go: the policy's, and a machine the pool protects.
func (pr pair) reasons() []model.Reason {
	rs := pr.victim.Reasons
	if !pr.machine.MembershipStatus.Evictable {
		rs = append(rs[:len(rs):len(rs)], model.Reason{Code: model.MachineNotEvictable, Severity: model.Blocks, Object: pr.victim.Node,
			Message: fmt.Sprintf("machine %s is not evictable in the cloudpool (membershipStatus.evictable=false)", pr.machine.ID)})
	}
	if !pr.victim.Candidate && len(rs) == 0 {
		rs = append(
			rs,
			model.Reason{Code: model.ProtectedNode, Severity: model.Blocks, Object: pr.victim.Node, Message: "not a scale-down candidate"},
		)
	}
	return rs
}

// ours reports whether the node carries an unfinished evacuation of this holder's.
func (pr pair) ours(holder string) bool {
	j := pr.journal
	return j != nil && j.Holder == holder && ops.RowOf(j.Op).Empties && j.Phase != ops.PhaseDone && j.Phase != ops.PhaseAborted
}

// pairs reads the pool and ranks the nodes: each allocated machine with its node. Machines
// without a node and nodes without a machine are left out.
func (p *Proxy) pairs(ctx context.Context) ([]pair, error) {
	machines, err := p.pool.Machines(ctx)
	if err != nil {
		return nil, err
	}
	allocated := machines[:0]
	for _, m := range machines {
		if m.Allocated() {
			allocated = append(allocated, m)
		}
	}
	victims, inv, err := p.engine.Recommend(ctx, p.o.Run.Policy, true)
	if err != nil {
		return nil, err
	}
	byName := map[string]model.Node{}
	for _, n := range inv.Nodes {
		byName[n.Name] = n
	}
	var out []pair
	for _, v := range victims {
		n := byName[v.Node]
		if n.Kube == nil {
			continue
		}
		m, ok := cloudpool.MachineFor(allocated, n.Kube.Name, n.Kube.ProviderID)
		if !ok {
			continue
		}
		pr := pair{machine: m, victim: v}
		if j, ok := ops.ReadJournal(*n.Kube); ok {
			pr.journal = &j
		}
		out = append(out, pr)
	}
	return out, nil
}

// pick is the cheapest safe victim, except that a node this proxy left half-done (stopped
// by a shutdown, its journal under our name) is finished first: the policy counts a node
// with a recorded operation as held, but it is ours to resume, and the engine's plan checks
// it again before anything moves.
func pick(pairs []pair, holder string) (pair, bool) {
	var best *pair
	for i := range pairs {
		pr := &pairs[i]
		if !pr.machine.Active() {
			continue // an inactive machine is already being replaced: not the pool's to shrink
		}
		if pr.ours(holder) {
			return *pr, true
		}
		if best == nil && len(pr.reasons()) == 0 {
			best = pr // pairs are in rank order: cheapest first
		}
	}
	if best == nil {
		return pair{}, false
	}
	return *best, true
}

// activeMachines counts the pool's active machines, with a node or without.
func (p *Proxy) activeMachines(ctx context.Context) (int, error) {
	machines, err := p.pool.Machines(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range machines {
		if m.Active() {
			n++
		}
	}
	return n, nil
}

// describe lists every node's reasons, one node per line.
func describe(pairs []pair) string {
	if len(pairs) == 0 {
		return "no active machine of the pool has a Kubernetes node"
	}
	var b strings.Builder
	for _, pr := range pairs {
		rs := pr.reasons()
		if len(rs) == 0 {
			continue
		}
		msgs := make([]string, len(rs))
		for i, r := range rs {
			msgs[i] = text.Reason(r)
		}
		fmt.Fprintf(&b, "%s (machine %s): %s\n", pr.victim.Node, pr.machine.ID, strings.Join(msgs, "; "))
	}
	return strings.TrimSpace(b.String())
}
