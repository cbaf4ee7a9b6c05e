// Package reqkind names what a Kubernetes API request asks for, without the names in its
// path: the benchmarks count drainctl's requests by it.
package reqkind

import (
	"net/http"
	"strings"
)

// Of is a request's resource ("pods", "nodes", "pods/eviction", "leases"), its watch and its
// scope (one object, NAME, or a list) left as the key's words.
func Of(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/namespaces/NS/pods/NAME/eviction, /apis/G/V/namespaces/NS/leases/NAME, /api/v1/nodes/NAME
	for i := 0; i < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			parts = parts[i+2:]
			break
		}
	}
	if len(parts) > 0 && (parts[0] == "api" || parts[0] == "apis") {
		parts = parts[min(len(parts), map[bool]int{true: 2, false: 3}[parts[0] == "api"]):]
	}
	kind := strings.Join(parts, "/")
	if len(parts) >= 2 {
		kind = parts[0] + "/NAME"
		if len(parts) == 3 {
			kind += "/" + parts[2]
		}
	}
	if r.URL.Query().Get("watch") == "true" {
		kind += " (watch)"
	}
	return kind
}
