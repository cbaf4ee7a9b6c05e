package sim

import (
	"encoding/json"
	"net/http"
	"time"
)

type token struct {
	user    User
	expires time.Time // real time
}

// handleTokens is POST /identity/v3/auth/tokens: password or application credential.
func (s *Server) handleTokens(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Auth struct {
			Identity struct {
				Methods  []string `json:"methods"`
				Password struct {
					User struct {
						ID       string `json:"id"`
						Name     string `json:"name"`
						Password string `json:"password"`
						Domain   struct {
							ID   string `json:"id"`
							Name string `json:"name"`
						} `json:"domain"`
					} `json:"user"`
				} `json:"password"`
				AppCred struct {
					ID     string `json:"id"`
					Name   string `json:"name"`
					Secret string `json:"secret"`
				} `json:"application_credential"`
			} `json:"identity"`
		} `json:"auth"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		keystoneError(w, http.StatusBadRequest, "Bad Request", "Malformed request body")
		return
	}
	id := req.Auth.Identity
	var user *User
	s.world.mu.Lock()
	for i := range s.world.opts.Users {
		u := &s.world.opts.Users[i]
		switch {
		case len(id.Methods) > 0 && id.Methods[0] == "application_credential":
			if u.AppCredSecret != "" && id.AppCred.Secret == u.AppCredSecret &&
				(id.AppCred.ID == u.AppCredID || (id.AppCred.Name != "" && id.AppCred.Name == u.AppCredName)) {
				user = u
			}
		default:
			p := id.Password.User
			if (p.Name == u.Name || p.ID == u.Name) && p.Password == u.Password && u.Password != "" {
				user = u
			}
		}
	}
	if user == nil {
		s.world.mu.Unlock()
		keystoneError(w, http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
		return
	}
	tok := "gAAAAA" + s.world.hex(64)
	exp := time.Now().Add(s.world.opts.TokenTTL)
	s.world.tokens[tok] = token{user: *user, expires: exp}
	s.world.mu.Unlock()

	endpoint := func(iface, url string) map[string]any {
		return map[string]any{"id": iface + "-" + url, "interface": iface, "region": "RegionOne", "region_id": "RegionOne", "url": url}
	}
	compute := s.URL + "/compute/v2.1"
	identity := s.URL + "/identity/v3"
	placement := s.URL + "/placement"
	body := map[string]any{"token": map[string]any{
		"methods":    id.Methods,
		"expires_at": exp.UTC().Format("2006-01-02T15:04:05.000000Z"),
		"issued_at":  time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"),
		"user":       map[string]any{"id": user.Name, "name": user.Name, "domain": map[string]any{"id": "default", "name": "Default"}},
		"project": map[string]any{
			"id":     user.Project,
			"name":   user.Project,
			"domain": map[string]any{"id": "default", "name": "Default"},
		},
		"roles": roles(*user),
		"catalog": []map[string]any{
			{"type": "compute", "name": "nova", "id": "nova", "endpoints": []map[string]any{
				endpoint("public", compute), endpoint("internal", compute), endpoint("admin", compute)}},
			{"type": "identity", "name": "keystone", "id": "keystone", "endpoints": []map[string]any{
				endpoint("public", identity), endpoint("internal", identity), endpoint("admin", identity)}},
		},
	}}
	if !s.world.opts.NoPlacement {
		catalog := body["token"].(map[string]any)
		catalog["catalog"] = append(catalog["catalog"].([]map[string]any), map[string]any{"type": "placement", "name": "placement",
			"id": "placement",
			"endpoints": []map[string]any{endpoint("public",
				placement), endpoint("internal", placement), endpoint("admin", placement)}})
	}
	if s.world.opts.Neutron {
		catalog := body["token"].(map[string]any)
		network := s.URL + "/networking"
		catalog["catalog"] = append(catalog["catalog"].([]map[string]any), map[string]any{"type": "network", "name": "neutron",
			"id":        "neutron",
			"endpoints": []map[string]any{endpoint("public", network), endpoint("internal", network), endpoint("admin", network)}})
	}
	w.Header().Set("X-Subject-Token", tok)
	writeJSON(w, http.StatusCreated, body)
}

// authorized checks X-Auth-Token; expired and unknown tokens get Keystone's 401, which sends
// gophercloud through its re-authentication path.
func (s *Server) authorized(r *http.Request) bool {
	tok, ok := s.world.tokens[r.Header.Get("X-Auth-Token")]
	return ok && time.Now().Before(tok.expires)
}

// ExpireTokens makes every issued token invalid at once.
func (s *Server) ExpireTokens() {
	s.world.mu.Lock()
	defer s.world.mu.Unlock()
	for k := range s.world.tokens {
		delete(s.world.tokens, k)
	}
}

func keystoneError(w http.ResponseWriter, code int, title, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "title": title, "message": msg}})
}

// roles are the user's Keystone roles: admin, or member and reader for a user of some rules.
func roles(u User) []map[string]any {
	if u.Rules == nil {
		return []map[string]any{{"id": "admin", "name": "admin"}}
	}
	return []map[string]any{{"id": "member", "name": "member"}, {"id": "reader", "name": "reader"}}
}
