package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
)

// A machine is taken for dead from two heartbeats that do not share a failure, both stood
// still for heartbeat_timeout: its kubelet's Lease (kube-node-lease) not renewed, counted on
// drainctl's own clock from the renewal it last saw (a watch: seen as it is made); and its
// nova-compute's report (os-services updated_at) not updated, counted on Nova's clock (its
// API's Date less updated_at) and never longer than drainctl has read it unchanged. Neither
// waits for the node lifecycle controller's NotReady (40-50 s) nor Nova's service_down_time
// (60 s): the fence proves the machine off, and recover forces nova-compute down. A node with
// no Lease is dead by its NotReady instead, held for not_ready_for on drainctl's clock from
// the pass that first saw it (and by its timestamp). A backdated timestamp or a skewed clock
// makes no machine dead sooner than drainctl has watched it stand still; a controller that
// restarts watches afresh (slower, never sooner).

// beat is one signal as automatic recovery watches it: its value, when drainctl first saw
// that value, and when it last read the one before (the value came after that read), all on
// drainctl's own clock.
type beat struct {
	value time.Time
	seen  time.Time
	since time.Time // the last read that saw the value before (zero: none)
	last  time.Time // the last read
}

// still is how long drainctl has seen the signal stand still.
func (b beat) still(now time.Time) time.Duration { return now.Sub(b.seen) }

// silent bounds a service's silence on the cloud's clock by drainctl's: the value is no older
// than the last read that did not see it.
func (b beat) silent(now time.Time, cloud time.Duration) time.Duration {
	bound := now.Sub(b.seen)
	if !b.since.IsZero() {
		bound = now.Sub(b.since)
	}
	return min(cloud, bound)
}

// watched are the signals of every node automatic recovery looks at, by key.
type watched map[string]beat

// observe records the signal's value as read now and returns it with when it was first seen.
func (w watched) observe(key string, value, now time.Time) beat {
	b, ok := w[key]
	if !ok || !b.value.Equal(value) {
		b = beat{value: value, seen: now, since: b.last}
	}
	b.last = now
	w[key] = b
	return b
}

// kubelets are the kubelets' Lease renewals as the watch tells them (its goroutine writes,
// the pass reads).
type kubelets struct {
	mu    sync.Mutex
	beats watched
}

// renewed observes a renewal (a zero time: the Lease is gone with its Node, and a node that
// is no more is not watched as one that went silent).
func (k *kubelets) renewed(node string, renew, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if renew.IsZero() {
		delete(k.beats, node)
		return
	}
	k.beats.observe(node, renew, now)
}

// listed observes a whole list of the renewals: the Leases not in it are gone.
func (k *kubelets) listed(list map[string]time.Time, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for node := range k.beats {
		if _, ok := list[node]; !ok {
			delete(k.beats, node)
		}
	}
	for node, renew := range list {
		k.beats.observe(node, renew, now)
	}
}

// of is the node's kubelet heartbeat (found: it has a Lease).
func (k *kubelets) of(node string) (beat, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	b, ok := k.beats[node]
	return b, ok
}

// silentNow are the nodes whose kubelet has not renewed for quiet, and how soon the next one
// would be (0: none has a Lease).
func (k *kubelets) silentNow(now time.Time, quiet time.Duration) (silent map[string]bool, next time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	silent = map[string]bool{}
	for node, b := range k.beats {
		if left := quiet - b.still(now); left <= 0 {
			silent[node] = true
		} else if next == 0 || left < next {
			next = left
		}
	}
	return silent, next
}

