package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/drainctl/drainctl/hack/reqkind"
	"github.com/drainctl/drainctl/ops/sim"
)

// The fleet campaign (-roll): `drainctl --auto roll --parallel P --exec true` over every
// node of a real API server (-roll-nodes, 1,000 by default), each node also a host of the
// simulated Nova with VMs to move. What it costs: requests per node to Kubernetes (counted
// by a proxy in front of the API server), to Nova and to Placement (counted by the
// simulator), the campaign's wall time against its floor (the nodes' own migration times,
// P at a time), and drainctl's RSS over the campaign.

type rollOptions struct {
	nodes, vmsPerNode, podsPerNode, parallel int
	perDest, perSource                       int     // [concurrency] migrations_per_destination, _per_source
	static                                   bool    // [concurrency] static_caps: no pace
	ndjson                                   string  // the campaign's JSON lines are kept here ("": not kept)
	scale                                    float64 // the simulator's seconds per real second
	fault                                    string  // the simulator's faults from the start (sim.FaultSpecHelp)
	dirty                                    float64 // each VM's dirty rate, a share of a move's full copy rate
	tui                                      bool    // a TUI beside the campaign, :campaign open (rolltui.go)
	returnVMs                                bool    // --return-vms: the VMs brought home, counted at the end
	budget                                   string  // [roll] budget: a rate budget the campaign keeps ("": none)
	logs                                     string  // each run's whole logs go here, kept when it fails
	runs                                     int     // campaigns one after the other, each over every node
	slow                                     slowOptions
}

