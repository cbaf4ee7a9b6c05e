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
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "notes", "nova-samples", name))
	if err != nil {
		t.Skipf("nova-samples not beside the checkout: %v", err)
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
