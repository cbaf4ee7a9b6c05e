package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

// TestManifestsDryRun sends every manifest in deploy/ to the real API server with
// dryRun=All (what `kubectl apply --dry-run=server` does): schemas, RBAC rules and
// references are validated, nothing is stored.
func TestManifestsDryRun(t *testing.T) {
	cfg := kubetest.Config(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("deploy/*.yaml")
	if len(files) < 4 {
		t.Fatalf("manifests: %v", files)
	}
	// The namespace must exist for the namespaced objects' dry run.
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "drainctl"}}}
	dyn.Resource(nsGVR).Create(kubetest.Ctx(t), ns, metav1.CreateOptions{})
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if obj.Object == nil {
				continue
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %s: %v", f, gvk, err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
			}
			_, err = ri.Create(kubetest.Ctx(t), &obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil && !apierrors.IsAlreadyExists(err) { // apply would update it
				t.Errorf("%s: %s %s: %v", f, gvk.Kind, obj.GetName(), err)
			}
		}
	}
}

var nsGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
