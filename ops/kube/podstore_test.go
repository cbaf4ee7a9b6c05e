package kube

import (
	"reflect"
	"runtime"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/drainctl/drainctl/model"
)

func noPDBs() map[string][]*policyv1.PodDisruptionBudget { return nil }

// The store keeps each node's pods sorted, one copy each, and keeps pods labelled alike
// sharing one label map after the first read's objects are gone.
func TestPodStoreKeepsRunsSortedAndLabelsShared(t *testing.T) {
	s := NewInventory(fake.NewClientset()).pods
	web := map[string]string{"app": "web"}
	if err := s.Replace([]any{newCachedPod(pod("c", web)), newCachedPod(pod("a", web))}, "1"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runtime.GC() // the list's cachedPods are garbage now
	}
	_ = s.Add(newCachedPod(pod("b", map[string]string{"app": "web"})))
	unbound := pod("pending", web)
	unbound.Spec.NodeName = ""
	_ = s.Add(newCachedPod(unbound))
	run := s.run("n1", noPDBs)
	if names := podNames(run); !reflect.DeepEqual(names, []string{"a", "b", "c"}) {
		t.Fatalf("run on n1: %v", names)
	}
	if reflect.ValueOf(run[1].Labels).UnsafePointer() != reflect.ValueOf(run[0].Labels).UnsafePointer() {
		t.Error("a pod added after the first read has a label map of its own")
	}
	before := s.run("n1", noPDBs)
	_ = s.Delete(newCachedPod(pod("a", web)))
	if names := podNames(s.run("n1", noPDBs)); !reflect.DeepEqual(names, []string{"b", "c"}) {
		t.Errorf("after a went: %v", names)
	}
	if names := podNames(before); !reflect.DeepEqual(names, []string{"a", "b", "c"}) {
		t.Errorf("a run handed out was written: %v", names)
	}
	if _, ok := s.uid("n1", "ns", "a"); ok {
		t.Error("a is gone, yet its UID is found")
	}
}

func podNames(pods []model.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
