package sim

import (
	"net/http"
	"slices"
)

// Neutron, only as far as drainctl reads it: GET /v2.0/ports filtered by device_id and
// binding:vnic_type (repeatable), as an admin sees every project's ports. A port bound
// "direct" (an SR-IOV VF) or "direct-physical" (a whole NIC) ties its server to its host's
// hardware: Nova refuses to live-migrate it in the pre-check.

type port struct {
	ID, DeviceID, VnicType, NetworkID, MAC string
}

// AddPort attaches a port of that vnic type (normal, direct, direct-physical, macvtap) to
// the server of that name.
func (w *World) AddPort(server, vnicType string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.servers {
		if s.Name == server {
			w.ports = append(
				w.ports,
				&port{ID: w.uuid(), DeviceID: s.ID, VnicType: vnicType, NetworkID: "b1b2c3d4-0000-4000-8000-00000000000a",
					MAC: "fa:16:3e:" + w.hex(2) + ":" + w.hex(2) + ":" + w.hex(2)},
			)
		}
	}
	w.changes++
}

// directPort is the first port of s bound to its host's hardware, "" when none.
func (w *World) directPort(s *VM) string {
	for _, p := range w.ports {
		if p.DeviceID == s.ID && (p.VnicType == "direct" || p.VnicType == "direct-physical") {
			return p.VnicType
		}
	}
	return ""
}

func (s *Server) neutronRoutes() http.Handler {
	mux := http.NewServeMux()
	// Version discovery, as clients (gophercloud, keystoneauth) read it before the first call.
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []map[string]any{{"id": "v2.0", "status": "CURRENT",
			"links": []map[string]any{{"href": s.URL + "/networking/v2.0/", "rel": "self"}}}}})
	})
	mux.HandleFunc("GET /v2.0/ports", func(w http.ResponseWriter, r *http.Request) {
		world := s.world
		world.mu.Lock()
		world.stats.Requests++
		world.stats.ByRoute["neutron GET /v2.0/ports"]++
		if !s.authorized(r) {
			world.mu.Unlock()
			keystoneError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
			return
		}
		q := r.URL.Query()
		types, devices := q["binding:vnic_type"], q["device_id"]
		out := []map[string]any{}
		for _, p := range world.ports {
			if (len(types) > 0 && !slices.Contains(types, p.VnicType)) || (len(devices) > 0 && !slices.Contains(devices, p.DeviceID)) {
				continue
			}
			out = append(out, map[string]any{"id": p.ID, "name": "", "device_id": p.DeviceID, "device_owner": "compute:nova",
				"binding:vnic_type": p.VnicType, "network_id": p.NetworkID, "mac_address": p.MAC, "status": "ACTIVE",
				"admin_state_up": true, "tenant_id": "72fb02d64abf44308848350085dcaae2", "project_id": "72fb02d64abf44308848350085dcaae2"})
		}
		world.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"ports": out})
	})
	return mux
}

// pinnedBy says what ties s to its host, for the pre-check's message.
func (w *World) pinnedBy(s *VM) string {
	if spec := pinnedSpec(s.Flavor.ExtraSpecs); spec != "" {
		return "its flavor requests a device of its host (" + spec + ")"
	}
	return "a port with binding:vnic_type " + w.directPort(s)
}
