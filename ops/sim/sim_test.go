package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// startWorld serves a world of three hosts and two small servers on compute-0.
func startWorld(t *testing.T, opts Options) (*Server, *World) {
	t.Helper()
	w := NewWorld(opts)
	for i := 0; i < 3; i++ {
		w.AddHost(fmt.Sprintf("compute-%d", i), 32, 131072, 1000)
	}
	w.AddServer("demo-0", "compute-0", Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	w.AddServer("demo-1", "compute-0", Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	srv, err := Serve(w, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, w
}

// rawGet issues a Nova GET at a microversion with a fresh token and decodes the body.
func rawGet(t *testing.T, srv *Server, path, mv string) (int, map[string]any) {
	t.Helper()
	tok := issueToken(t, srv)
	req, _ := http.NewRequest("GET", srv.URL+"/compute/v2.1"+path, nil)
	req.Header.Set("X-Auth-Token", tok)
	if mv != "" {
		req.Header.Set("OpenStack-API-Version", "compute "+mv)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func issueToken(t *testing.T, srv *Server) string {
	t.Helper()
	body := `{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"admin","password":"secret","domain":{"name":"Default"}}}}}}`
	resp, err := http.Post(srv.IdentityURL()+"/auth/tokens", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("token: %d", resp.StatusCode)
	}
	return resp.Header.Get("X-Subject-Token")
}

// keysOf returns the sorted keys of the first object in body[list] (or body[list] itself).
func keysOf(v any) []string {
	if l, ok := v.([]any); ok {
		if len(l) == 0 {
			return nil
		}
		v = l[0]
	}
	m, _ := v.(map[string]any)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sample(t *testing.T, name string) map[string]any {
	t.Helper()
	// Facts from a real Nova (shared/notes/nova-samples), kept in the repository so that a
	// fresh clone holds the simulator to them.
	data, err := os.ReadFile(filepath.Join("testdata", "nova-samples", name))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The simulator's answers carry exactly the keys of a real Nova's, at the same microversion.
func TestShapesMatchRealNova(t *testing.T) {
	srv, w := startWorld(t, Options{Scale: 1})
	var id string
	for _, s := range w.servers {
		id = s.ID
	}
	for _, tc := range []struct {
		sample, list, path, mv string
	}{
		{"os-services.json", "services", "/os-services", "2.93"},
		{"os-services-after.json", "services", "/os-services?binary=nova-compute", "2.93"},
		{"os-hypervisors-detail-2.53.json", "hypervisors", "/os-hypervisors/detail", "2.53"},
		{"os-hypervisors-detail-with_servers-2.53.json", "hypervisors", "/os-hypervisors/detail?with_servers=true", "2.53"},
		{"os-hypervisors-detail-with_servers-max.json", "hypervisors", "/os-hypervisors/detail?with_servers=true", "2.93"},
		{"os-hypervisors.json", "hypervisors", "/os-hypervisors", "2.93"},
		{"servers-host-all_tenants.json", "servers", "/servers?host=compute-0&all_tenants=1", "2.93"},
		{"servers-detail-host-all_tenants.json", "servers", "/servers/detail?host=compute-0&all_tenants=1", "2.93"},
		{"server-show.json", "", "/servers/" + id, "2.93"},
		{"servers-id-migrations-after.json", "migrations", "/servers/" + id + "/migrations", "2.93"},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			want := sample(t, tc.sample)
			code, got := rawGet(t, srv, tc.path, tc.mv)
			if code != 200 {
				t.Fatalf("status %d: %v", code, got)
			}
			var w, g any = want, got["server"]
			if tc.list != "" {
				w, g = want[tc.list], got[tc.list]
			}
			if wk, gk := keysOf(w), keysOf(g); strings.Join(wk, ",") != strings.Join(gk, ",") {
				t.Errorf("keys differ\nreal: %v\nsim:  %v", wk, gk)
			}
		})
	}
}

func TestMicroversionNegotiation(t *testing.T) {
	srv, _ := startWorld(t, Options{})
	code, body := rawGet(t, srv, "/os-services", "2.94")
	if code != 406 || keysOf(body)[0] != "computeFault" {
		t.Errorf("2.94: %d %v", code, body)
	}
	code, body = rawGet(t, srv, "/os-services", "two")
	if code != 400 || body["badRequest"] == nil {
		t.Errorf("bad format: %d %v", code, body)
	}
	code, body = rawGet(t, srv, "/os-services", "2.1")
	if code != 200 {
		t.Fatalf("2.1: %d", code)
	}
	if _, isNum := body["services"].([]any)[0].(map[string]any)["id"].(float64); !isNum {
		t.Errorf("below 2.53 service ids are integers: %v", body["services"])
	}
}

func TestUnauthenticated(t *testing.T) {
	srv, _ := startWorld(t, Options{})
	resp, err := http.Get(srv.URL + "/compute/v2.1/os-services")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("no token: %d", resp.StatusCode)
	}
}

func rawDo(t *testing.T, srv *Server, method, path, mv, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+"/compute/v2.1"+path, strings.NewReader(body))
	req.Header.Set("X-Auth-Token", issueToken(t, srv))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "compute "+mv)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func sameKeys(t *testing.T, what string, real, sim any) {
	t.Helper()
	if wk, gk := keysOf(real), keysOf(sim); strings.Join(wk, ",") != strings.Join(gk, ",") {
		t.Errorf("%s: keys differ\nreal: %v\nsim:  %v", what, wk, gk)
	}
}

// A live migration seen at every state, compared with what a real Nova answered then.
func TestMigrationShapesAtEveryState(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	vm, _ := w.ServerByName("demo-0")
	code, _ := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", `{"os-migrateLive":{"host":null,"block_migration":"auto"}}`)
	if code != 202 {
		t.Fatalf("migrate: %d", code)
	}
	osMig := func(name string) {
		_, got := rawGet(t, srv, "/os-migrations?instance_uuid="+vm.ID, "2.93")
		sameKeys(t, "os-migrations at "+name, sample(t, "os-migrations-"+name+".json")["migrations"], got["migrations"])
	}
	srvMig := func(name string) {
		_, got := rawGet(t, srv, "/servers/"+vm.ID+"/migrations", "2.93")
		sameKeys(t, "server migrations at "+name, sample(t, "servers-id-migrations-"+name+".json")["migrations"], got["migrations"])
	}
	// The conductor makes the record after the API's 202 (a real Nova: none 41 ms after).
	if _, got := rawGet(t, srv, "/os-migrations?instance_uuid="+vm.ID, "2.93"); len(got["migrations"].([]any)) != 0 {
		t.Errorf("right after the 202 os-migrations lists %v; want nothing yet", got["migrations"])
	}
	w.Clock().Advance(recordDelay)
	osMig("accepted")
	w.Clock().Advance(scheduleDelay - recordDelay)
	srvMig("queued")
	w.Clock().Advance(time.Millisecond) // queued -> preparing at once: the source has a free slot
	osMig("preparing")
	srvMig("preparing")
	w.Clock().Advance(prepareDuration)
	osMig("running")
	srvMig("running")
	w.Clock().Advance(time.Minute)
	osMig("completed")
	osMig("final")
	_, after := rawGet(t, srv, "/servers/"+vm.ID+"/migrations", "2.93")
	sameKeys(t, "server migrations after", sample(t, "servers-id-migrations-after.json")["migrations"], after["migrations"])
	_, final := rawGet(t, srv, "/os-migrations", "2.23")
	sameKeys(t, "os-migrations at 2.23", sample(t, "os-migrations-final-2.23.json")["migrations"], final["migrations"])
}

func TestNoValidHostActionShape(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	w.SetNoValidHost(true)
	vm, _ := w.ServerByName("demo-1")
	rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", `{"os-migrateLive":{"host":null,"block_migration":"auto"}}`)
	w.Clock().Advance(time.Second)
	real := sample(t, "novalidhost-live-migration.json")
	_, list := rawGet(t, srv, "/servers/"+vm.ID+"/os-instance-actions", "2.93")
	req := list["instanceActions"].([]any)[0].(map[string]any)["request_id"].(string)
	_, got := rawGet(t, srv, "/servers/"+vm.ID+"/os-instance-actions/"+req, "2.93")
	ra := real["instance-action"].(map[string]any)["instanceAction"].(map[string]any)
	ga := got["instanceAction"].(map[string]any)
	sameKeys(t, "instance action", ra, ga)
	sameKeys(t, "instance action event", ra["events"], ga["events"])
	ev := ga["events"].([]any)[0].(map[string]any)
	if ga["message"] != "Error" || ev["result"] != "Error" || ev["details"] != "No valid host was found. There are not enough hosts available." {
		t.Errorf("action %v", ga)
	}
	_, migs := rawGet(t, srv, "/os-migrations?instance_uuid="+vm.ID, "2.93")
	sameKeys(t, "errored os-migration", real["os-migrations"], migs["migrations"])
}

// A requested host the scheduler turns down (disabled here) fails the way Nova fails any
// live migration with no valid host (nova-api.md: every other compute disabled): 202, then the
// migration in error and the action's event saying NoValidHost. No "pre-check" sentence: that
// is how Nova speaks of a server that cannot live-migrate at all.
func TestRequestedHostDisabledIsNoValidHost(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	w.Update(func(h map[string]*Host, _ map[string]*VM) { h["compute-1"].Enabled = false })
	vm, _ := w.ServerByName("demo-1")
	if code, _ := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", `{"os-migrateLive":{"host":"compute-1","block_migration":"auto"}}`); code != 202 {
		t.Fatalf("os-migrateLive to a disabled host: %d, want 202", code)
	}
	w.Clock().Advance(time.Second)
	_, list := rawGet(t, srv, "/servers/"+vm.ID+"/os-instance-actions", "2.93")
	req := list["instanceActions"].([]any)[0].(map[string]any)["request_id"].(string)
	_, got := rawGet(t, srv, "/servers/"+vm.ID+"/os-instance-actions/"+req, "2.93")
	ev := got["instanceAction"].(map[string]any)["events"].([]any)[0].(map[string]any)
	if ev["details"] != "No valid host was found. There are not enough hosts available." {
		t.Errorf("event %v", ev)
	}
	if st := w.MigrationStatuses(vm.ID); len(st) != 1 || st[0][len(st[0])-1] != "error" {
		t.Errorf("migration statuses %v", st)
	}
	if after, _ := w.ServerByName("demo-1"); after.Host != "compute-0" {
		t.Errorf("demo-1 on %s", after.Host)
	}
}

func TestServiceUpdateAndVersionShapes(t *testing.T) {
	srv, w := startWorld(t, Options{})
	h, _ := w.Host("compute-0")
	_, dis := rawDo(t, srv, "PUT", "/os-services/"+h.ServiceID, "2.93", `{"status":"disabled","disabled_reason":"demo drain"}`)
	sameKeys(t, "disable response", sample(t, "os-services-disable-response.json")["service"], dis["service"])
	_, en := rawDo(t, srv, "PUT", "/os-services/"+h.ServiceID, "2.93", `{"status":"enabled"}`)
	sameKeys(t, "enable response", sample(t, "os-services-enable-response.json")["service"], en["service"])
	if en["service"].(map[string]any)["disabled_reason"] != nil {
		t.Error("enabled service keeps a reason")
	}
	if code, _ := rawDo(t, srv, "PUT", "/os-services/"+h.ServiceID, "2.93", `{"status":"enabled","disabled_reason":"x"}`); code != 400 {
		t.Errorf("a reason with enabled: %d", code)
	}
	resp, _ := http.Get(srv.URL + "/compute/v2.1/")
	var doc map[string]any
	json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	sameKeys(t, "version document", sample(t, "version.json")["version"], doc["version"])
}

// A cold migration as the real Nova did it: 409 on live-migrating a stopped server with its
// message; the migrate action; RESIZE/resize_prep on the source, then the host moved before
// VERIFY_RESIZE; the record "finished" until confirmResize (204), then "confirmed" with the
// real record's keys; the server SHUTOFF again, on the destination. Reverting instead puts it
// back on its source.
func TestColdMigrationSequenceMatchesRealNova(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	vm, _ := w.ServerByName("demo-0")
	w.Stop("demo-0")
	code, body := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", `{"os-migrateLive":{"host":null,"block_migration":"auto"}}`)
	if want := "Cannot 'os-migrateLive' instance " + vm.ID + " while it is in vm_state stopped"; code != 409 || !strings.Contains(fmt.Sprint(body), want) {
		t.Errorf("live-migrating a stopped server: %d %v", code, body)
	}
	if code, body := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", `{"migrate":null}`); code != 202 {
		t.Fatalf("migrate: %d %v", code, body)
	}
	show := func() map[string]any {
		_, got := rawGet(t, srv, "/servers/"+vm.ID, "2.93")
		return got["server"].(map[string]any)
	}
	state := func() string {
		s := show()
		return fmt.Sprintf("%v/%v@%v", s["status"], s["OS-EXT-STS:task_state"], s["OS-EXT-SRV-ATTR:host"] == vm.Host)
	}
	var seen []string
	for i := 0; i < 50; i++ {
		if st := state(); len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		w.Clock().Advance(100 * time.Millisecond)
	}
	want := []string{"RESIZE/resize_prep@true", "RESIZE/resize_migrating@true", "RESIZE/resize_migrated@false", "VERIFY_RESIZE/<nil>@false"}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("server states %v, want %v", seen, want)
	}
	_, got := rawGet(t, srv, "/os-migrations?instance_uuid="+vm.ID, "2.93")
	if m := got["migrations"].([]any)[0].(map[string]any); m["status"] != "finished" || m["migration_type"] != "migration" {
		t.Errorf("before the confirm: %v", m)
	}
	if code, body := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", `{"confirmResize":null}`); code != 204 {
		t.Fatalf("confirmResize: %d %v", code, body)
	}
	w.Clock().Advance(time.Second)
	_, got = rawGet(t, srv, "/os-migrations?instance_uuid="+vm.ID, "2.93")
	sameKeys(t, "os-migrations after the confirm", sample(t, "os-migrations-cold-confirmed.json")["migrations"], got["migrations"])
	if m := got["migrations"].([]any)[0].(map[string]any); m["status"] != "confirmed" {
		t.Errorf("after the confirm: %v", m)
	}
	if s := show(); s["status"] != "SHUTOFF" || s["OS-EXT-SRV-ATTR:host"] == vm.Host {
		t.Errorf("after the confirm the server is %v on %v; want SHUTOFF elsewhere", s["status"], s["OS-EXT-SRV-ATTR:host"])
	}

	// Revert: back on the source, as it was.
	moved := show()["OS-EXT-SRV-ATTR:host"]
	rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", `{"migrate":null}`)
	w.Clock().Advance(10 * time.Second)
	if code, _ := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", `{"revertResize":null}`); code != 202 {
		t.Fatalf("revertResize: %d", code)
	}
	w.Clock().Advance(5 * time.Second)
	if s := show(); s["status"] != "SHUTOFF" || s["OS-EXT-SRV-ATTR:host"] != moved {
		t.Errorf("after the revert: %v on %v, want SHUTOFF on %v", s["status"], s["OS-EXT-SRV-ATTR:host"], moved)
	}
}