func runRoll(ctx context.Context, o options) error {
	ro := o.roll
	size := worldSize{nodes: ro.nodes, pods: ro.nodes * ro.podsPerNode, namespaces: 10}
	c, cs, err := startWorld(ctx, filepath.Join(o.data, fmt.Sprintf("roll-%d", ro.nodes)), size, o.workers)
	if err != nil {
		return err
	}
	defer c.stop()
	// Only the nodes being rolled are in this world: undo what an interrupted run left.
	if err := uncordonAll(ctx, cs); err != nil {
		return err
	}
	stopKubelet := playKubelet(ctx, cs)
	defer stopKubelet()

	w := sim.NewWorld(sim.Options{Seed: 1, Scale: ro.scale})
	for i := 0; i < ro.nodes; i++ {
		w.AddHost(nodeName(i), 64, 262144, 2000)
	}
	flavor := sim.Flavor{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40}
	for j := 0; j < ro.nodes*ro.vmsPerNode; j++ {
		w.AddServer(fmt.Sprintf("vm-%06d", j), nodeName(j%ro.nodes), flavor)
	}
	if ro.dirty > 0 {
		w.Update(func(_ map[string]*sim.Host, servers map[string]*sim.VM) {
			for _, s := range servers {
				s.DirtyBytesPerSec = ro.dirty * (1 << 30) // the simulator's full copy rate: 1 GiB/s
			}
		})
	}
	if err := w.ApplyFaultSpec(ro.fault); err != nil {
		return err
	}
	srv, err := sim.Serve(w, "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer srv.Close()
	campaign := fmt.Sprintf("bench-%d", time.Now().Unix())
	logs, err := keepLogs(filepath.Join(ro.logs, campaign))
	if err != nil {
		return err
	}
	defer logs.close()
	srv.LogWrites(logs.sim)

	px, err := newCountingProxy(c.cfg)
	if err != nil {
		return err
	}
	defer px.close()
	dir, err := os.MkdirTemp("", "bench-roll")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(px.kubeconfig()), 0o600); err != nil {
		return err
	}
	cfgFile := filepath.Join(dir, "config.toml")
	conf := fmt.Sprintf("[concurrency]\nnodes = %d\nmigrations_per_cluster = %d\nmigrations_per_destination = %d\nmigrations_per_source = %d\n",
		ro.parallel, 2*ro.parallel, ro.perDest, ro.perSource)
	if ro.static {
		conf += "static_caps = true\n"
	}
	// A move stalls after the default minute of the simulator's time, not of ours.
	conf += fmt.Sprintf("[policy]\nstall_after = %q\n", time.Duration(float64(time.Minute)/ro.scale))
	if ro.budget != "" {
		conf += fmt.Sprintf("[roll]\nbudget = [%q]\n", ro.budget)
	}
	if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
		return err
	}

	var tui *tuiBeside
	if ro.tui {
		logf("roll: the TUI beside the campaign, in tmux")
		if tui, err = attachTUI(o, c.kubeconfig, cfgFile, dir, srv.Env()); err != nil {
			return err
		}
		defer tui.close()
	}

	w.ResetStats()
	px.reset()
	logf("roll: %d nodes, --parallel %d, %d VMs and %d pods a node", ro.nodes, ro.parallel, ro.vmsPerNode, ro.podsPerNode)
	args := []string{"--kubeconfig", kubeconfig, "--config", cfgFile, "--auto", "roll",
		"--selector", "node-role.kubernetes.io/compute", "--parallel", fmt.Sprint(ro.parallel), "--exec", "true",
		"--campaign", campaign, "-o", "json"}
	if ro.returnVMs {
		args = append(args, "--return-vms")
	}
	cmd := exec.CommandContext(ctx, o.drainctl, args...)
	cmd.Env = append(os.Environ(), srv.Env()...)
	cmd.Env = append(cmd.Env, "HOME="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = io.MultiWriter(&stderr, logs.stderr)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	rss := sampleRSS(cmd.Process.Pid)
	sampled, stopSampling := make(<-chan []curvePoint), make(chan struct{})
	if ro.slow.at > 0 || ro.slow.curve != "" {
		sampled = slowNova(w, ro.slow, start, stopSampling)
	}
	var lines io.Reader = io.TeeReader(stdout, logs.stdout)
	if ro.ndjson != "" {
		f, err := os.Create(ro.ndjson)
		if err != nil {
			return err
		}
		defer f.Close()
		lines = io.TeeReader(lines, f)
	}
	ended := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if tui != nil {
			tui.watch(ctx, ended)
		}
	}()
	runs, parseErr := readRuns(lines)
	err = cmd.Wait()
	close(ended)
	close(stopSampling)
	<-watched
	wall := time.Since(start)
	peak, mean := rss()
	if err != nil {
		logs.keep()
		return fmt.Errorf("drainctl roll: %v\n%s\n…\n%s\nthe whole logs: %s", err, crash(stderr.String()), tail(stderr.String(), 20), logs.dir)
	}
	if parseErr != nil {
		logs.keep()
		return fmt.Errorf("%w\nthe whole logs: %s", parseErr, logs.dir)
	}

	stats := w.Stats()
	novaReqs, placementReqs := byAPI(stats.ByRoute)
	kubeReqs, byKind := px.counts()
	var floorSum time.Duration
	for _, d := range runs.migrating {
		floorSum += d
	}
	floor := floorSum / time.Duration(ro.parallel)
	n := float64(ro.nodes)
	beside := ""
	if tui != nil {
		beside = "; the TUI beside it, :campaign open (its Nova reads are in the Nova figures)"
	}
	if ro.fault != "" || ro.dirty > 0 {
		beside += fmt.Sprintf("; faults %q, guests dirtying %g of a move's copy rate", ro.fault, ro.dirty)
	}
	if ro.static {
		beside += "; static caps"
	}
	if ro.budget != "" {
		beside += fmt.Sprintf("; rate budget %q", ro.budget)
	}
	fmt.Printf("\nbench-scale -roll (%s): %d nodes on a real kube-apiserver, %d VMs and %d pods a node (simulated Nova, %g× time), --parallel %d, --exec true, migrations_per_destination %d%s; load avg %s\n\n",
		o.drainctl, ro.nodes, ro.vmsPerNode, ro.podsPerNode, ro.scale, ro.parallel, ro.perDest, beside, loadavg())
	fmt.Println("| figure | value | per node |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| nodes done | %d of %d | |\n", runs.done, ro.nodes)
	fmt.Printf("| Kubernetes requests | %d | %.1f |\n", kubeReqs, float64(kubeReqs)/n)
	fmt.Printf("| Nova requests | %d | %.1f |\n", novaReqs, float64(novaReqs)/n)
	fmt.Printf("| Placement requests | %d | %.1f |\n", placementReqs, float64(placementReqs)/n)
	fmt.Printf("| Nova bytes (response bodies) | %.1f MiB | %.1f KiB |\n", float64(stats.Bytes["nova"])/(1<<20), float64(stats.Bytes["nova"])/1024/n)
	fmt.Printf("| Placement bytes | %.1f MiB | %.1f KiB |\n", float64(stats.Bytes["placement"])/(1<<20), float64(stats.Bytes["placement"])/1024/n)
	fmt.Printf("| wall time | %s | %s |\n", secs(wall), secs(wall/time.Duration(ro.nodes)))
	fmt.Printf("| floor: the nodes' own migration times (Σ %s) ÷ %d | %s | wall ÷ floor %.2f× |\n", secs(floorSum), ro.parallel, secs(floor), wall.Seconds()/floor.Seconds())
	fmt.Printf("| the most moves from one source at once (migrations_per_source %d) | %d | |\n", ro.perSource, stats.MaxFromOneSource)
	fmt.Printf("| moves force-completed (stalled: the guest paused for the rest of its copy) | %d | |\n", len(runs.forced))
	fmt.Printf("| the pace's changes said while it held a node's moves | %d | %s |\n", len(runs.paced), paceSaid(runs.paced))
	fmt.Printf("| drainctl RSS over the campaign: peak / mean | %.0f MiB / %.0f MiB | |\n", float64(peak)/(1<<20), float64(mean)/(1<<20))
	home, all := 0, ro.nodes*ro.vmsPerNode
	for j := 0; j < all; j++ {
		if vm, ok := w.ServerByName(fmt.Sprintf("vm-%06d", j)); ok && vm.Host == nodeName(j%ro.nodes) {
			home++
		}
	}
	fmt.Printf("| VMs on the host they began on, at the end (--return-vms %v) | %d of %d | %.1f %% |\n", ro.returnVMs, home, all, 100*float64(home)/float64(all))
	if ro.returnVMs {
		fmt.Printf("| the returns' migrations, summed (beside the campaign: not in the floor) | %s | %s |\n", secs(runs.returning), secs(runs.returning/time.Duration(ro.nodes)))
		// The returns run beside the campaign, not in its slots, so the floor with them is the
		// evacuations' floor and then one node's returns (the last node's cannot begin before
		// its own moves out end): a node's, on the mean.
		withReturns := floor + runs.returning/time.Duration(ro.nodes)
		fmt.Printf("| floor with the returns: the floor, then a node's returns (mean) | %s | wall ÷ floor %.2f× |\n", secs(withReturns), wall.Seconds()/withReturns.Seconds())
	}
	if !runs.halfAt.IsZero() {
		took := runs.end.Sub(runs.halfAt)
		fmt.Printf("| ETA at half the nodes done, against the time the rest took | %s / %s | error %+.0f %% |\n",
			secs(runs.halfETA), secs(took), 100*(runs.halfETA.Seconds()-took.Seconds())/took.Seconds())
	}
	if tui != nil {
		tui.report()
	}
	if ro.slow.at > 0 || ro.slow.curve != "" {
		if err := printCurve(ro.slow, <-sampled); err != nil {
			return err
		}
	}
	fmt.Println()
	fmt.Println("| step | mean time a node |")
	fmt.Println("|---|---|")
	kinds := make([]string, 0, len(runs.steps))
	for k := range runs.steps {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return runs.steps[kinds[i]] > runs.steps[kinds[j]] })
	for _, k := range kinds {
		fmt.Printf("| %s | %s |\n", k, secs(runs.steps[k]/time.Duration(ro.nodes)))
	}
	fmt.Println()
	fmt.Println("| Kubernetes requests by kind | count | per node |")
	fmt.Println("|---|---|---|")
	for _, k := range byKind {
		fmt.Printf("| %s | %d | %.1f |\n", k.name, k.n, float64(k.n)/n)
	}
	fmt.Println()
	moved := runs.movedOut + runs.movedHome
	fmt.Printf("| Nova and Placement requests by route | count | per node | per VM moved (%d) |\n", moved)
	fmt.Println("|---|---|---|---|")
	routes := make([]string, 0, len(stats.ByRoute))
	for r := range stats.ByRoute {
		routes = append(routes, r)
	}
	sort.Slice(routes, func(i, j int) bool { return stats.ByRoute[routes[i]] > stats.ByRoute[routes[j]] })
	for _, r := range routes {
		fmt.Printf("| %s | %d | %.1f | %.2f |\n", r, stats.ByRoute[r], float64(stats.ByRoute[r])/n, float64(stats.ByRoute[r])/float64(max(1, moved)))
	}
	fmt.Printf("| all, Nova and Placement | %d | %.1f | %.2f |\n", novaReqs+placementReqs, float64(novaReqs+placementReqs)/n,
		float64(novaReqs+placementReqs)/float64(max(1, moved)))
	// The floor a VM moved: its action, the polls its own migration needs at the poll interval
	// (a node's migrate step, its VMs moving at once, at 2 s), one read of its record at the end; a node adds
	// its service's disable and enable (a read and a write each), shared by its VMs.
	polls := math.Ceil(floorSum.Seconds() / n / 2)
	perVM := 1 + polls + 1 + 4*n/float64(max(1, moved))
	fmt.Printf("| the floor: 1 action + %.0f poll(s) + 1 read a VM, 4 service calls a node | | | %.2f |\n", polls, perVM)
	if ro.returnVMs {
		fmt.Printf("| VMs moved out / brought home | %d / %d | | |\n", runs.movedOut, runs.movedHome)
	}
	return nil
}