// deadFor says why the node is not proven dead by its signals ("": it is), and how long
// until it could be (0: not by waiting). A nova-compute that stopped reporting long before
// the node's kubelet (stuck) is a hung agent whose VMs may well run, not a dead machine.
func (r *Recoverer) deadFor(n model.Node, now time.Time, cfg model.RecoverConfig) (why string, wait time.Duration, stuck bool) {
	notReadyFor, quiet := cfg.NotReadyFor.D(), cfg.HeartbeatTimeout.D()
	var stopped time.Time // when drainctl saw the machine stop: its kubelet's last renewal, else its NotReady
	if kb, found := r.kubelets.of(n.Name); found {
		if s := kb.still(now); s < quiet {
			why := fmt.Sprintf(
				"its kubelet renewed its Lease %s ago, within heartbeat_timeout (%s; its renewTime %s)",
				s.Round(time.Second),
				quiet,
				kb.value.UTC().Format(time.RFC3339),
			)
			if !n.Kube.Ready {
				why += ": the machine runs (a kubelet that cannot post its status, a partition); nothing is fenced"
			}
			return why, quiet - s, false
		}
		stopped = kb.seen
	} else {
		if n.Kube.Ready {
			return "Ready", 0, false
		}
		nr := r.beats.observe("notready/"+n.Name, n.Kube.ReadySince, now)
		if s := min(nr.still(now), now.Sub(n.Kube.ReadySince)); s < notReadyFor {
			return fmt.Sprintf("NotReady for %s (since %s by its condition; drainctl has seen this outage since %s); not_ready_for is %s",
				s.Round(time.Second), n.Kube.ReadySince.UTC().Format(time.RFC3339), nr.seen.UTC().Format(time.RFC3339),
				notReadyFor), notReadyFor - s, false
		}
		stopped = nr.seen
	}
	cb, read := r.beats["compute/"+n.Host]
	if !read {
		return "nova-compute on " + n.Host + " has not been read yet", time.Second, false
	}
	silent := cb.silent(now, n.Compute.Silent)
	if silent < quiet {
		return fmt.Sprintf(
			"nova-compute on %s reported %s ago, within heartbeat_timeout (%s): the machine may run",
			n.Host,
			silent.Round(time.Second),
			quiet,
		), quiet - silent, false
	}
	// "Long before": more than either of the durations that make a machine gone.
	if reported := now.Add(-silent); stopped.Sub(reported) > max(quiet, notReadyFor) {
		return fmt.Sprintf(
			"nova-compute on %s stopped reporting %s before the node did (its last report at %s, the node's last sign at %s): a "+
				"hung agent whose VMs may still run, not a dead machine; nothing is fenced: a person's",
			n.Host,
			stopped.Sub(reported).Round(time.Second),
			reported.UTC().Format(time.RFC3339),
			stopped.UTC().Format(time.RFC3339),
		), 0, true
	}
	return "", 0, false
}

// watchKubelets starts the watch of the kubelets' Leases once: every renewal is seen as it is
// made. Until it runs (an identity that may not watch them), each pass lists them instead.
func (r *Recoverer) watchKubelets(ctx context.Context) error {
	if r.kubeletsWatched {
		return nil
	}
	var err error
	if time.Since(r.watchTried) >= time.Minute { // a watch that failed is tried again, not every pass
		r.watchTried = time.Now()
		err = r.Engine.WatchKubeletHeartbeats(ctx, func(node string, renew time.Time) { r.kubelets.renewed(node, renew, r.Engine.Now()) })
		if err == nil {
			r.kubeletsWatched = true
			return nil
		}
		r.Log("automatic recovery: the kubelets' Leases are read each pass, not watched (a renewal is seen a pass late): " + err.Error())
	}
	list, lerr := r.Engine.KubeletHeartbeats(ctx)
	if lerr != nil {
		return lerr
	}
	r.kubelets.listed(list, r.Engine.Now())
	return nil
}

// observeComputes observes every nova-compute's report as read now: on a pass that has a node
// to judge (from its read of the cluster), and every resync while none has (so that a
// report's age is bounded by a read of drainctl's own, and a nova-compute that stopped long
// before its node is known).
func (r *Recoverer) observeComputes(services []model.ComputeService, now time.Time) {
	for _, s := range services {
		r.beats.observe("compute/"+s.Host, s.UpdatedAt, now)
	}
	r.computesRead = now
}
