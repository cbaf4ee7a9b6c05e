package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// Apply creates every object of the manifest files, as `kubectl apply` would the first time
// (an object that exists already is left as it is). With dryRun the API server validates
// everything (schemas, RBAC rules, references) and stores nothing, as
// `kubectl apply --dry-run=server` does. Errors are returned per object, in file order.
func Apply(t testing.TB, dryRun bool, files ...string) []error {
	t.Helper()
	cfg := Config(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.CreateOptions{FieldValidation: "Strict"} // as kubectl apply: a misspelt field is an error
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var errs []error
	for _, f := range files {
		for _, obj := range Manifests(t, f) {
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", f, gvk, err))
				continue
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
			}
			if _, err := ri.Create(Ctx(t), &obj, opts); err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("%s: %s %s: %w", f, gvk.Kind, obj.GetName(), err))
			}
		}
	}
	return errs
}

// Manifests are the objects of the manifest files, in file order.
func Manifests(t testing.TB, files ...string) []unstructured.Unstructured {
	t.Helper()
	var out []unstructured.Unstructured
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
			if obj.Object != nil {
				out = append(out, obj)
			}
		}
	}
	return out
}