// A dead host as the real Nova handled it: evacuate refused while the source's nova-compute is
// up (its message); forced down at once; the evacuated server REBUILD/rebuilding, then ACTIVE
// on another host; its record "done" (migration_type evacuation) and forcing the service up
// refused with Nova's message until the host's nova-compute restarts, then "completed" with the
// real record's keys, and the force-up accepted.
func TestEvacuationSequenceMatchesRealNova(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	vm, _ := w.ServerByName("demo-0")
	dead := vm.Host
	h, _ := w.Host(dead)
	action := `{"evacuate":{}}`
	if code, body := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", action); code != 400 ||
		!strings.Contains(fmt.Sprint(body), "Compute service of "+dead+" is still in use.") {
		t.Errorf("evacuate from a live host: %d %v", code, body)
	}
	w.KillHost(dead)
	code, body := rawDo(t, srv, "PUT", "/os-services/"+h.ServiceID, "2.93", `{"forced_down": true}`)
	if svc, _ := body["service"].(map[string]any); code != 200 || svc["state"] != "down" || svc["forced_down"] != true {
		t.Fatalf("force down: %d %v", code, body)
	}
	if code, body := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", action); code != 200 {
		t.Fatalf("evacuate: %d %v", code, body)
	}
	_, got := rawGet(t, srv, "/servers/"+vm.ID, "2.93")
	if s := got["server"].(map[string]any); s["status"] != "REBUILD" || s["OS-EXT-STS:task_state"] != "rebuilding" {
		t.Errorf("while rebuilt: %v/%v", s["status"], s["OS-EXT-STS:task_state"])
	}
	w.Clock().Advance(5 * time.Second)
	_, got = rawGet(t, srv, "/servers/"+vm.ID, "2.93")
	if s := got["server"].(map[string]any); s["status"] != "ACTIVE" || s["OS-EXT-SRV-ATTR:host"] == dead {
		t.Errorf("after the rebuild: %v on %v", s["status"], s["OS-EXT-SRV-ATTR:host"])
	}
	record := func() map[string]any {
		_, got := rawGet(t, srv, "/os-migrations?instance_uuid="+vm.ID, "2.93")
		return got["migrations"].([]any)[0].(map[string]any)
	}
	if m := record(); m["status"] != "done" || m["migration_type"] != "evacuation" {
		t.Errorf("before the restart: %v", m)
	}
	want := "Unable to force up host " + dead + " as `done` evacuation migration records remain associated with the host. " +
		"Ensure the compute service has been restarted, allowing these records to move to `completed` before retrying this request."
	if code, body := rawDo(t, srv, "PUT", "/os-services/"+h.ServiceID, "2.93", `{"forced_down": false}`); code != 400 || !strings.Contains(fmt.Sprint(body), want) {
		t.Errorf("force up with done records: %d %v", code, body)
	}
	w.ReviveHost(dead)
	_, got = rawGet(t, srv, "/os-migrations?instance_uuid="+vm.ID, "2.93")
	sameKeys(t, "os-migrations after the restart", sample(t, "os-migrations-evacuation-completed.json")["migrations"], got["migrations"])
	if m := record(); m["status"] != "completed" {
		t.Errorf("after the restart: %v", m)
	}
	if code, body := rawDo(t, srv, "PUT", "/os-services/"+h.ServiceID, "2.93", `{"forced_down": false}`); code != 200 {
		t.Errorf("force up after the restart: %d %v", code, body)
	}
}

