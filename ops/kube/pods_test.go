package kube

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels,
		Annotations: map[string]string{"prometheus.io/scrape": "true", "cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}},
		Spec: corev1.PodSpec{NodeName: "n1", Tolerations: []corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}}
}

// Pods labelled alike share one label map, pods placed alike one placement; the cache keeps
// the annotations drainctl reads and drops the rest.
func TestCachedPodsShareWhatIsAlike(t *testing.T) {
	a := newCachedPod(pod("a", map[string]string{"app": "web", "tier": "front"}))
	b := newCachedPod(pod("b", map[string]string{"tier": "front", "app": "web"}))
	c := newCachedPod(pod("c", map[string]string{"app": "db"}))
	if a.labels != b.labels || a.labels == c.labels {
		t.Errorf("label sets: a %p b %p c %p; want a == b != c", a.labels, b.labels, c.labels)
	}
	if a.pod.Placement == nil || a.pod.Placement != c.pod.Placement {
		t.Error("the same tolerations are not shared")
	}
	d := pod("d", nil)
	d.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	if pd := newCachedPod(d).pod; pd.Placement == a.pod.Placement || pd.NodeSelector()["disk"] != "ssd" || len(pd.Tolerations()) != 1 {
		t.Errorf("a node selector more: placement %+v, shared with a: %v", pd.Placement, pd.Placement == a.pod.Placement)
	}
	if e := newCachedPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}}).pod; e.Placement != nil || e.Tolerations() != nil {
		t.Errorf("a pod without constraints has placement %+v", e.Placement)
	}
	if a.pod.Labels["tier"] != "front" || c.pod.Labels["app"] != "db" {
		t.Errorf("labels %v %v", a.pod.Labels, c.pod.Labels)
	}
	if got := a.pod.Annotations; len(got) != 1 || got["cluster-autoscaler.kubernetes.io/safe-to-evict"] != "false" {
		t.Errorf("annotations kept: %v", got)
	}
}

// A shared copy goes with the last pod holding it.
func TestSharedLabelsAreForgotten(t *testing.T) {
	key := "only-here=1\x00"
	p := newCachedPod(pod("x", map[string]string{"only-here": "1"}))
	if _, ok := labelSets.Load(key); !ok {
		t.Fatal("no entry for the label set")
	}
	runtime.KeepAlive(p)
	p = nil
	for i := 0; i < 50; i++ {
		runtime.GC()
		if _, ok := labelSets.Load(key); !ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the label set's entry outlived every pod holding it")
}
