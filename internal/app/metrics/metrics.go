// Package metrics exports the engine's work as Prometheus metrics for the daemon modes.
package metrics

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// Metrics counts what the engine reports.
type Metrics struct {
	reg        *prometheus.Registry
	migrations *prometheus.CounterVec
	duration   prometheus.Histogram
	bytes      prometheus.Counter
	evictions  *prometheus.CounterVec
	operations *prometheus.CounterVec
	notices    *prometheus.CounterVec
	recoveries *prometheus.CounterVec
	storms     prometheus.Counter
	fenceErr   prometheus.Counter
	vmsRunning prometheus.Histogram
	webhookErr prometheus.Counter
	vmsLeft    prometheus.Counter
	leader     *prometheus.GaugeVec
	paused     prometheus.Gauge
	ready      atomic.Bool
}

// New registers drainctl's metrics.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(),
		migrations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drainctl_migrations_total",
			Help: "Live migrations by state reached: requested, completed, failed, aborted."}, []string{"state"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "drainctl_migration_duration_seconds",
			Help: "Time from request to completion of live migrations.", Buckets: prometheus.ExponentialBuckets(1, 2, 14)}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "drainctl_migration_bytes_total",
			Help: "Memory bytes copied by completed live migrations."}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drainctl_pod_evictions_total",
			Help: "Pod evictions by outcome: gone, blocked (a PDB refusal), failed."}, []string{"outcome"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drainctl_operations_total",
			Help: "Operations by kind and result."}, []string{"op", "result"}),
		notices: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drainctl_notices_total",
			Help: "Notices for the person on call by kind (storm, recovery-started, recovery-done, fence-failed, " +
				"campaign-finished...)."}, []string{"kind"}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drainctl_recoveries_total",
			Help: "Automatic recoveries by outcome: done, failed, refused (its plan blocked: nothing changed)."}, []string{"outcome"}),
		storms: prometheus.NewCounter(prometheus.CounterOpts{Name: "drainctl_recovery_storms_total",
			Help: "Storms seen: more compute nodes unhealthy than [recover] max_unhealthy; nothing fenced."}),
		fenceErr: prometheus.NewCounter(prometheus.CounterOpts{Name: "drainctl_fence_failures_total",
			Help: "Fence commands that did not prove a machine off (after their retries): the recovery stopped."}),
		vmsRunning: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "drainctl_recovery_vms_running_seconds",
			Help:    "Time from a node's NotReady to every VM its automatic recovery rebuilt running elsewhere.",
			Buckets: prometheus.ExponentialBuckets(15, 2, 10)}),
		webhookErr: prometheus.NewCounter(prometheus.CounterOpts{Name: "drainctl_webhook_failures_total",
			Help: "Notices the [notify] webhook did not take (after its retries, or dropped from a full queue)."}),
		vmsLeft: prometheus.NewCounter(prometheus.CounterOpts{Name: "drainctl_vms_left_total",
			Help: "VMs an operation left on their node: they stay (a blocker overridden, their policy), restarted in place, not moved."}),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "drainctl_leader",
			Help: "1 while this process leads its election (the controller, the daemon of every node), 0 while it waits."},
			[]string{"election"}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{Name: "drainctl_recovery_paused_since_timestamp_seconds",
			Help: "When automatic recovery was paused (its pause record's time, Unix seconds); 0 while it is not."}),
	}
	m.reg.MustRegister(m.all()...)
	return m
}

// all are the metrics registered, in the reference's order.
func (m *Metrics) all() []prometheus.Collector {
	return []prometheus.Collector{m.migrations, m.duration, m.bytes, m.evictions, m.operations, m.notices, m.recoveries,
		m.storms, m.fenceErr, m.vmsRunning, m.webhookErr, m.vmsLeft, m.leader, m.paused}
}

// Notice counts a notice, and what it tells of recoveries.
func (m *Metrics) Notice(n model.Notice) {
	m.notices.WithLabelValues(string(n.Kind)).Inc()
	switch n.Kind {
	case model.NoticeRecoveryDone, model.NoticeRecoveryFailed, model.NoticeRecoveryRefused:
		m.recoveries.WithLabelValues(strings.TrimPrefix(string(n.Kind), "recovery-")).Inc()
	case model.NoticeStorm:
		m.storms.Inc()
	case model.NoticeFenceFailed:
		m.fenceErr.Inc()
	}
	if n.VMsRunningAfter > 0 {
		m.vmsRunning.Observe(n.VMsRunningAfter.Seconds())
	}
}

// Leading says whether this process leads its election now.
func (m *Metrics) Leading(election string, yes bool) {
	v := 0.0
	if yes {
		v = 1
	}
	m.leader.WithLabelValues(election).Set(v)
}

// RecoveryPaused says since when automatic recovery is paused (zero: it is not).
func (m *Metrics) RecoveryPaused(since time.Time) {
	if since.IsZero() {
		m.paused.Set(0)
		return
	}
	m.paused.Set(float64(since.Unix()))
}

// WebhookFailed counts a notice the webhook did not take.
func (m *Metrics) WebhookFailed() { m.webhookErr.Inc() }

// Observe counts one event; use it as (part of) the engine's emit function.
func (m *Metrics) Observe(ev ops.Event) {
	switch e := ev.(type) {
	case ops.MigrationEvent:
		if e.Method != "" && !ops.MoveFactsOf(e.Method).Copies { // a cold move or a rebuild is no live migration
			return
		}
		switch e.State {
		case ops.MigRequested, ops.MigCompleted, ops.MigFailed, ops.MigAborted:
			m.migrations.WithLabelValues(string(e.State)).Inc()
		}
	case ops.PodEvent:
		switch e.State {
		case ops.PodGone, ops.PodBlocked, ops.PodFailed:
			m.evictions.WithLabelValues(string(e.State)).Inc()
		}
	case ops.RunDone:
		m.operations.WithLabelValues(string(e.Report.Op), string(e.Report.Result)).Inc()
		m.vmsLeft.Add(float64(len(e.Report.Left)))
		for _, v := range e.Report.VMs {
			if v.Result == ops.MigCompleted && ops.MoveFactsOf(v.Method).Copies {
				m.duration.Observe(v.Duration.Seconds())
				m.bytes.Add(float64(v.Bytes))
			}
		}
	case ops.PlanReady, ops.StepEvent, ops.NodeChanged, ops.CampaignEvent:
	}
}

// SetReady marks the daemon ready (inventory synced, serving).
func (m *Metrics) SetReady(ok bool) { m.ready.Store(ok) }

// Handler serves /metrics, /healthz and /readyz.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !m.ready.Load() {
			http.Error(w, "not ready\n", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	return mux
}
