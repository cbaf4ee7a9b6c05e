package metrics

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Guarded answers /metrics only to a caller the API server authenticates (its bearer token,
// by a TokenReview) and lets GET /metrics (a SubjectAccessReview: a ClusterRole with
// nonResourceURLs ["/metrics"], verbs ["get"]), as Kubernetes' own components and operators
// serve theirs; the health checks answer anyone (the kubelet's probes) and say only ok.
// Each answer is kept a while by the token's hash (allowed a minute, refused ten seconds), so
// a scrape costs no review. (controller-runtime's filter does the same through
// k8s.io/apiserver, whose packages make the binary 20 MB larger and every drainctl process,
// the TUI too, 10 MiB larger at start: measured, --version's resident set 52 MiB against 42.)
func Guarded(h http.Handler, cs kubernetes.Interface, logf func(string)) http.Handler {
	g := &guard{cs: cs, logf: logf, seen: map[[32]byte]verdict{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			h.ServeHTTP(w, r)
			return
		}
		token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !bearer || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="drainctl metrics"`)
			http.Error(w, "Unauthorized: send a Kubernetes bearer token", http.StatusUnauthorized)
			return
		}
		v := g.review(r.Context(), token, r.URL.Path, strings.ToLower(r.Method))
		if v.status != http.StatusOK {
			if v.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="drainctl metrics"`)
			}
			http.Error(w, v.why, v.status)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// guard reviews the callers' tokens with the API server, keeping its answers a while.
type guard struct {
	cs   kubernetes.Interface
	logf func(string)
	mu   sync.Mutex
	seen map[[32]byte]verdict
}

// verdict is the API server's answer for a token: 200, 401 or 403, and why.
type verdict struct {
	status  int
	why     string
	expires time.Time
}

// keptAtMost bounds the answers kept: a flood of made-up tokens cannot grow it.
const keptAtMost = 256

func (g *guard) review(ctx context.Context, token, path, verb string) verdict {
	key := sha256.Sum256([]byte(verb + " " + path + " " + token))
	now := time.Now()
	g.mu.Lock()
	v, ok := g.seen[key]
	g.mu.Unlock()
	if ok && now.Before(v.expires) {
		return v
	}
	v = g.ask(ctx, token, path, verb)
	v.expires = now.Add(time.Minute)
	if v.status != http.StatusOK {
		v.expires = now.Add(10 * time.Second)
	}
	g.mu.Lock()
	if len(g.seen) >= keptAtMost {
		for k, old := range g.seen {
			if now.After(old.expires) || len(g.seen) >= keptAtMost {
				delete(g.seen, k)
			}
		}
	}
	g.seen[key] = v
	g.mu.Unlock()
	return v
}

// ask is one TokenReview, then one SubjectAccessReview for the user it names. A review the
// API server cannot answer refuses (503), never lets through.
func (g *guard) ask(ctx context.Context, token, path, verb string) verdict {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := g.cs.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		g.logf("cannot review a caller's token: " + err.Error())
		return verdict{status: http.StatusServiceUnavailable, why: "the API server cannot review the token now"}
	}
	if !tr.Status.Authenticated {
		return verdict{status: http.StatusUnauthorized, why: "Unauthorized: the API server does not know this token"}
	}
	u := tr.Status.User
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	review := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: u.Username, UID: u.UID, Groups: u.Groups,
		Extra: extra, NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb}}}
	sar, err := g.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		g.logf("cannot review what " + u.Username + " may do: " + err.Error())
		return verdict{status: http.StatusServiceUnavailable, why: "the API server cannot review the caller now"}
	}
	if !sar.Status.Allowed {
		g.logf("refused " + verb + " " + path + " to " + u.Username + ": not allowed by the API server's authorization")
		return verdict{status: http.StatusForbidden,
			why: "Forbidden: " + u.Username + " may not get " + path + " (bind the ClusterRole drainctl-metrics-reader)"}
	}
	return verdict{status: http.StatusOK}
}
