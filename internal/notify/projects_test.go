package notify_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drainctl/drainctl/internal/notify"
	"github.com/drainctl/drainctl/internal/notify/notifytest"
	"github.com/drainctl/drainctl/model"
)

// [notify.projects]: an owner told ahead is posted to their own project's webhook, and to no
// other's, without the operator's token (DRAINCTL_WEBHOOK_TOKEN is set: the project's
// server refuses any Authorization); a project with none is posted nowhere; only an owner's
// notice goes there. A project's URL with a credential in it is refused, naming the project.
func TestAnOwnerIsToldAtTheirProjectsOwnWebhook(t *testing.T) {
	t.Setenv("DRAINCTL_WEBHOOK_TOKEN", "operators-t0ken")
	a, b := notifytest.Start(t, ""), notifytest.Start(t, "")
	hooks, err := notify.NewProjects(model.NotifyConfig{Projects: map[string]string{"proj-a": a.URL, "proj-b": b.URL}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hooks.Run(ctx)
	told := model.Notice{Kind: model.NoticeMaintenanceEvent, VM: "web-0", Project: "proj-a", Node: "c0",
		Message: "live-migration at 2026-11-29T15:30:00Z, by campaign roll-1; told 2026-11-29T15:00:00Z"}
	hooks.Notify(told)
	hooks.Notify(model.Notice{Kind: model.NoticeMaintenanceEvent, VM: "db-0", Project: "proj-c", Message: "x"})
	hooks.Notify(model.Notice{Kind: model.NoticeRecoveryStarted, Project: "proj-a", Message: "an operator's"})
	deadline := time.Now().Add(10 * time.Second)
	for len(a.Told()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // anything else would have come by now
	if got := a.Told(); len(got) != 1 || got[0].VM != "web-0" || got[0].Message != told.Message || got[0].Kind != model.NoticeMaintenanceEvent {
		t.Errorf("proj-a's webhook heard %+v; want web-0's notice alone", got)
	}
	if got := b.Told(); len(got) != 0 {
		t.Errorf("proj-b's webhook heard %+v; want nothing", got)
	}
	_, err = notify.NewProjects(model.NotifyConfig{Projects: map[string]string{"proj-a": "https://user:pw@hooks.example/x"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "proj-a") || strings.Contains(err.Error(), "pw") {
		t.Errorf("a project's URL with a credential: %v; want refused, naming the project, never the password", err)
	}
}

// A project's webhook is a tenant's URL posted to from the operator's network: the cloud's
// metadata service and every link-local address are refused, and plain http off this machine;
// a webhook that cannot be reached is said by its host alone, never its path (often its secret).
func TestAProjectsWebhookReachesNoMetadataServiceNorSaysItsPath(t *testing.T) {
	for _, raw := range []string{"http://169.254.169.254/latest/meta-data", "https://169.254.169.254/x", "https://[fe80::1]/x",
		"http://hooks.example.com/x", "https://0.0.0.0/x", "ftp://hooks.example.com/x"} {
		if _, err := notify.NewProjects(model.NotifyConfig{Projects: map[string]string{"proj-a": raw}}, nil); err == nil ||
			!strings.Contains(err.Error(), "proj-a") {
			t.Errorf("%s: %v; want refused, naming the project", raw, err)
		}
	}
	var mu sync.Mutex
	var failed []string
	hooks, err := notify.NewProjects(model.NotifyConfig{Projects: map[string]string{
		"proj-a": "http://127.0.0.1:1/hooks/s3cret-path-token"}}, func(_ model.Notice, err error) {
		mu.Lock()
		failed = append(failed, err.Error())
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hooks.Run(ctx)
	hooks.Notify(model.Notice{Kind: model.NoticeMaintenanceEvent, VM: "web-0", Project: "proj-a", Message: "x"})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(failed)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 1 || strings.Contains(failed[0], "s3cret") || !strings.Contains(failed[0], "127.0.0.1:1") {
		t.Errorf("the failure said %q; want the host, never the path", failed)
	}
}