// The request drainctl sends to live-migrate is the one a real Nova accepted (the sample),
// and the simulator accepts it too.
func TestLiveMigrateRequestMatchesRealNova(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	vm, _ := w.ServerByName("demo-0")
	body, err := json.Marshal(sample(t, "os-migrateLive-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if code, got := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93", string(body)); code != 202 {
		t.Errorf("the real request: %d %v", code, got)
	}
}

// Every real sample in testdata is held against the simulator by some test here, so that a
// sample added (a Nova behaviour drainctl comes to rely on) cannot stay unchecked.
func TestEverySampleIsChecked(t *testing.T) {
	src, err := os.ReadFile("sim_test.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	unchecked := map[string]string{
		"server-create-response.json": "drainctl never creates servers; the simulator's servers are made by its own API",
	}
	files, err := filepath.Glob(filepath.Join("testdata", "nova-samples", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if unchecked[name] != "" {
			continue
		}
		stem := strings.TrimSuffix(name, ".json")
		checked := strings.Contains(text, `"`+name+`"`) ||
			strings.Contains(text, `osMig("`+strings.TrimPrefix(stem, "os-migrations-")+`")`) ||
			strings.Contains(text, `srvMig("`+strings.TrimPrefix(stem, "servers-id-migrations-")+`")`)
		if !checked {
			t.Errorf("%s: no test holds the simulator to it", name)
		}
	}
}

// A locked server as Nova's check_instance_lock treats it (shared/notes/nova-api.md, "Locked
// servers"): an admin's live and cold migration are accepted (202) and the lock stays; a
// member's token that policy allows to migrate gets 409 "Instance <uuid> is locked", for the
// live and the cold migration alike; evacuate checks no lock.
func TestLockedServerAsNovaTreatsIt(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	w.Lock("demo-0")
	w.Lock("demo-1")
	a, _ := w.ServerByName("demo-0")
	b, _ := w.ServerByName("demo-1")
	srv.AddUser(User{Name: "member", Password: "pw", Domain: "Default", Project: "ops", Rules: []string{
		"os_compute_api:os-migrate-server:migrate_live", "os_compute_api:os-migrate-server:migrate", "os_compute_api:os-evacuate"}})
	body := `{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"member","password":"pw","domain":{"name":"Default"}}}}}}`
	resp, err := http.Post(srv.IdentityURL()+"/auth/tokens", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("member token: %v %v", err, resp)
	}
	resp.Body.Close()
	member := resp.Header.Get("X-Subject-Token")
	asMember := func(id, action string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/compute/v2.1/servers/"+id+"/action", strings.NewReader(action))
		req.Header.Set("X-Auth-Token", member)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "compute 2.93")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, fmt.Sprint(out["conflictingRequest"]["message"])
	}
	for _, action := range []string{`{"os-migrateLive":{"host":null,"block_migration":"auto"}}`, `{"migrate":null}`} {
		if code, msg := asMember(a.ID, action); code != 409 || msg != "Instance "+a.ID+" is locked" {
			t.Errorf("a member's %s of a locked server: %d %q", action, code, msg)
		}
	}
	if code, body := rawDo(t, srv, "POST", "/servers/"+a.ID+"/action", "2.93", `{"os-migrateLive":{"host":null,"block_migration":"auto"}}`); code != 202 {
		t.Fatalf("an admin's live migration of a locked server: %d %v", code, body)
	}
	if code, body := rawDo(t, srv, "POST", "/servers/"+b.ID+"/action", "2.93", `{"migrate":null}`); code != 202 {
		t.Fatalf("an admin's cold migration of a locked server: %d %v", code, body)
	}
	w.Clock().Advance(time.Minute)
	if a, _ = w.ServerByName("demo-0"); a.Host == "compute-0" || !a.Locked {
		t.Errorf("after an admin's live migration: on %s, locked %v", a.Host, a.Locked)
	}
	if b, _ = w.ServerByName("demo-1"); !b.Locked {
		t.Errorf("the cold-migrated server lost its lock")
	}
	w.KillHost(a.Host)
	w.Update(func(h map[string]*Host, _ map[string]*VM) { h[a.Host].ForcedDown = true })
	if code, msg := asMember(a.ID, `{"evacuate":{}}`); code != 200 {
		t.Errorf("a member's evacuate of a locked server (no lock check): %d %q", code, msg)
	}
}

// One hypervisor by its ID (a campaign's plan reads its own host so): the list's detail
// entry, keys and all, under "hypervisor"; 404 with Nova's message for an unknown ID; and
// with_servers refused below 2.53, as the list refuses it.
func TestOneHypervisorAsNovaShowsIt(t *testing.T) {
	srv, w := startWorld(t, Options{Scale: 1})
	h, _ := w.Host("compute-0")
	want := sample(t, "os-hypervisors-detail-with_servers-max.json")["hypervisors"]
	code, got := rawGet(t, srv, "/os-hypervisors/"+h.HypervisorID+"?with_servers=true", "2.93")
	if code != 200 {
		t.Fatalf("status %d: %v", code, got)
	}
	if wk, gk := keysOf(want), keysOf(got["hypervisor"]); strings.Join(wk, ",") != strings.Join(gk, ",") {
		t.Errorf("keys differ from the list's entry\nreal: %v\nsim:  %v", wk, gk)
	}
	if servers, _ := got["hypervisor"].(map[string]any)["servers"].([]any); len(servers) != 2 {
		t.Errorf("compute-0's servers: %v, want its 2", got["hypervisor"])
	}
	code, got = rawGet(t, srv, "/os-hypervisors/00000000-0000-0000-0000-000000000000", "2.93")
	if msg := fmt.Sprint(got); code != 404 || !strings.Contains(msg, "Hypervisor with ID 00000000-0000-0000-0000-000000000000 could not be found.") {
		t.Errorf("an unknown hypervisor: %d %s", code, msg)
	}
	if code, got = rawGet(t, srv, "/os-hypervisors/1?with_servers=true", "2.52"); code != 400 {
		t.Errorf("with_servers at 2.52: %d %v", code, got)
	}
}

// A loaded API (loaded-api=D) holds each answer a random delay whose mean is D for each move
// under way: none at rest, about twice D with two moves under way.
func TestALoadedAPIsDelayGrowsWithTheMovesUnderWay(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true, Seed: 1})
	if err := w.ApplyFaultSpec("loaded-api=50ms"); err != nil {
		t.Fatal(err)
	}
	mean := func() time.Duration {
		w.mu.Lock()
		defer w.mu.Unlock()
		f := w.faults[len(w.faults)-1]
		var sum time.Duration
		for range 4000 {
			sum += w.delay(f)
		}
		return sum / 4000
	}
	if d := mean(); d != 0 {
		t.Errorf("at rest, a mean delay of %s; want none", d)
	}
	for _, name := range []string{"demo-0", "demo-1"} {
		vm, _ := w.ServerByName(name)
		if code, got := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93",
			`{"os-migrateLive": {"host": null, "block_migration": "auto"}}`); code != 202 {
			t.Fatalf("live-migrating %s: %d %v", name, code, got)
		}
	}
	if n := w.InFlight(); n != 2 {
		t.Fatalf("%d moves under way, want 2", n)
	}
	if d := mean(); d < 90*time.Millisecond || d > 110*time.Millisecond {
		t.Errorf("two moves under way, a mean delay of %s; want about 100ms", d)
	}
}

