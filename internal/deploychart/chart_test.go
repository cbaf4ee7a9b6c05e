package deploychart_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"

	"github.com/drainctl/drainctl/internal/app/metrics"
	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/internal/deploychart"
	"github.com/drainctl/drainctl/internal/simtest"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	kubeclient "github.com/drainctl/drainctl/ops/kube"
	"github.com/drainctl/drainctl/ops/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

const chartDir = "../../deploy/chart"

// One source: every manifest under deploy/ is the chart's output for its profile's values.
// A file edited by hand, or a chart changed without running the generator, fails here.
func TestTheManifestsAreTheChartsOutput(t *testing.T) {
	want, err := deploychart.Generated(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range want {
		got, err := os.ReadFile(filepath.Join("../../deploy", name))
		if err != nil || string(got) != text {
			t.Errorf("deploy/%s is not the chart's output: run go run ./hack/deploygen (read: %v)", name, err)
		}
	}
	// Nothing under deploy/kustomize that the generator does not write.
	err = filepath.WalkDir("../../deploy/kustomize", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("../../deploy", p)
		if _, ok := want[filepath.ToSlash(rel)]; !ok {
			t.Errorf("deploy/%s is not made from the chart: remove it, or add it to deploychart.Layout", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The two ways in install the same objects: kustomize's build of each overlay is the chart's
// rendering with that overlay's values (Helm installs the CRD whatever the values say; an
// overlay has it only with the controller).
func TestKustomizeBuildsWhatTheChartRenders(t *testing.T) {
	for _, p := range deploychart.Layout() {
		if !strings.HasPrefix(p.Dir, "kustomize/") {
			continue
		}
		t.Run(p.Dir, func(t *testing.T) {
			files, crds, err := deploychart.Render(chartDir, p.Values)
			if err != nil {
				t.Fatal(err)
			}
			if enabled(p.Values, "controller") {
				maps.Copy(files, crds)
			}
			chart := objects(t, slices.Collect(maps.Values(files))...)
			res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join("../../deploy", p.Dir))
			if err != nil {
				t.Fatalf("kustomize build deploy/%s: %v", p.Dir, err)
			}
			built, err := res.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			kust := objects(t, string(built))
			if !reflect.DeepEqual(keys(chart), keys(kust)) {
				t.Fatalf("the chart renders %v\nkustomize builds %v", keys(chart), keys(kust))
			}
			for k, o := range chart {
				if !reflect.DeepEqual(o.Object, kust[k].Object) {
					a, _ := yaml.Marshal(o.Object)
					b, _ := yaml.Marshal(kust[k].Object)
					t.Errorf("%s differs:\nchart:\n%s\nkustomize:\n%s", k, a, b)
				}
			}
		})
	}
}

// Each mode's rendering, and the defaults', is accepted by the real API server (a
// server-side dry run, strict field validation) with the CRD installed. In another
// namespace, the admission policies name that one (and its ServiceAccounts), never drainctl.
func TestTheChartIsAcceptedByTheAPIServer(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	tools, _, err := deploychart.RenderChart(ch, nil, "tools")
	if err != nil {
		t.Fatal(err)
	}
	policy := tools["records-policy.yaml"]
	for _, want := range []string{`request.namespace == "tools"`, `startsWith("system:serviceaccount:tools:")`,
		`substring(28) # after "system:serviceaccount:tools:"`} {
		if !strings.Contains(policy, want) {
			t.Errorf("the records policy in namespace tools does not say %s", want)
		}
	}
	for f, text := range tools {
		if strings.Contains(text, "namespace: drainctl\n") || strings.Contains(text, "serviceaccount:drainctl:") {
			t.Errorf("%s rendered into tools names drainctl's namespace", f)
		}
	}
	kubetest.InstallCRDs(t, filepath.Join(chartDir, "crds"))
	kubetest.Namespace(t, kubetest.Client(t), deploychart.Namespace)
	modes := map[string]map[string]any{
		"defaults": nil,
		"every mode": {"proxy": map[string]any{"enabled": true}, "controller": map[string]any{"recovery": true},
			"openstack": map[string]any{"clouds": deploychart.ExampleClouds}},
		"per-node daemon":       {"daemon": map[string]any{"mode": "node"}},
		"no admission policies": {"admissionPolicies": false, "daemon": map[string]any{"mode": "node"}},
	}
	for name, values := range modes {
		t.Run(name, func(t *testing.T) {
			files, _, err := deploychart.Render(chartDir, values)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var paths []string
			for f, text := range files {
				if f == "namespace.yaml" {
					continue
				}
				p := filepath.Join(dir, f)
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, err := range kubetest.Apply(t, true, paths...) {
				t.Error(err)
			}
			policies := strings.Contains(strings.Join(slices.Collect(maps.Values(files)), ""), "kind: ValidatingAdmissionPolicy\n")
			if off := values["admissionPolicies"] == false; policies == off {
				t.Errorf("admissionPolicies %v, but the policies rendered: %v", !off, policies)
			}
		})
	}
}

// The chart's PrometheusRule holds the rules promtool tests (deploy/monitoring/alerts.yaml),
// and its dashboard ConfigMap the dashboard whose queries are held to the metrics.
func TestTheChartCarriesTheTestedAlertsAndDashboard(t *testing.T) {
	files, _, err := deploychart.Render(chartDir, map[string]any{"monitoring": map[string]any{
		"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}},
		"dashboard":      map[string]any{"enabled": true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, files["monitoring.yaml"])
	rule, dash := objs["PrometheusRule/drainctl/drainctl"], objs["ConfigMap/drainctl/grafana-dashboard"]
	var alerts map[string]any
	data, err := os.ReadFile("../../deploy/monitoring/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &alerts); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rule.Object["spec"], alerts) || rule.GetLabels()["release"] != "prom" {
		t.Errorf("the PrometheusRule is not deploy/monitoring/alerts.yaml (labels %v)", rule.GetLabels())
	}
	board, err := os.ReadFile("../../deploy/monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedString(dash.Object, "data", "drainctl.json")
	if got != string(board) || dash.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard ConfigMap is not deploy/monitoring/dashboard.json (%d bytes, labels %v)", len(got), dash.GetLabels())
	}
	if off, _, _ := deploychart.Render(chartDir, nil); off["monitoring.yaml"] != "" {
		t.Errorf("monitoring rendered by default")
	}
}

// Installed as operators do, with Helm's own library on the real API server: install, a
// second install of the same name refused with nothing changed, an upgrade to every mode,
// then uninstall leaving no object of the chart's but the CRD (Helm never deletes crds/,
// so NodeMaintenances survive) and the namespace --create-namespace made. While installed,
// the controller's ServiceAccount may hold its own leader lease and no other role's: its
// RBAC and the chart's admission policies are in force.
func TestTheChartInstallsUpgradesAndUninstalls(t *testing.T) {
	ctx := kubetest.Ctx(t)
	cfg := helmConfig(t, deploychart.Namespace)
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	install := func() error {
		return helmInstall(ctx, cfg, ch, deploychart.Namespace, map[string]any{"controller": map[string]any{"recovery": true}})
	}
	if err := install(); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	dyn, mapper := dynamicClient(t)
	rendered := func(values map[string]any) map[string]unstructured.Unstructured {
		files, _, err := deploychart.Render(chartDir, values)
		if err != nil {
			t.Fatal(err)
		}
		return objects(t, slices.Collect(maps.Values(files))...)
	}
	first := rendered(map[string]any{"controller": map[string]any{"recovery": true}})
	versions := resourceVersions(t, dyn, mapper, first)
	if err := install(); err == nil || !strings.Contains(err.Error(), "cannot reuse a name") {
		t.Errorf("a second helm install of drainctl: %v, want Helm's refusal", err)
	}
	if again := resourceVersions(t, dyn, mapper, first); !reflect.DeepEqual(versions, again) {
		t.Errorf("the refused install changed objects")
	}

	sa := serviceAccountClient(t, "drainctl-controller")
	lease := func(name string) error {
		now := metav1.NewMicroTime(time.Now())
		_, err := sa.CoordinationV1().Leases(deploychart.Namespace).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("drainctl-controller-0"), AcquireTime: &now, RenewTime: &now},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// The API server applies a new policy within a second or so of its creation.
	kubetest.Eventually(t, 20*time.Second, "the controller's ServiceAccount refused the daemon's leader lease", func() bool {
		return apierrors.IsForbidden(lease("drainctl-daemon"))
	})
	if err := lease("drainctl-controller"); err != nil {
		t.Errorf("the controller's ServiceAccount cannot take its leader lease: %v", err)
	}
	if _, err := sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the controller's ServiceAccount cannot list pods: %v", err)
	}
	if err := sa.CoreV1().Nodes().Delete(ctx, "any", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("the controller's ServiceAccount deletes nodes: %v", err)
	}

	// A changed configuration restarts the pods that read it: their template's checksum moves.
	checksum := func() string {
		d, err := kubetest.Client(t).AppsV1().Deployments(deploychart.Namespace).Get(ctx, "drainctl-controller", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations["checksum/config"]
	}
	installed := checksum()
	every := map[string]any{"proxy": map[string]any{"enabled": true}, "controller": map[string]any{"recovery": true},
		"config": "[timeouts]\npoll = \"2s\"\n"}
	u := action.NewUpgrade(cfg)
	u.Namespace, u.ServerSideApply, u.WaitStrategy, u.Timeout = deploychart.Namespace, "true", kube.HookOnlyStrategy, time.Minute
	if _, err := u.RunWithContext(ctx, "drainctl", ch, every); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	if now := checksum(); installed == "" || now == installed {
		t.Errorf("the controller's pod template after a changed configuration: checksum %q, was %q", now, installed)
	}
	// The proxy's token, made by the chart, is kept by the next upgrade.
	token := func() string {
		s, err := kubetest.Client(t).CoreV1().Secrets(deploychart.Namespace).Get(ctx, "drainctl-proxy-token", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the proxy's token: %v", err)
		}
		return string(s.Data["token"])
	}
	before := token()
	if _, err := u.RunWithContext(ctx, "drainctl", ch, every); err != nil {
		t.Fatalf("helm upgrade again: %v", err)
	}
	if after := token(); len(before) < 32 || after != before {
		t.Errorf("the proxy's token %d bytes, then changed by an upgrade: %v", len(before), after != before)
	}
	upgraded := rendered(every)
	for k := range upgraded {
		if _, err := get(dyn, mapper, upgraded[k]); err != nil {
			t.Errorf("after the upgrade %s: %v", k, err)
		}
	}

	if err := helmUninstall(cfg); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	maps.Copy(upgraded, first)
	for k, o := range upgraded {
		_, err := get(dyn, mapper, o)
		switch {
		case o.GetKind() == "Namespace":
		case err == nil:
			t.Errorf("left after helm uninstall: %s", k)
		case !apierrors.IsNotFound(err):
			t.Errorf("%s: %v", k, err)
		}
	}
	crd := unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("nodemaintenances.maintenance.drainctl.io")
	if _, err := get(dyn, mapper, crd); err != nil {
		t.Errorf("the CRD after helm uninstall: %v (kept by Helm's policy for crds/)", err)
	}
}

func enabled(values map[string]any, mode string) bool {
	m, _ := values[mode].(map[string]any)
	return m["enabled"] == true
}

// objects parses YAML streams into objects by kind/namespace/name.
func objects(t *testing.T, texts ...string) map[string]unstructured.Unstructured {
	t.Helper()
	out := map[string]unstructured.Unstructured{}
	for _, text := range texts {
		docs := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
		for {
			doc, err := docs.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				t.Fatal(err)
			}
			if len(m) == 0 {
				continue
			}
			o := unstructured.Unstructured{Object: m}
			out[fmt.Sprintf("%s/%s/%s", o.GetKind(), o.GetNamespace(), o.GetName())] = o
		}
	}
	return out
}

func keys(m map[string]unstructured.Unstructured) []string {
	return slices.Sorted(maps.Keys(m))
}

// helmInstall is helm install drainctl -n ns --create-namespace (server-side apply, as Helm
// 4's CLI), waiting for no readiness: envtest runs no pods.
func helmInstall(ctx context.Context, cfg *action.Configuration, ch *chart.Chart, ns string, values map[string]any) error {
	i := action.NewInstall(cfg)
	i.ReleaseName, i.Namespace, i.CreateNamespace, i.ServerSideApply = "drainctl", ns, true, true
	i.WaitStrategy, i.Timeout = kube.HookOnlyStrategy, time.Minute
	_, err := i.RunWithContext(ctx, ch, values)
	return err
}

func helmUninstall(cfg *action.Configuration) error {
	un := action.NewUninstall(cfg)
	un.WaitStrategy, un.Timeout = kube.HookOnlyStrategy, time.Minute
	_, err := un.Run("drainctl")
	return err
}

func helmConfig(t *testing.T, ns string) *action.Configuration {
	t.Helper()
	kc := kubetest.Kubeconfig(t)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kc, &ns
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, ns, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func dynamicClient(t *testing.T) (dynamic.Interface, meta.RESTMapper) {
	t.Helper()
	rc := kubetest.Config(t)
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return dynamic.NewForConfigOrDie(rc), restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
}

func get(dyn dynamic.Interface, mapper meta.RESTMapper, o unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return dyn.Resource(m.Resource).Namespace(o.GetNamespace()).Get(context.Background(), o.GetName(), metav1.GetOptions{})
	}
	return dyn.Resource(m.Resource).Get(context.Background(), o.GetName(), metav1.GetOptions{})
}

func resourceVersions(t *testing.T, dyn dynamic.Interface, mapper meta.RESTMapper,
	objs map[string]unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, o := range objs {
		got, err := get(dyn, mapper, o)
		if err != nil {
			t.Fatalf("%s after helm install: %v", k, err)
		}
		out[k] = got.GetResourceVersion()
	}
	return out
}

// serviceAccountClient is a client holding a token of the ServiceAccount, as its pod would.
func serviceAccountClient(t *testing.T, sa string) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(tokenConfig(t, deploychart.Namespace, sa))
}

// The controller as the chart installs it, in a namespace of the operator's choosing: its
// real code, holding its ServiceAccount's own token (the chart's RBAC and admission policies
// in force), keeping its leases and records in that namespace, maintains a node through a
// NodeMaintenance of the chart's CRD: cordoned, nova-compute disabled, VMs and pods gone.
func TestTheControllerAsTheChartInstallsItMaintainsANode(t *testing.T) {
	const ns = "maintenance"
	c := simtest.NewCluster(t, 50)
	ctx := kubetest.Ctx(t)
	cfg := helmConfig(t, ns)
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	scraper := map[string]any{"namespace": ns, "name": "prometheus"}
	if err := helmInstall(ctx, cfg, ch, ns, map[string]any{"daemon": map[string]any{"enabled": false},
		"monitoring": map[string]any{"scrapers": []any{scraper}}}); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Cleanup(func() {
		if err := helmUninstall(cfg); err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
	})

	sa := kubeclient.Tune(tokenConfig(t, ns, "drainctl-controller"), kubeclient.Options{QPS: 200, Burst: 400})
	// Its /metrics, guarded with the controller's own token as the chart grants it, answers
	// the scraper monitoring.scrapers binds, and no other account.
	guarded := httptest.NewTLSServer(metrics.Guarded(metrics.New().Handler(), kubernetes.NewForConfigOrDie(sa), func(string) {}))
	t.Cleanup(guarded.Close)
	for _, who := range []struct {
		name string
		code int
	}{{"prometheus", 200}, {"drainctl-controller", 403}} {
		if _, err := c.CS.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: who.name}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if code, _ := kubetest.Scrape(guarded.Listener.Addr().String(), "/metrics", tokenConfig(t, ns, who.name).BearerToken); code != who.code {
			t.Errorf("/metrics scraped by %s: %d, want %d", who.name, code, who.code)
		}
	}
	kc := c.KubeClientFor(sa).InNamespace(ns)
	store := kubeclient.NewMaintenances(dynamic.NewForConfigOrDie(sa))
	runCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); store.Shutdown() })
	if err := store.Start(runCtx, 30*time.Second); err != nil {
		t.Fatalf("the controller's ServiceAccount watches NodeMaintenances: %v", err)
	}
	eng := ops.NewEngine(kc, c.Nova, c.Cfg, ops.EngineOptions{Holder: "drainctl-controller@test", Poll: 5 * time.Millisecond,
		StallAfter: 300 * time.Millisecond, Backoff: 20 * time.Millisecond})
	mc := &controllers.MaintenanceController{Engine: eng, Store: store, Run: ops.RunOptions{Policy: simtest.Defaults()},
		Resync: 200 * time.Millisecond, Backoff: 50 * time.Millisecond, Events: kc}
	done := make(chan struct{})
	go func() { mc.Serve(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	c0 := c.Name("c0")
	if err := c.CS.CoreV1().Pods(c.NS).Delete(ctx, "shell", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	admin := kubeclient.NewMaintenances(dynamic.NewForConfigOrDie(kubetest.Config(t)))
	if _, err := admin.Create(ctx, c0, "firmware upgrade"); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 60*time.Second, "the NodeMaintenance Succeeded", func() bool {
		return maintenance(store, c0).Status.Phase == model.MaintenanceSucceeded
	})
	nm := maintenance(store, c0)
	h, _ := c.World.Host(c0)
	if n := c.Node(c0); n.Schedulable || h.Enabled || nm.Status.MigratedVMs != 2 || nm.Status.EvictionPods != 2 {
		t.Errorf("node schedulable %v, nova-compute enabled %v, status %+v", n.Schedulable, h.Enabled, nm.Status)
	}
	for _, vm := range []string{"vm-a", "vm-b"} {
		if s, _ := c.World.ServerByName(vm); s.Host == c0 {
			t.Errorf("%s still on %s", vm, c0)
		}
	}
	// The node's lease, held while the NodeMaintenance lasts, is in the release's namespace.
	if _, err := c.CS.CoordinationV1().Leases(ns).Get(ctx, "drainctl-"+c0, metav1.GetOptions{}); err != nil {
		t.Errorf("the node's lease in %s: %v", ns, err)
	}
	if _, err := c.CS.CoordinationV1().Leases(deploychart.Namespace).Get(ctx, "drainctl-"+c0, metav1.GetOptions{}); err == nil {
		t.Errorf("the node's lease in %s, not the release's namespace", deploychart.Namespace)
	}
}

func maintenance(store *kubeclient.Maintenances, node string) model.NodeMaintenance {
	for _, nm := range store.List() {
		if nm.Name == node {
			return nm
		}
	}
	return model.NodeMaintenance{}
}

// tokenConfig is a client configuration holding a token of the ServiceAccount, as its pod's.
func tokenConfig(t *testing.T, ns, sa string) *rest.Config {
	t.Helper()
	tr, err := kubetest.Client(t).CoreV1().ServiceAccounts(ns).CreateToken(kubetest.Ctx(t), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(kubetest.Config(t))
	cfg.BearerToken = tr.Status.Token
	return cfg
}
