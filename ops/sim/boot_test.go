package sim

import (
	"testing"
	"time"
)

// A boot answers as a real Nova's does (server-create-response.json), and lands where Nova's
// scheduler would put it: a 2.74 "host" runs the filters; an admin's forced host ("nova:HOST")
// skips them and boots; neither boots on a disabled service (Placement's
// COMPUTE_STATUS_DISABLED: ERROR, NoValidHost, the host null). The conformance suite
// (ops/nova) holds the same body to a real Nova.
func TestBootingAsNovaBoots(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	w.AddImage("img-1")
	w.AddFlavor("c1.tiny", Flavor{Name: "c1.tiny", RAMMB: 256, VCPUs: 1, DiskGB: 1})
	w.AddNetwork("net-1")
	w.Update(func(h map[string]*Host, _ map[string]*VM) { h["compute-1"].Enabled = false })
	boot := func(mv, extra string) (int, map[string]any) {
		return rawDo(t, srv, "POST", "/servers", mv, `{"server":{"name":"probe","imageRef":"img-1","flavorRef":"c1.tiny","networks":[{"uuid":"net-1"}]`+extra+`}}`)
	}

	code, body := boot("2.74", `,"host":"compute-1"`)
	if code != 202 {
		t.Fatalf("boot with a 2.74 host: %d %v", code, body)
	}
	sameKeys(t, "server create", sample(t, "server-create-response.json")["server"], body["server"])
	requested := body["server"].(map[string]any)["id"].(string)

	code, body = boot("2.93", `,"availability_zone":"nova:compute-1"`)
	if code != 202 {
		t.Fatalf("boot on a forced host: %d %v", code, body)
	}
	forcedOnDisabled := body["server"].(map[string]any)["id"].(string)
	_, got := rawGet(t, srv, "/servers/"+forcedOnDisabled, "2.93")
	if s := got["server"].(map[string]any); s["status"] != "ERROR" || s["OS-EXT-SRV-ATTR:host"] != nil {
		t.Errorf("a forced host on a disabled service: %v on %v", s["status"], s["OS-EXT-SRV-ATTR:host"])
	}
	w.Update(func(h map[string]*Host, _ map[string]*VM) { h["compute-1"].Enabled = true })
	code, body = boot("2.93", `,"availability_zone":"nova:compute-1"`)
	if code != 202 {
		t.Fatalf("boot on a forced host: %d %v", code, body)
	}
	forced := body["server"].(map[string]any)["id"].(string)

	_, got = rawGet(t, srv, "/servers/"+forced, "2.93")
	if s := got["server"].(map[string]any); s["status"] != "BUILD" || s["OS-EXT-STS:task_state"] != "spawning" || s["OS-EXT-SRV-ATTR:host"] != "compute-1" {
		t.Errorf("a forced boot just asked: %v %v on %v", s["status"], s["OS-EXT-STS:task_state"], s["OS-EXT-SRV-ATTR:host"])
	}
	if code, out := rawDo(t, srv, "POST", "/servers/"+forced+"/action", "2.93", `{"os-getConsoleOutput":{"length":5}}`); code != 200 || out["output"] != "" {
		t.Errorf("console of a server spawning: %d %v", code, out)
	}
	w.Clock().Advance(5 * time.Second)
	_, got = rawGet(t, srv, "/servers/"+forced, "2.93")
	if s := got["server"].(map[string]any); s["status"] != "ACTIVE" {
		t.Errorf("the forced boot after 5 s: %v", s["status"])
	}
	if code, out := rawDo(t, srv, "POST", "/servers/"+forced+"/action", "2.93", `{"os-getConsoleOutput":{"length":1}}`); code != 200 || out["output"] != "probe login:\n" {
		t.Errorf("console of an ACTIVE server, last line: %d %q", code, out["output"])
	}

	_, got = rawGet(t, srv, "/servers/"+requested, "2.93")
	if s := got["server"].(map[string]any); s["status"] != "ERROR" || s["fault"].(map[string]any)["message"] != "No valid host was found. " {
		t.Errorf("a 2.74 host on a disabled service: %v %v", s["status"], s["fault"])
	}

	if code, out := boot("2.73", `,"host":"compute-2"`); code != 400 {
		t.Errorf("a host below 2.74: %d %v", code, out)
	}
	if code, _ := boot("2.93", `,"host":"compute-9"`); code != 400 {
		t.Errorf("an unknown host: %d", code)
	}
	if code, _ := rawDo(t, srv, "DELETE", "/servers/"+forced, "2.93", ""); code != 204 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := rawGet(t, srv, "/servers/"+forced, "2.93"); code != 404 {
		t.Errorf("a deleted server: %d", code)
	}
}

// os-stop and os-start as Nova's compute API answers them: 202, the task (powering-off,
// powering-on) until the guest has stopped or started; a stop of a stopped server, or a start
// of a running one, 409 naming the vm_state (check_instance_state).
func TestPowerActionsAsNovaAnswersThem(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	vm, _ := w.ServerByName("demo-0")
	path := "/servers/" + vm.ID + "/action"
	if code, body := rawDo(t, srv, "POST", path, "2.93", `{"os-start":null}`); code != 409 ||
		body["conflictingRequest"].(map[string]any)["message"] != "Cannot 'start' instance "+vm.ID+" while it is in vm_state active" {
		t.Errorf("start of a running server: %d %v", code, body)
	}
	if code, _ := rawDo(t, srv, "POST", path, "2.93", `{"os-stop":null}`); code != 202 {
		t.Fatalf("stop: %d", code)
	}
	_, got := rawGet(t, srv, "/servers/"+vm.ID, "2.93")
	if s := got["server"].(map[string]any); s["status"] != "ACTIVE" || s["OS-EXT-STS:task_state"] != "powering-off" {
		t.Errorf("just stopped: %v %v", s["status"], s["OS-EXT-STS:task_state"])
	}
	w.Clock().Advance(2 * time.Second)
	_, got = rawGet(t, srv, "/servers/"+vm.ID, "2.93")
	if s := got["server"].(map[string]any); s["status"] != "SHUTOFF" || s["OS-EXT-STS:vm_state"] != "stopped" || s["OS-EXT-STS:task_state"] != nil {
		t.Errorf("stopped: %v %v %v", s["status"], s["OS-EXT-STS:vm_state"], s["OS-EXT-STS:task_state"])
	}
	if code, _ := rawDo(t, srv, "POST", path, "2.93", `{"os-stop":null}`); code != 409 {
		t.Errorf("stop of a stopped server: %d", code)
	}
	if code, _ := rawDo(t, srv, "POST", path, "2.93", `{"os-start":null}`); code != 202 {
		t.Fatalf("start: %d", code)
	}
	w.Clock().Advance(3 * time.Second)
	if _, got = rawGet(t, srv, "/servers/"+vm.ID, "2.93"); got["server"].(map[string]any)["status"] != "ACTIVE" {
		t.Errorf("started: %v", got["server"].(map[string]any)["status"])
	}
}