// shared-link=1: two live moves copying at once each get half the link, and the one left
// copying gets it whole again the moment the other is aborted; a guest that dirties memory
// faster than its half never converges while the link is shared.
func TestLiveMovesShareALink(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	w.AddServer("demo-2", "compute-1", Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 1, DiskGB: 20})
	if err := w.ApplyFaultSpec("shared-link=1"); err != nil {
		t.Fatal(err)
	}
	busy, _ := w.ServerByName("demo-2")
	w.Update(func(_ map[string]*Host, servers map[string]*VM) {
		servers[busy.ID].DirtyBytesPerSec = 0.6 * (1 << 30) // below the whole link, above half
	})
	// 16 GiB: still copying after three saves' time of half the link.
	w.AddServer("demo-3", "compute-0", Flavor{Name: "m1.xlarge", RAMMB: 16384, VCPUs: 1, DiskGB: 20})
	small, _ := w.ServerByName("demo-3")
	for _, vm := range []VM{small, busy} {
		if code, got := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93",
			`{"os-migrateLive":{"host":null,"block_migration":"auto"}}`); code != 202 {
			t.Fatalf("live-migrating %s: %d %v", vm.Name, code, got)
		}
	}
	counters := func(vm VM) (processed, remaining float64) {
		_, got := rawGet(t, srv, "/servers/"+vm.ID+"/migrations", "2.93")
		ms := got["migrations"].([]any)
		if len(ms) != 1 {
			t.Fatalf("%s: %d migrations in progress, want 1", vm.Name, len(ms))
		}
		m := ms[0].(map[string]any)
		return m["memory_processed_bytes"].(float64), m["memory_remaining_bytes"].(float64)
	}
	// The record shows the counters of Nova's saves, every statsEvery: read at each save.
	w.Clock().Advance(scheduleDelay + prepareDuration + statsEvery) // both copying for a save's time
	const mib = 1 << 20
	const half = 512 * float64(statsEvery/time.Second) // MiB copied at half the link between two saves
	for _, vm := range []VM{small, busy} {
		if p, _ := counters(vm); p < 0.97*half*mib || p > 1.03*half*mib {
			t.Errorf("%s copied %.0f MiB in %s of a shared 1 GiB/s link; want %.0f", vm.Name, p/mib, statsEvery, half)
		}
	}
	_, before := counters(busy)
	w.Clock().Advance(statsEvery)
	if _, after := counters(busy); after < before {
		t.Errorf("a guest dirtying 0.6 GiB/s on half the link converged: remaining %.0f MiB, then %.0f", before/mib, after/mib)
	}
	p0, _ := counters(small)
	w.Clock().Advance(statsEvery) // the other: 5 GiB copied by now, of 16; still copying
	if p, _ := counters(small); p-p0 < 0.97*half*mib || p-p0 > 1.03*half*mib {
		t.Errorf("demo-3 copied %.0f MiB in its third save's time; want %.0f", (p-p0)/mib, half)
	}
	_, got := rawGet(t, srv, "/servers/"+small.ID+"/migrations", "2.93")
	mid := got["migrations"].([]any)[0].(map[string]any)["id"].(float64)
	if code, _ := rawDo(t, srv, "DELETE", fmt.Sprintf("/servers/%s/migrations/%.0f", small.ID, mid), "2.93", ""); code != 202 {
		t.Fatalf("aborting demo-3: %d", code)
	}
	_, before = counters(busy)
	w.Clock().Advance(statsEvery)
	_, after := counters(busy)
	if fell := (before - after) / statsEvery.Seconds(); fell < 380*mib || fell > 440*mib {
		t.Errorf("alone on the link, the busy guest's remaining fell by %.0f MiB a second; want about 410 (1 GiB/s less 0.6)",
			fell/mib)
	}
}

