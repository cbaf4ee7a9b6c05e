// Command benchscale measures drainctl against k9s on one real kube-apiserver holding a
// large cluster (5,000 Ready nodes, 150,000 Running pods by default), both run in tmux at
// the same size, and prints one table. It asserts nothing: it measures and prints.
//
//	make bench-scale    (builds the envtest binaries, k9s and drainctl, then runs this)
//
// The world is kept in -data (etcd's files): a second run measures again without building it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

type options struct {
	data, drainctl, k9s string
	size                worldSize
	vms, workers        int
	width, height       int
	worldOnly, hold     bool
	novaOnly            bool
	rollOnly            bool
	roll                rollOptions
	rssOnly             bool
	baseline            string
	rssRounds           int
	rssRest             time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.data, "data", ".bench", "directory for etcd's data (the world is kept) and the kubeconfig")
	flag.StringVar(&o.drainctl, "drainctl", "dist/drainctl", "the drainctl binary")
	flag.StringVar(&o.k9s, "k9s", ".bench/bin/k9s", "the k9s binary (hack/k9s.sh builds it); empty: drainctl alone")
	flag.IntVar(&o.size.nodes, "nodes", 5000, "Ready nodes")
	flag.IntVar(&o.size.pods, "pods", 150000, "Running pods, spread evenly over the nodes")
	flag.IntVar(&o.size.namespaces, "namespaces", 50, "namespaces the pods are spread over")
	flag.IntVar(&o.vms, "vms", 50000, "VMs in the simulated Nova (one hypervisor per node)")
	flag.IntVar(&o.workers, "workers", 48, "concurrent requests while building the world")
	flag.IntVar(&o.width, "width", 160, "terminal columns")
	flag.IntVar(&o.height, "height", 45, "terminal rows")
	flag.BoolVar(&o.worldOnly, "world-only", false, "build the world and stop")
	flag.BoolVar(&o.hold, "hold", false, "build the world and keep the API server up (until interrupted), to look at it by hand")
	flag.BoolVar(&o.novaOnly, "nova-at-rest", false, "only what an idle TUI asks of Nova and Placement (no API server)")
	flag.BoolVar(&o.rssOnly, "rss", false, "only the TUI's memory, by the user's method and the bench's, beside -baseline's, alternating")
	flag.StringVar(&o.baseline, "baseline", "", "-rss: the drainctl binary to compare with")
	flag.IntVar(&o.rssRounds, "rss-rounds", 3, "-rss: launches of each binary")
	flag.DurationVar(&o.rssRest, "rss-rest", 0, "-rss: the resident set also this long after the pod counts show (10m: at rest)")
	flag.BoolVar(&o.rollOnly, "roll", false, "only the fleet campaign: --auto roll over -roll-nodes nodes (a world of its own)")
	flag.IntVar(&o.roll.nodes, "roll-nodes", 1000, "nodes (and Nova hosts) the campaign rolls")
	flag.IntVar(&o.roll.vmsPerNode, "roll-vms", 2, "VMs on each node's host")
	flag.IntVar(&o.roll.podsPerNode, "roll-pods", 4, "pods on each node")
	flag.StringVar(&o.roll.ndjson, "roll-ndjson", "", "keep the campaign's -o json lines in this file")
	flag.StringVar(&o.roll.budget, "roll-budget", "", "[roll] budget of the campaign (\"10% per 30s\"): its ETA held to the rest's time under it")
	flag.StringVar(&o.roll.logs, "roll-logs", ".bench/roll-logs", "each campaign's whole logs (drainctl's output, the simulator's writes) go here, kept when it fails")
	flag.IntVar(&o.roll.runs, "roll-runs", 1, "campaigns one after the other (each over every node); how many finished every node is printed")
	flag.IntVar(&o.roll.parallel, "roll-parallel", 20, "--parallel of the campaign (and [concurrency] nodes)")
	flag.IntVar(&o.roll.perSource, "roll-per-source", 1, "[concurrency] migrations_per_source (1, the default)")
	flag.BoolVar(&o.roll.static, "roll-static", false, "[concurrency] static_caps = true: the caps alone, no pace (its baseline)")
	flag.IntVar(&o.roll.perDest, "roll-per-dest", 2, "[concurrency] migrations_per_destination (2, the default: drainctl picks destinations; ≥ --parallel: Nova's scheduler does)")
	flag.BoolVar(&o.roll.tui, "roll-tui", false, "the TUI beside the campaign in tmux, :campaign open: its keys timed, idle and during")
	flag.BoolVar(&o.roll.returnVMs, "roll-return", false, "--return-vms: how many VMs end on the host they began on")
	flag.DurationVar(&o.roll.slow.at, "roll-slow-at", 0, "Nova's API slowed this long after the campaign began (0: never): the pace's curve")
	flag.DurationVar(&o.roll.slow.lasts, "roll-slow-for", time.Minute, "how long Nova's API stays slowed")
	flag.DurationVar(&o.roll.slow.p99, "roll-slow-p99", 5*time.Second, "the slowed API's 99th percentile of added latency")
	flag.DurationVar(&o.roll.slow.perMove, "roll-slow-per-move", 0,
		"the slowed API's mean added latency for each move under way, instead of -roll-slow-p99 (a load the campaign makes)")
	flag.StringVar(&o.roll.slow.curve, "roll-curve", "", "write the pace's curve (a markdown table) to this file")
	flag.StringVar(&o.roll.fault, "roll-fault", "", "the simulated Nova's faults from the start, as --demo-fault takes them (shared-link=4)")
	flag.Float64Var(&o.roll.dirty, "roll-dirty", 0, "each VM dirties its memory at this share of a move's full copy rate (0.3: a crowded link never converges)")
	flag.Float64Var(&o.roll.scale, "roll-scale", 10, "the simulator's seconds per real second (a live migration of 4 GiB: 0.4 s)")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, o options) error {
	if o.novaOnly {
		return runNovaAtRest(ctx, o)
	}
	if o.rollOnly {
		return runRolls(ctx, o)
	}
	c, cs, err := startWorld(ctx, o.data, o.size, o.workers)
	if err != nil {
		return err
	}
	defer c.stop()
	if o.hold {
		logf("the API server is up: KUBECONFIG=%s; ^C stops it", c.kubeconfig)
		<-ctx.Done()
	}
	if o.worldOnly || o.hold {
		return nil
	}
	if o.rssOnly {
		if _, err := listAllPods(ctx, cs); err != nil { // the watch cache filled, as below
			return err
		}
		return runRSS(ctx, o, c)
	}
	// The API server's watch cache fills after it starts: the first tool would wait for it.
	// One full read of every pod first, timed: the floor of any tool's first read.
	floor, err := listAllPods(ctx, cs)
	if err != nil {
		return fmt.Errorf("reading every pod once: %w", err)
	}
	logf("every pod read once (protobuf, from the watch cache) in %s", secs(floor))
	t := &table{load: []string{loadavg()}}
	t.add("reference: every pod read once by a plain client (protobuf, pages of 5,000)", note("–"), dur(floor, nil), "the floor of a first read")
	if err := measureTUIs(ctx, o, c, t); err != nil {
		return err
	}
	if err := measureHeadless(ctx, o, c, t); err != nil {
		return err
	}
	if err := measureNova(ctx, o, c, t); err != nil {
		return err
	}
	t.load = append(t.load, loadavg())
	t.print(o)
	return nil
}

