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
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`drainctl_recoveries_total{outcome="done"} 1`, `drainctl_recoveries_total{outcome="failed"} 1`,
		`drainctl_recovery_storms_total 1`, `drainctl_fence_failures_total 1`,
		`drainctl_notices_total{kind="recovery-started"} 2`,
		`drainctl_recovery_vms_running_seconds_count 1`, `drainctl_recovery_vms_running_seconds_sum 75`,
		`drainctl_migrations_total{state="completed"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
}
