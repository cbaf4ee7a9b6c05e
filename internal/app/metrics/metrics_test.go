package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// What automatic recovery tells is counted by kind and outcome, with the time to VMs running;
// a rebuild is no live migration.
func TestRecoveryMetrics(t *testing.T) {
	m := New()
	for _, n := range []model.Notice{{Kind: model.NoticeStorm}, {Kind: model.NoticeRecoveryStarted}, {Kind: model.NoticeFenceFailed},
		{Kind: model.NoticeRecoveryFailed}, {Kind: model.NoticeRecoveryStarted}, {Kind: model.NoticeRecoveryDone, VMsRunningAfter: 75 * time.Second}} {
		m.Notice(n)
	}
	m.Observe(ops.NewMigrationEvent(time.Now(), "n", ops.MigrationEvent{Method: model.MoveRebuild, State: ops.MigCompleted}))
	m.Observe(ops.NewMigrationEvent(time.Now(), "n", ops.MigrationEvent{Method: model.MoveLive, State: ops.MigCompleted}))
	body := scrape(t, m)
	for _, want := range []string{
		`drainctl_recoveries_total{outcome="done"} 1`, `drainctl_recoveries_total{outcome="failed"} 1`,
		`drainctl_recovery_storms_total 1`, `drainctl_fence_failures_total 1`,
		`drainctl_notices_total{kind="recovery-started"} 2`,
		`drainctl_recovery_vms_running_seconds_count 1`, `drainctl_recovery_vms_running_seconds_sum 75`,
		`drainctl_migrations_total{state="completed"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
}

// What the alerts read besides the counts: whether this process leads, since when automatic
// recovery is paused, and the VMs an operation left on their node.
func TestLeaderPauseAndVMsLeft(t *testing.T) {
	m := New()
	m.Leading("drainctl-controller", false)
	m.RecoveryPaused(time.Unix(1_800_000_000, 0))
	m.Observe(ops.RunDone{Report: ops.Report{Op: model.OpEvacuate, Result: ops.ResultDone,
		Left: []string{"db-0: stays (its policy)", "db-1: restarted in place"}}})
	body := scrape(t, m)
	for _, want := range []string{`drainctl_leader{election="drainctl-controller"} 0`,
		`drainctl_recovery_paused_since_timestamp_seconds 1.8e+09`, `drainctl_vms_left_total 2`,
		`drainctl_operations_total{op="evacuate",result="done"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
	m.Leading("drainctl-controller", true)
	m.RecoveryPaused(time.Time{})
	body = scrape(t, m)
	for _, want := range []string{`drainctl_leader{election="drainctl-controller"} 1`, `drainctl_recovery_paused_since_timestamp_seconds 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
}

// scrape is what Prometheus reads of /metrics.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}
