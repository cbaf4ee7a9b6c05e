// Package metrics exports the engine's work as Prometheus metrics for the daemon modes.
package metrics

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
	webhookErr prometheus.Counter
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
		notices: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "drainctl_recovery_notices_total",
			Help: "Automatic recovery's notices by kind: storm, recovery-started, recovery-done, recovery-failed, recovery-refused."}, []string{"kind"}),
		webhookErr: prometheus.NewCounter(prometheus.CounterOpts{Name: "drainctl_webhook_failures_total",
			Help: "Notices the [notify] webhook did not take (after its retries, or dropped from a full queue)."}),
	}
	m.reg.MustRegister(m.migrations, m.duration, m.bytes, m.evictions, m.operations, m.notices, m.webhookErr)
	return m
}

// Notice counts one of automatic recovery's notices.
func (m *Metrics) Notice(kind string) { m.notices.WithLabelValues(kind).Inc() }

// WebhookFailed counts a notice the webhook did not take.
func (m *Metrics) WebhookFailed() { m.webhookErr.Inc() }

// Observe counts one event; use it as (part of) the engine's emit function.
func (m *Metrics) Observe(ev ops.Event) {
	switch e := ev.(type) {
	case ops.MigrationEvent:
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
		for _, v := range e.Report.VMs {
			if v.Result == ops.MigCompleted {
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