// loadavg is the machine's load (1, 5, 15 min) as /proc/loadavg has it.
func loadavg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// table holds the figures, one row per measure, one column per tool.
type table struct {
	rows []tableRow
	load []string
}

type tableRow struct {
	figure        string
	k9s, drainctl cell
	target        string
}

// cell is one figure: its value in a unit for ratios, its text for the table.
type cell struct {
	v    float64
	unit string
	text string
}

func note(s string) cell { return cell{text: s} }

func dur(d time.Duration, err error) cell {
	switch {
	case err != nil:
		return note("failed")
	case d == 0:
		return note("–")
	case d < time.Second:
		return cell{float64(d) / 1e6, "ms", fmt.Sprintf("%.0f ms", float64(d)/1e6)}
	}
	return cell{float64(d) / 1e6, "ms", fmt.Sprintf("%.1f s", d.Seconds())}
}

func mib(b int64, err error) cell {
	if err != nil || b == 0 {
		return dur(0, err)
	}
	return cell{float64(b), "B", fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))}
}

func pct(f float64, err error) cell {
	if err != nil {
		return note("failed")
	}
	return cell{f, "cpu", fmt.Sprintf("%.1f %%", 100*f)}
}

func ratio(a, b cell) string {
	if a.unit == "" || a.unit != b.unit || b.v <= 0 || a.v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f×", a.v/b.v)
}

// secs is a duration as the table writes it ("123 ms", "3.4 s").
func secs(d time.Duration) string { return dur(d, nil).text }

func (t *table) add(figure string, k9s, drainctl cell, target string) {
	t.rows = append(t.rows, tableRow{figure, k9s, drainctl, target})
}

func (t *table) print(o options) {
	if o.novaOnly {
		fmt.Printf("\nbench-scale -nova-at-rest: %d hosts, %d VMs in the simulated Nova and Placement; %d cores (GOMAXPROCS); load avg before %s, after %s\n\n",
			o.size.nodes, o.vms, runtime.NumCPU(), t.load[0], t.load[len(t.load)-1])
	} else {
		fmt.Printf("\nbench-scale: %d nodes, %d pods on a real kube-apiserver; terminal %dx%d; %d cores (GOMAXPROCS); load avg before %s, after %s\n\n",
			o.size.nodes, o.size.pods, o.width, o.height, runtime.NumCPU(), t.load[0], t.load[len(t.load)-1])
	}
	fmt.Println("| figure | k9s | drainctl | k9s ÷ drainctl | target (drainctl) |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range t.rows {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.figure, r.k9s.text, r.drainctl.text, ratio(r.k9s, r.drainctl), r.target)
	}
}
