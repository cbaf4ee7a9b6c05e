package kube

import (
	"net/http"
	"testing"
)

// What the pace is told of the API server: a watch and an informer's list are not answers to
// time (they last as long as they watch, or as the cluster is big); an eviction a budget
// refuses (429) answered, and is no sign of a throttling server; any other 429 or 5xx is.
func TestAnAnswerCountsForThePaceAsTheServerMeantIt(t *testing.T) {
	for _, c := range []struct {
		method, url string
		status      int
		want        int
		told        bool
	}{
		{"GET", "/api/v1/pods?watch=true&resourceVersion=7", 200, 200, false},
		{"GET", "/api/v1/pods?limit=500&resourceVersion=0", 200, 200, false},
		{"POST", "/api/v1/namespaces/a/pods/p/eviction", 429, 200, true},
		{"POST", "/api/v1/namespaces/a/pods/p/eviction", 500, 500, true},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/drainctl/leases/x", 429, 429, true},
		{"GET", "/api/v1/nodes/c0", 200, 200, true},
	} {
		r, err := http.NewRequest(c.method, "https://api.example"+c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, told := judgeAnswer(r, c.status); got != c.want || told != c.told {
			t.Errorf("%s %s answered %d: told %v as %d; want %v as %d", c.method, c.url, c.status, told, got, c.told, c.want)
		}
	}
}
