package model

import (
	"strings"
	"testing"
)

// ComparePods sorts as the pods' keys do, namespaces that prefix each other included.
func TestComparePodsIsKeyOrder(t *testing.T) {
	pods := []Pod{{Namespace: "a", Name: "b"}, {Namespace: "a-x", Name: "c"}, {Namespace: "a", Name: "a"},
		{Namespace: "ab", Name: "a"}, {Namespace: "a", Name: "b-"}, {Namespace: "", Name: "z"}, {Namespace: "a/", Name: ""}}
	for _, p := range pods {
		for _, q := range pods {
			want := strings.Compare(p.Key(), q.Key())
			if got := ComparePods(p, q); (got < 0) != (want < 0) || (got == 0) != (want == 0) {
				t.Errorf("ComparePods(%s, %s) = %d, keys compare %d", p.Key(), q.Key(), got, want)
			}
		}
	}
}
