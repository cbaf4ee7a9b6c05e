package kubetest

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/drainctl/drainctl/ops/kube"
)

// KubeClient starts drainctl's informer inventory on cfg (synced) for the test's duration
// and returns the engine's Kubernetes client over it.
func KubeClient(t testing.TB, cfg *rest.Config) *kube.Client {
	t.Helper()
	cs, err := kube.NewClientset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inv := kube.NewInventory(cs)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); inv.Shutdown() })
	if err := inv.Start(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return kube.NewClient(cs, inv)
}
