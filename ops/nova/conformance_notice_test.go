package nova_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/nova"
	"github.com/drainctl/drainctl/ops/sim/novatest"
)

// drainctl's notice to a VM's owner is a key of the server's metadata (#57.3), as both Novas
// keep it: set, read back with the server, removed (a second removal is no error); setting
// it is a change of the server (its updated_at moves: an owner's stays counts from it) and no
// instance action; an admin sets it on a locked server; a cold move awaiting its confirmation
// refuses it (409) until confirmed; a value past 255 bytes is refused (400), and drainctl's
// notice never is.
func TestConformanceAnOwnersNoticeIsServerMetadata(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		id := c.Boot("told-0", "compute-0")
		before, actions := serverOf(t, ctx, cl, id), len(actionsOf(t, c, id))
		c.Wait(5*time.Second, "a second on the cloud's clock", func() bool { return c.Clock().Sub(before.Updated) > time.Second })
		n := model.OwnerNotice{What: "live-migration", By: "campaign " + strings.Repeat("r", 300), Told: c.Clock()}
		n.At = n.Told.Add(30 * time.Minute)
		must(t, cl.SetMetadata(ctx, id, model.NoticeKey, n.String()))
		told := serverOf(t, ctx, cl, id)
		if got, ok := model.ParseOwnerNotice(told.Notice); !ok || !got.Told.Equal(n.Told.Truncate(time.Second)) || got.What != n.What {
			t.Fatalf("the notice read back: %q (%+v); want the one set, %q", told.Notice, got, n.String())
		}
		if !told.Updated.After(before.Updated) {
			t.Errorf("updated_at %v after the notice, %v before: want it moved", told.Updated, before.Updated)
		}
		if now := len(actionsOf(t, c, id)); now != actions {
			t.Errorf("%d instance actions after the notice, %d before: want none made", now, actions)
		}
		must(t, cl.DeleteMetadata(ctx, id, model.NoticeKey))
		if s := serverOf(t, ctx, cl, id); s.Notice != "" {
			t.Errorf("the notice after its removal: %q", s.Notice)
		}
		must(t, cl.DeleteMetadata(ctx, id, model.NoticeKey)) // gone already: no error

		if st, text := c.API.Do("POST", "compute", "/servers/"+id+"/metadata",
			map[string]any{"metadata": map[string]string{model.NoticeKey: strings.Repeat("x", 256)}}, nil); st != 400 {
			t.Errorf("a value of 256 bytes: %d %s; want 400", st, text)
		}
		c.MustAction(id, map[string]any{"lock": map[string]any{"locked_reason": "owner says hands off"}})
		must(t, cl.SetMetadata(ctx, id, model.NoticeKey, n.String())) // the test's user is an admin
		c.MustAction(id, map[string]any{"unlock": nil})

		must(t, cl.ColdMigrate(ctx, id, ""))
		c.Wait(60*time.Second, "VERIFY_RESIZE", func() bool { return serverOf(t, ctx, cl, id).Phase == model.PhaseAwaitingConfirm })
		err := cl.DeleteMetadata(ctx, id, model.NoticeKey)
		if !nova.IsStatus(err, 409) || !strings.Contains(err.Error(), "resized") {
			t.Errorf("removing the notice in VERIFY_RESIZE: %v; want Nova's 409 naming vm_state resized", err)
		}
		if err := cl.SetMetadata(ctx, id, model.NoticeKey, n.String()); !nova.IsStatus(err, 409) {
			t.Errorf("setting the notice in VERIFY_RESIZE: %v; want Nova's 409", err)
		}
		must(t, cl.ConfirmResize(ctx, id))
		c.Wait(60*time.Second, "the move confirmed", func() bool {
			s := serverOf(t, ctx, cl, id)
			return s.Phase == model.PhaseRunning && s.TaskState == ""
		})
		must(t, cl.DeleteMetadata(ctx, id, model.NoticeKey))
	})
}

// actionsOf lists a server's instance actions by name.
func actionsOf(t *testing.T, c *novatest.Cloud, id string) []string {
	t.Helper()
	var out struct {
		InstanceActions []struct{ Action string } `json:"instanceActions"`
	}
	c.API.Must("GET", "compute", "/servers/"+id+"/os-instance-actions", nil, &out, 200)
	var names []string
	for _, a := range out.InstanceActions {
		names = append(names, a.Action)
	}
	return names
}

// A move's request ID is its instance action's (#57.3: what an owner sees in openstack server
// event list is what drainctl's report names): the ID Nova answered a live and a cold move
// with is the request_id of the server's newest live-migration and migrate actions.
func TestConformanceAMovesRequestIsItsInstanceAction(t *testing.T) {
	novatest.Each(t, func(t *testing.T, c *novatest.Cloud) {
		ctx, cl := context.Background(), drainctlClient(t, c)
		live, cold := c.Boot("req-live", "compute-0"), c.Boot("req-cold", "compute-0")
		must(t, cl.LiveMigrate(ctx, live, ""))
		must(t, cl.ColdMigrate(ctx, cold, ""))
		c.Wait(60*time.Second, "both moved", func() bool {
			return serverOf(t, ctx, cl, live).Host != "compute-0" && serverOf(t, ctx, cl, cold).Phase == model.PhaseAwaitingConfirm
		})
		for id, action := range map[string]string{live: "live-migration", cold: "migrate"} {
			req := cl.ActionRequest(id)
			if !strings.HasPrefix(req, "req-") || requestOf(t, c, id, action) != req {
				t.Errorf("%s: drainctl's request %q, the instance action's %q", action, req, requestOf(t, c, id, action))
			}
		}
		// The proof a revert or a confirm of a journaled cold move asks: the newest cold move
		// of the server is the request drainctl journaled; another request (a colleague's)
		// made since is the newest then.
		if last, err := cl.LastColdAction(ctx, cold); err != nil || last.Action != "migrate" || last.RequestID != cl.ActionRequest(cold) ||
			last.UserID == "" {
			t.Errorf("the newest cold action of req-cold: %+v, %v; want drainctl's request %s, with its user", last, err,
				cl.ActionRequest(cold))
		}
		must(t, cl.ConfirmResize(ctx, cold))
		c.WaitServer(cold, 60*time.Second, "req-cold confirmed", func(s novatest.Server) bool { return s.Status == "ACTIVE" && s.Task() == "" })
		ours := cl.ActionRequest(cold)
		c.MustAction(cold, map[string]any{"migrate": nil}) // a colleague's, by its own request
		if last, err := cl.LastColdAction(ctx, cold); err != nil || last.RequestID == ours || !strings.HasPrefix(last.RequestID, "req-") {
			t.Errorf("after a colleague's cold move: the newest cold action %+v, %v; want theirs, not drainctl's %s", last, err, ours)
		}
		c.Wait(60*time.Second, "the colleague's move waiting", func() bool { return serverOf(t, ctx, cl, cold).Phase == model.PhaseAwaitingConfirm })
		must(t, cl.ConfirmResize(ctx, cold))
	})
}

// requestOf is the request ID of the server's newest instance action named action.
func requestOf(t *testing.T, c *novatest.Cloud, id, action string) string {
	t.Helper()
	var out struct {
		InstanceActions []struct {
			Action    string
			RequestID string `json:"request_id"`
		} `json:"instanceActions"`
	}
	c.API.Must("GET", "compute", "/servers/"+id+"/os-instance-actions", nil, &out, 200)
	for _, a := range out.InstanceActions { // newest first
		if a.Action == action {
			return a.RequestID
		}
	}
	return ""
}
