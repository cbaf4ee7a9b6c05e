package controllers_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/ops"
)

// The promises a night keeps, each a function of what the simulator and the API server show
// (never of what drainctl says). Each is broken once by a planted fault in docs/testing.md's
// table, and the fixed seeds catch every one.

// checkServers: every server exists, once, on a host of the world, never ERROR unless the
// schedule broke it.
func (n *night) checkServers(when string, before int) {
	all := n.World.Servers()
	n.mu.Lock()
	n.checks++
	n.mu.Unlock()
	if len(all) != before {
		n.breaks("count "+when, fmt.Sprintf("%s: %d servers, %d before the night", when, len(all), before))
	}
	for _, s := range all {
		if _, ok := n.World.Host(s.Host); !ok {
			n.breaks("host "+s.Name, fmt.Sprintf("%s: %s on %q, no host of the world", when, s.Name, s.Host))
		}
		if s.Status == "ERROR" && !n.injected[s.Name] {
			n.breaks("error "+s.Name, fmt.Sprintf("%s: %s in ERROR (%s)", when, s.Name, s.Fault))
		}
	}
}

// checkFences: a machine is fenced only while both its heartbeats are dead, once an outage.
// A fence within a second of a dead machine's comeback is a race no check can close: it counts
// as the outage's.
func (n *night) checkFences(when string) {
	data, _ := os.ReadFile(n.marks)
	type broken struct{ key, promise string }
	var found []broken
	defer func() {
		for _, b := range found {
			n.breaks(b.key, b.promise)
		}
	}()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.checks++
	n.fences = 0
	perOutage := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		node, at, ok := strings.Cut(line, " ")
		m := n.machines[node]
		if !ok || m == nil {
			continue
		}
		ns, _ := strconv.ParseInt(at, 10, 64)
		fenced := time.Unix(0, ns)
		n.fences++
		hb, i := m.at(fenced)
		if (hb.kubelet || hb.nova) && i > 0 && fenced.Sub(hb.at) < time.Second {
			if prev := m.changes[i-1]; !prev.kubelet && !prev.nova { // a comeback's race: the outage before it
				hb, i = prev, i-1
			}
		}
		if hb.kubelet || hb.nova {
			found = append(found, broken{"fence " + line, fmt.Sprintf("%s: %s fenced at %s while alive (kubelet %v, nova-compute %v since %s)",
				when, node, fenced.Format("15:04:05.000"), hb.kubelet, hb.nova, hb.at.Format("15:04:05.000"))})
			continue
		}
		perOutage[fmt.Sprintf("%s (outage from %s)", node, m.changes[i].at.Format("15:04:05.000"))]++
	}
	for k, count := range perOutage {
		if count > 1 {
			found = append(found, broken{"fences " + k, fmt.Sprintf("%s: %s fenced %d times", when, k, count)})
		}
	}
}

// watchCaps samples the moves under way: drainctl's (the colleague's aside) never more than
// the caps per source, per destination and in the cloud.
func (n *night) watchCaps(ctx context.Context) {
	cfg := n.Cfg.Concurrency
	for ctx.Err() == nil {
		from, to, all := map[string]int{}, map[string]int{}, 0
		under := n.World.MovesUnderWay()
		n.mu.Lock()
		n.checks++
		n.busiest = max(n.busiest, len(under))
		n.mu.Unlock()
		for _, m := range under {
			n.mu.Lock()
			theirs := n.handMove[m.ID]
			n.mu.Unlock()
			if theirs || m.Kind == "evacuation" { // a dead host's rebuilds have their own bound
				continue
			}
			from[m.Source]++
			to[m.Dest]++
			all++
		}
		for h, k := range from {
			if k > cfg.MigrationsPerSource {
				n.breaks("from "+h, fmt.Sprintf("%s: %d moves from %s at once (migrations_per_source %d)", time.Now().Format("15:04:05.000"), k, h,
					cfg.MigrationsPerSource))
			}
		}
		for h, k := range to {
			if k > cfg.MigrationsPerDestination {
				n.breaks("to "+h, fmt.Sprintf("%s: %d moves to %s at once (migrations_per_destination %d)", time.Now().Format("15:04:05.000"), k, h,
					cfg.MigrationsPerDestination))
			}
		}
		if all > cfg.MigrationsPerCluster {
			n.breaks("cluster", fmt.Sprintf("%d moves at once (migrations_per_cluster %d)", all, cfg.MigrationsPerCluster))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkRecords: once the night is over, every node is in service, or cordoned with drainctl's
// record on it saying why (its journal, or its recovery's record).
func (n *night) checkRecords() {
	n.mu.Lock()
	n.checks++
	n.mu.Unlock()
	for _, node := range n.nodes {
		k, err := n.CS.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			n.breaks("read "+node, fmt.Sprintf("at the end: %s: %v", node, err))
			continue
		}
		if !k.Spec.Unschedulable {
			continue
		}
		_, journal := k.Annotations[ops.JournalAnnotation]
		_, recovered := n.recovery(node)
		if !journal && !recovered {
			n.breaks("record "+node, fmt.Sprintf("at the end: %s cordoned with no record of drainctl's saying why", node))
		}
	}
}
