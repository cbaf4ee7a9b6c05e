package main

import (
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// TestManifestsDryRun sends every manifest in deploy/ to the real API server with
// dryRun=All (what `kubectl apply --dry-run=server` does): schemas, RBAC rules and
// references are validated, nothing is stored.
func TestManifestsDryRun(t *testing.T) {
	files, _ := filepath.Glob("deploy/*.yaml")
	if len(files) < 8 {
		t.Fatalf("manifests: %v", files)
	}
	// The namespace must exist for the namespaced objects' dry run.
	dyn, err := dynamic.NewForConfig(kubetest.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "drainctl"}}}
	dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(kubetest.Ctx(t), ns, metav1.CreateOptions{})
	for _, err := range kubetest.Apply(t, true, files...) {
		t.Error(err)
	}
}
