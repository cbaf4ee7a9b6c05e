package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The proxy's guards: every caller authenticates, and no caller empties the pool faster than
// the configuration's bounds.

// authenticate lets through the callers that present the proxy's token (compared in
// constant time), and takes the token off the request: it is the proxy's, not the backend's.
func (p *Proxy) authenticate(next http.Handler) http.Handler {
	if p.o.Token == "" {
		return next
	}
	want := sha256.Sum256([]byte(p.o.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(token))
		if !bearer || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			p.o.Logf("refused %s %q from %s: no valid bearer token", r.Method, r.URL.Path, r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="drainctl cloudpool proxy"`)
			writeError(w, http.StatusUnauthorized, "not authenticated",
				"send the proxy's token ([cloudpool] proxy_token_file) as Authorization: Bearer <token>")
			return
		}
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})
}

// bounded says why removing n nodes now is past the proxy's bounds ("": it is not): more than
// max_scale_down at once, or more than max_scale_down_per_hour within the last hour.
func (p *Proxy) bounded(n int) string {
	if n > p.o.MaxScaleDown {
		return fmt.Sprintf("at most %d node(s) a request ([cloudpool] max_scale_down)", p.o.MaxScaleDown)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	hour := time.Now().Add(-time.Hour)
	p.removed = slices.DeleteFunc(p.removed, func(t time.Time) bool { return t.Before(hour) })
	if len(p.removed)+n > p.o.MaxScaleDownPerHour {
		return fmt.Sprintf("%d node(s) removed in the last hour; at most %d an hour ([cloudpool] max_scale_down_per_hour)",
			len(p.removed), p.o.MaxScaleDownPerHour)
	}
	return ""
}