// A force-completed move's guest is paused: a change made to the world meanwhile (any Update)
// does not give it its dirty rate back, and it converges.
func TestAForceCompletedMoveStaysForced(t *testing.T) {
	srv, w := startWorld(t, Options{ManualClock: true})
	vm, _ := w.ServerByName("demo-0")
	w.Update(func(_ map[string]*Host, servers map[string]*VM) { servers[vm.ID].DirtyBytesPerSec = 2 << 30 })
	if code, got := rawDo(t, srv, "POST", "/servers/"+vm.ID+"/action", "2.93",
		`{"os-migrateLive":{"host":null,"block_migration":"auto"}}`); code != 202 {
		t.Fatalf("live-migrating: %d %v", code, got)
	}
	w.Clock().Advance(scheduleDelay + prepareDuration + time.Second)
	_, got := rawGet(t, srv, "/servers/"+vm.ID+"/migrations", "2.93")
	mid := got["migrations"].([]any)[0].(map[string]any)["id"].(float64)
	if code, _ := rawDo(t, srv, "POST", fmt.Sprintf("/servers/%s/migrations/%.0f/action", vm.ID, mid), "2.93",
		`{"force_complete": null}`); code != 202 {
		t.Fatalf("force-complete: %d", code)
	}
	w.SetZone("compute-2", "b") // any change to the world
	w.Clock().Advance(3 * time.Second)
	if _, got := rawGet(t, srv, "/servers/"+vm.ID+"/migrations", "2.93"); len(got["migrations"].([]any)) != 0 {
		t.Errorf("3 s after its force-complete, a 2 GiB move is still in progress: %v", got["migrations"])
	}
}

