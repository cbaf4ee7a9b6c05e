package model

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"
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

// A pod is kept for every pod of the cluster, 150,000 of them at scale: its size is a budget. The
// placement stays shared behind a pointer, and JSON still shows its fields beside the pod's.
func TestPodStaysSmall(t *testing.T) {
	if size := unsafe.Sizeof(Pod{}); size > 208 {
		t.Errorf("model.Pod is %d bytes, over its 208: keep rarely set fields behind a shared pointer", size)
	}
	var p Pod
	if p.Tolerations() != nil || p.NodeSelector() != nil || p.NodeAffinity() != nil || p.Constrained() {
		t.Error("a pod without a placement is constrained")
	}
	p.Placement = &Placement{NodeSelector: map[string]string{"disk": "ssd"}}
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"nodeSelector":{"disk":"ssd"}`) || strings.Contains(string(b), "Placement") || !p.Constrained() {
		t.Errorf("pod with a node selector: %s", b)
	}
}
