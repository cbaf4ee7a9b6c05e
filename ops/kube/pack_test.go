package kube

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/drainctl/drainctl/model"
)

// The first read's pods keep their names and UIDs side by side, not where the decoder made
// them; the pods read after it keep their own (a chunk lives while one of its strings does).
// A full chunk starts another and leaves what it gave alone.
func TestAPodsNameAndUIDArePackedTogether(t *testing.T) {
	s := NewInventory(fake.NewClientset()).pods
	a, b := pod("a", nil), pod("b", nil)
	a.UID, b.UID = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"
	ca, cb := s.cachedPod(a), s.cachedPod(b)
	if ca.pod.Name != "a" || ca.pod.UID != string(a.UID) || cb.pod.Name != "b" || cb.pod.UID != string(b.UID) {
		t.Fatalf("packed: %q %q, %q %q", ca.pod.Name, ca.pod.UID, cb.pod.Name, cb.pod.UID)
	}
	if unsafe.StringData(ca.pod.Name) == unsafe.StringData(a.Name) {
		t.Error("a's name is the decoded object's string, not a packed copy")
	}
	end := unsafe.Add(unsafe.Pointer(unsafe.StringData(ca.pod.UID)), len(ca.pod.UID))
	if unsafe.Pointer(unsafe.StringData(cb.pod.Name)) != end {
		t.Error("b's name does not follow a's UID in the chunk")
	}
	if err := s.Replace([]any{ca, cb}, "1"); err != nil {
		t.Fatal(err)
	}
	c := pod("c", nil)
	if cc := s.cachedPod(c); unsafe.StringData(cc.pod.Name) != unsafe.StringData(c.Name) {
		t.Error("a pod read after the first read was packed: a chunk would live while it does")
	}

	var p packer
	long := strings.Repeat("x", packChunk/8)
	first := p.pack("first")
	for i := range 9 {
		p.pack(long[:len(long)-i])
	}
	if p.b.Len() >= packChunk-len(long) {
		t.Fatalf("nine strings of %d bytes left %d bytes in the chunk: no new one was started", len(long), p.b.Len())
	}
	if first != "first" {
		t.Errorf("a string given out changed: %q", first)
	}
}

// The first read makes each node's run once: a run made and then copied into another left
// the heap's spans of runs half garbage, which the process never gave back.
func TestAFirstReadMakesEachRunOnce(t *testing.T) {
	const nodes, perNode = 200, 30
	list := make([]any, 0, nodes*perNode)
	for n := range nodes {
		for i := range perNode {
			p := pod(fmt.Sprintf("p-%d-%d", n, i), nil)
			p.Spec.NodeName = fmt.Sprintf("n-%d", n)
			list = append(list, newCachedPod(p))
		}
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// The least of three reads: another test's goroutines allocating meanwhile only add.
	made, kept := 0, 0
	for range 3 {
		s := NewInventory(fake.NewClientset()).pods
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := s.Replace(list, "1"); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		kept = 0
		for _, r := range s.runs {
			kept += cap(r.pods)*int(unsafe.Sizeof(model.Pod{})) + cap(r.side)*int(unsafe.Sizeof(podSide{}))
		}
		if m := int(after.TotalAlloc - before.TotalAlloc); made == 0 || m < made {
			made = m
		}
	}
	t.Logf("allocated %d bytes, kept %d", made, kept)
	if made > kept*3/2 {
		t.Errorf("the first read allocated %d bytes to keep %d in its runs: a run was made more than once", made, kept)
	}
}