// The write log a benchmark keeps of a failed run: each write in the order Nova took it, with
// its body and status; no read, no password.
func TestTheWriteLogKeepsEveryWriteAndNoSecret(t *testing.T) {
	srv, w := startWorld(t, Options{})
	var log strings.Builder
	srv.LogWrites(&log)
	h, _ := w.Host("compute-0")
	rawDo(t, srv, "PUT", "/os-services/"+h.ServiceID, "2.93", `{"status":"disabled","disabled_reason":"drainctl: evacuate"}`)
	rawGet(t, srv, "/os-services", "2.93")
	rawDo(t, srv, "PUT", "/os-services/"+h.ServiceID, "2.93", `{"status":"enabled","disabled_reason":"x"}`)
	rawDo(t, srv, "POST", "/servers/nope/action", "2.93", `{"rebuild":{"imageRef":"i","adminPass":"hunter2"}}`)
	var got, writes []string // the Nova writes, their method, path and status; a token is asked for before each call
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && !strings.HasPrefix(f[2], "/identity") {
			got, writes = append(got, strings.Join(f[1:4], " ")), append(writes, l)
		}
	}
	want := []string{
		"PUT /compute/v2.1/os-services/" + h.ServiceID + " 200",
		"PUT /compute/v2.1/os-services/" + h.ServiceID + " 400",
		"POST /compute/v2.1/servers/nope/action 404",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the writes logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(writes) == 0 || !strings.Contains(writes[0], `"disabled_reason":"drainctl: evacuate"`) {
		t.Errorf("a write's body is not logged: %q", writes)
	}
	if strings.Contains(log.String(), "hunter2") || strings.Contains(log.String(), "secret") {
		t.Errorf("a password is logged:\n%s", log.String())
	}
}
