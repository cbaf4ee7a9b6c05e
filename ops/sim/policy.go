package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
)

// Nova's and Placement's policy, as their defaults have it: what drainctl calls is the
// admin's (os-services, os-hypervisors, every project's servers, migrations, server actions
// that move a server, Placement's providers). A user made with Rules (a scoped application
// credential whose operator granted those rules in policy.yaml) may do exactly those: any
// other such call answers 403 with Nova's (or Placement's) body naming the rule. Where Nova
// hides instead of refusing (a server's host and its flavor's extra specs for a user without
// the rule), the simulator hides too.

// novaRules are the rules a Nova call needs (route pattern, and for server actions the
// action's name).
func novaRules(pattern string, r *http.Request, action string) []string {
	q := r.URL.Query()
	switch pattern {
	case "GET /os-services":
		return []string{"os_compute_api:os-services:list"}
	case "PUT /os-services/{id}":
		return []string{"os_compute_api:os-services:update"}
	case "GET /os-hypervisors":
		return []string{"os_compute_api:os-hypervisors:list"}
	case "GET /os-hypervisors/detail":
		return []string{"os_compute_api:os-hypervisors:list-detail"}
	case "GET /servers", "GET /servers/detail":
		rules := []string{"os_compute_api:servers:detail"}
		if pattern == "GET /servers" {
			rules[0] = "os_compute_api:servers:index"
		}
		if q.Get("all_tenants") != "" {
			rules = append(rules, rules[0]+":get_all_tenants")
		}
		return rules
	case "GET /servers/{id}":
		return []string{"os_compute_api:servers:show"}
	case "POST /servers":
		return []string{"os_compute_api:servers:create"}
	case "DELETE /servers/{id}":
		return []string{"os_compute_api:servers:delete"}
	case "POST /servers/{id}/action":
		switch action {
		case "os-migrateLive":
			return []string{"os_compute_api:os-migrate-server:migrate_live"}
		case "migrate":
			return []string{"os_compute_api:os-migrate-server:migrate"}
		case "confirmResize":
			return []string{"os_compute_api:servers:confirm_resize"}
		case "revertResize":
			return []string{"os_compute_api:servers:revert_resize"}
		case "evacuate":
			return []string{"os_compute_api:os-evacuate"}
		case "os-getConsoleOutput":
			return []string{"os_compute_api:os-console-output"}
		case "os-stop", "os-start":
			return []string{"os_compute_api:servers:" + strings.TrimPrefix(action, "os-")}
		case "pause", "unpause":
			return []string{"os_compute_api:os-pause-server:" + action}
		case "lock", "unlock":
			return []string{"os_compute_api:os-lock-server:" + action}
		}
		return []string{"os_compute_api:servers:action:" + action}
	case "POST /servers/{id}/metadata":
		return []string{"os_compute_api:server-metadata:create"}
	case "DELETE /servers/{id}/metadata/{key}":
		return []string{"os_compute_api:server-metadata:delete"}
	case "GET /servers/{id}/migrations":
		return []string{"os_compute_api:servers:migrations:index"}
	case "GET /servers/{id}/migrations/{mid}":
		return []string{"os_compute_api:servers:migrations:show"}
	case "POST /servers/{id}/migrations/{mid}/action":
		return []string{"os_compute_api:servers:migrations:force_complete"}
	case "DELETE /servers/{id}/migrations/{mid}":
		return []string{"os_compute_api:servers:migrations:delete"}
	case "GET /os-migrations":
		return []string{"os_compute_api:os-migrations:index"}
	case "GET /os-server-groups":
		return []string{"os_compute_api:os-server-groups:index"}
	case "GET /servers/{id}/os-instance-actions":
		return []string{"os_compute_api:os-instance-actions:list"}
	case "GET /servers/{id}/os-instance-actions/{req}":
		return []string{"os_compute_api:os-instance-actions:show"}
	}
	return nil
}

// placementRules are the rules a Placement call needs.
var placementRules = map[string]string{
	"GET /resource_providers":                    "placement:resource_providers:list",
	"GET /resource_providers/{uuid}":             "placement:resource_providers:show",
	"GET /resource_providers/{uuid}/inventories": "placement:resource_providers:inventories:list",
	"GET /resource_providers/{uuid}/usages":      "placement:resource_providers:usages",
	"GET /resource_providers/{uuid}/allocations": "placement:resource_providers:allocations:list",
}

// actionOf reads a server action's name from its body, leaving the body for the handler.
func actionOf(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	data, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(data))
	var body map[string]json.RawMessage
	if json.Unmarshal(data, &body) != nil {
		return ""
	}
	for k := range body {
		return k
	}
	return ""
}

// userOf is the user of the request's token (the world is locked).
func (s *Server) userOf(r *http.Request) User {
	return s.world.tokens[r.Header.Get("X-Auth-Token")].user
}

// may reports whether the user may do what the rule guards: an admin anything, a restricted
// user what its rules say.
func (u User) may(rule string) bool { return u.Rules == nil || slices.Contains(u.Rules, rule) }

// refusedRule is the first rule of rules the request's user lacks, "" when it has them all.
func (s *Server) refusedRule(r *http.Request, rules []string) string {
	u := s.userOf(r)
	for _, rule := range rules {
		if !u.may(rule) {
			return rule
		}
	}
	return ""
}

// policyFault is Nova's 403 body text for a rule.
func policyFault(rule string) novaFault {
	return faultf("Policy doesn't allow %s to be performed.", rule)
}

// hideFor removes from a server what Nova shows only to those its policy lets see it.
func hideFor(u User, out map[string]any) {
	if !u.may("os_compute_api:os-extended-server-attributes") {
		for k := range out {
			if strings.HasPrefix(k, "OS-EXT-SRV-ATTR:") {
				delete(out, k)
			}
		}
	}
	if !u.may("os_compute_api:os-flavor-extra-specs:index") {
		if f, ok := out["flavor"].(map[string]any); ok {
			delete(f, "extra_specs")
		}
	}
}
