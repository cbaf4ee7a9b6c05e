package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/model"
)

// A machine is taken for dead from signals that do not share a failure: its node NotReady for
// not_ready_for, its kubelet's Lease (kube-node-lease) not renewed and its nova-compute's
// report (os-services updated_at) not updated for heartbeat_timeout. Each counts on
// drainctl's own clock, from the pass that first saw its value: a backdated NotReady, or a
// skewed clock, makes no machine dead sooner than drainctl has watched it stand still (the
// NotReady's own timestamp must say so too). A controller that restarts watches afresh
// (slower, never sooner).

// beat is one signal as automatic recovery watches it: its value, and when drainctl first
// saw that value, on its own clock.
type beat struct {
	value time.Time
	seen  time.Time
}

// still is how long drainctl has seen the signal stand still.
func (b beat) still(now time.Time) time.Duration { return now.Sub(b.seen) }

// watched are the signals of every node automatic recovery looks at, by key.
type watched map[string]beat

// observe records the signal's value as read now and returns it with when it was first seen.
func (w watched) observe(key string, value, now time.Time) beat {
	b, ok := w[key]
	if !ok || !b.value.Equal(value) {
		b = beat{value: value, seen: now}
		w[key] = b
	}
	return b
}

// deadFor says why the node is not proven dead by its signals ("": it is), and how long
// until it could be (0: not by waiting). kubelet is its kubelet Lease's renewTime (found:
// the node has one; a cluster without node leases leaves the Ready condition alone).
// A nova-compute that drainctl saw stop reporting long before the node's kubelet (stuck) is
// a hung agent whose VMs may well run, not a dead machine.
func (r *Recoverer) deadFor(n model.Node, kubelet time.Time, found bool, now time.Time, cfg model.RecoverConfig) (why string, wait time.Duration, stuck bool) {
	notReadyFor, quiet := cfg.NotReadyFor.D(), cfg.HeartbeatTimeout.D()
	nr := r.beats.observe("notready/"+n.Name, n.Kube.ReadySince, now)
	if s := min(nr.still(now), now.Sub(n.Kube.ReadySince)); s < notReadyFor {
		return fmt.Sprintf("NotReady for %s (since %s by its condition; drainctl has seen this outage since %s); not_ready_for is %s",
			s.Round(time.Second), n.Kube.ReadySince.UTC().Format(time.RFC3339), nr.seen.UTC().Format(time.RFC3339), notReadyFor), notReadyFor - s, false
	}
	stopped := nr.seen // when drainctl saw the node stop: its kubelet's last renewal seen, else its NotReady
	if found {
		kb := r.beats.observe("kubelet/"+n.Name, kubelet, now)
		if s := kb.still(now); s < quiet {
			return fmt.Sprintf("its kubelet renewed its Lease within %s (its renewTime %s): the machine runs (a kubelet that cannot post its status, a partition); nothing is fenced",
				s.Round(time.Second), kubelet.UTC().Format(time.RFC3339)), quiet - s, false
		}
		stopped = kb.seen
	}
	cb := r.beats.observe("compute/"+n.Host, n.Compute.UpdatedAt, now)
	if s := cb.still(now); s < quiet {
		return fmt.Sprintf("nova-compute on %s reported within %s: the machine runs", n.Host, s.Round(time.Second)), quiet - s, false
	}
	// "Long before": more than either of the durations that make a machine gone.
	if stopped.Sub(cb.seen) > max(quiet, notReadyFor) {
		return fmt.Sprintf("nova-compute on %s stopped reporting %s before the node did (drainctl saw its last report at %s, the node's last sign at %s): a hung agent whose VMs may still run, not a dead machine; nothing is fenced: a person's",
			n.Host, stopped.Sub(cb.seen).Round(time.Second), cb.seen.UTC().Format(time.RFC3339), stopped.UTC().Format(time.RFC3339)), 0, true
	}
	return "", 0, false
}

// watchHeartbeats reads every kubelet's Lease and every nova-compute's report, and each
// node's NotReady from the cache, and observes them; it returns the kubelets' renewTimes by
// node.
func (r *Recoverer) watchHeartbeats(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	kubelets, err := r.Engine.KubeletHeartbeats(ctx)
	if err != nil {
		return nil, err
	}
	services, err := r.Engine.ComputeServices(ctx, "")
	if err != nil {
		return nil, err
	}
	for node, renew := range kubelets {
		r.beats.observe("kubelet/"+node, renew, now)
	}
	for _, s := range services {
		r.beats.observe("compute/"+s.Host, s.UpdatedAt, now)
	}
	for _, k := range r.Engine.KubeNodes() { // the cache: free
		if !k.Ready {
			r.beats.observe("notready/"+k.Name, k.ReadySince, now)
		}
	}
	return kubelets, nil
}