// sampleRSS samples a process's resident memory every 250 ms; the func returns the peak
// and the mean so far.
func sampleRSS(pid int) func() (peak, mean int64) {
	var mu sync.Mutex
	var n, sum, top int64
	go func() {
		for {
			b := rssOf(pid)
			if b == 0 {
				return // gone
			}
			mu.Lock()
			n, sum, top = n+1, sum+b, max(top, b)
			mu.Unlock()
			time.Sleep(250 * time.Millisecond)
		}
	}()
	return func() (int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			return 0, 0
		}
		return top, sum / n
	}
}

// playKubelet finishes the graceful deletion of evicted pods, as the kubelet would (no
// kubelet runs here); the stop func ends it.
func playKubelet(ctx context.Context, cs kubernetes.Interface) func() {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for ctx.Err() == nil {
			wi, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range wi.ResultChan() {
				pod, ok := ev.Object.(*corev1.Pod)
				if ok && ev.Type == watch.Modified && pod.DeletionTimestamp != nil {
					_ = cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, *metav1.NewDeleteOptions(0))
				}
			}
		}
	}()
	return cancel
}

// uncordonAll makes every node schedulable and strips drainctl's marks (a run interrupted
// before, in the kept world).
func uncordonAll(ctx context.Context, cs kubernetes.Interface) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nodes.Items {
		dirty := n.Spec.Unschedulable || len(n.Spec.Taints) > 0
		for k := range n.Annotations {
			dirty = dirty || strings.HasPrefix(k, "drainctl.io/")
		}
		if !dirty {
			continue
		}
		n.Spec.Unschedulable, n.Spec.Taints = false, nil
		for k := range n.Annotations {
			if strings.HasPrefix(k, "drainctl.io/") {
				delete(n.Annotations, k)
			}
		}
		if _, err := cs.CoreV1().Nodes().Update(ctx, &n, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// countingProxy stands between drainctl and the API server and counts its requests; it
// speaks plain HTTP to drainctl and the admin's TLS to the server.
type countingProxy struct {
	srv   *http.Server
	addr  string
	mu    sync.Mutex
	byKey map[string]int
	total atomic.Int64
}

func newCountingProxy(cfg *rest.Config) (*countingProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	tr, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	p := &countingProxy{byKey: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport, rp.FlushInterval = tr, -1  // watches stream
	rp.ErrorLog = log.New(io.Discard, "", 0) // a watch the client closes is no error
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.total.Add(1)
		key := r.Method + " " + reqkind.Of(r)
		p.mu.Lock()
		p.byKey[key]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *countingProxy) kubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: http://%s
contexts:
- name: bench
  context: {cluster: bench, user: bench}
current-context: bench
users:
- name: bench
  user: {}
`, p.addr)
}

func (p *countingProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byKey, _ = map[string]int{}, p.total.Swap(0)
}

type kindCount struct {
	name string
	n    int
}

func (p *countingProxy) counts() (int, []kindCount) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]kindCount, 0, len(p.byKey))
	for k, n := range p.byKey {
		out = append(out, kindCount{k, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n })
	return int(p.total.Load()), out
}

func (p *countingProxy) close() { _ = p.srv.Close() }

func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// crash is what a crashed drainctl said first: its panic or fatal error and the lines after.
func crash(s string) string {
	i := strings.Index(s, "panic: ")
	if j := strings.Index(s, "fatal error: "); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	if i < 0 {
		return ""
	}
	l := strings.Split(s[i:], "\n")
	return strings.Join(l[:min(len(l), 40)], "\n")
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

// paceSaid counts the pace's halvings among what it said, and names one of them.
func paceSaid(said map[string]bool) string {
	halved, example := 0, ""
	for s := range said {
		if strings.HasSuffix(strings.TrimSuffix(s, ")"), "halved") {
			halved++
			if example == "" || s < example {
				example = s
			}
		}
	}
	return fmt.Sprintf("%d halvings; e.g. %s", halved, example)
}
