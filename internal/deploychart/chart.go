// Package deploychart renders drainctl's Helm chart (deploy/chart), the one source of its
// manifests: the plain files of deploy/ and the kustomize base and overlays are its output
// for fixed values (Layout), written by hack/deploygen and held to it by the tests.
package deploychart

import (
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

// Namespace is drainctl's default namespace: the plain files' and kustomize's.
const Namespace = "drainctl"

// Render renders the chart at dir with values over its defaults, as helm template would
// (release drainctl in the drainctl namespace): each template's output by its file name,
// empty ones left out, and the CRDs by theirs.
func Render(dir string, values map[string]any) (files map[string]string, crds map[string]string, err error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, nil, err
	}
	return RenderChart(ch, values, Namespace)
}

// RenderChart renders a loaded chart into namespace.
func RenderChart(ch *chart.Chart, values map[string]any, namespace string) (files, crds map[string]string, err error) {
	top, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: "drainctl", Namespace: namespace, IsInstall: true}, nil)
	if err != nil {
		return nil, nil, err
	}
	out, err := engine.Render(ch, top)
	if err != nil {
		return nil, nil, err
	}
	files = map[string]string{}
	for name, text := range out {
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(text) == "" {
			continue
		}
		files[path.Base(name)] = strings.TrimLeft(text, "\n")
	}
	crds = map[string]string{}
	for _, f := range ch.CRDs() {
		crds[path.Base(f.Name)] = string(f.Data)
	}
	return files, crds, nil
}

// A Profile is a set of values and the files of the chart's output it lays out in a
// directory of deploy/.
type Profile struct {
	Dir    string         // under deploy/
	Values map[string]any // over the chart's defaults
	Files  []string       // the templates' (or CRDs') outputs written there
	// Kustomization is the kustomization.yaml written beside them ("" for none); Bases are
	// the directories (relative) it builds on.
	Kustomization bool
	Bases         []string
}

// set builds nested values from dotted keys: set("a.b", 1) is {a: {b: 1}}.
func set(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m, keys := out, strings.Split(kv[i].(string), ".")
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = kv[i+1]
	}
	return out
}

// ExampleClouds is the clouds.yaml of the plain openstack-secret.yaml: a template to edit.
const ExampleClouds = `clouds:
  openstack:
    auth:
      auth_url: https://keystone.example.com:5000/v3
      username: drainctl
      password: CHANGE-ME
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: internal
`

// only enables one mode of the three (and the namespace, as plain files and kustomize make
// it; their users make the proxy's token, which a file cannot hold).
func only(kv ...any) map[string]any {
	base := []any{"createNamespace", true, "daemon.enabled", false, "controller.enabled", false, "proxy.enabled", false,
		"proxy.createToken", false}
	return set(append(base, kv...)...)
}

// Layout is every directory of deploy/ made from the chart: the plain files (every mode on,
// the per-node daemon's from a second rendering), the kustomize base and one overlay a mode.
func Layout() []Profile {
	common := []string{"namespace.yaml", "leases-role.yaml", "records-policy.yaml", "operator-rbac.yaml", "metrics-rbac.yaml",
		"config.yaml"}
	return []Profile{
		{Dir: ".", Values: set("createNamespace", true, "openstack.clouds", ExampleClouds, "controller.recovery", true,
			"proxy.enabled", true, "proxy.createToken", false),
			Files: append(slices.Clone(common), "openstack-secret.yaml", "crd-nodemaintenance.yaml", "daemon-rbac.yaml",
				"daemon-cluster.yaml", "controller-rbac.yaml", "controller.yaml", "recovery-rbac.yaml", "proxy-rbac.yaml", "proxy.yaml")},
		{Dir: ".", Values: set("createNamespace", true, "daemon.mode", "node"), Files: []string{"daemon.yaml", "daemon-policy.yaml"}},
		{Dir: "kustomize/base", Values: only(), Files: common, Kustomization: true},
		{Dir: "kustomize/daemon", Values: only("daemon.enabled", true), Files: []string{"daemon-rbac.yaml", "daemon-cluster.yaml"},
			Kustomization: true, Bases: []string{"../base"}},
		{Dir: "kustomize/daemon-node", Values: only("daemon.enabled", true, "daemon.mode", "node"),
			Files: []string{"daemon-rbac.yaml", "daemon-policy.yaml", "daemon.yaml"}, Kustomization: true, Bases: []string{"../base"}},
		{Dir: "kustomize/controller", Values: only("controller.enabled", true),
			Files:         []string{"crd-nodemaintenance.yaml", "controller-rbac.yaml", "controller.yaml"},
			Kustomization: true, Bases: []string{"../base"}},
		{Dir: "kustomize/controller-recovery", Values: only("controller.enabled", true, "controller.recovery", true),
			Files: []string{"recovery-rbac.yaml"}, Kustomization: true, Bases: []string{"../controller"}},
		{Dir: "kustomize/proxy", Values: only("proxy.enabled", true), Files: []string{"proxy-rbac.yaml", "proxy.yaml"},
			Kustomization: true, Bases: []string{"../base"}},
	}
}

// Watched are the files of deploy/monitoring (their source: promtool tests them there) that the
// chart carries in its files/ for its PrometheusRule and dashboard.
var Watched = []string{"alerts.yaml", "dashboard.json"}

// Generated is what Layout makes of the chart at dir: each file's text by its path under
// deploy/. The chart's copies of the monitoring files come first: they are read from
// deploy/monitoring, beside dir.
func Generated(dir string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range Watched {
		data, err := os.ReadFile(path.Join(dir, "../monitoring", f))
		if err != nil {
			return nil, err
		}
		out[path.Join("chart/files", f)] = string(data)
	}
	for _, p := range Layout() {
		files, crds, err := Render(dir, p.Values)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Dir, err)
		}
		maps.Copy(files, crds)
		for _, f := range p.Files {
			text, ok := files[f]
			if !ok {
				return nil, fmt.Errorf("%s: the chart renders no %s with these values", p.Dir, f)
			}
			out[path.Join(p.Dir, f)] = generatedHeader + text
		}
		if p.Kustomization {
			out[path.Join(p.Dir, "kustomization.yaml")] = kustomization(p)
		}
	}
	return out, nil
}

// generatedHeader heads every file deploygen writes.
const generatedHeader = "# Generated from deploy/chart by hack/deploygen: edit the chart, then go run ./hack/deploygen.\n"

func kustomization(p Profile) string {
	var b strings.Builder
	b.WriteString(generatedHeader)
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, r := range append(slices.Clone(p.Bases), p.Files...) {
		b.WriteString("  - " + r + "\n")
	}
	return b.String()
}
