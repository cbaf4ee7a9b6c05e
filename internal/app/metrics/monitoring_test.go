package metrics

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"
)

// deploy/monitoring is what a person on call is given: alert rules, their promtool tests, a
// Grafana dashboard, and the runbook the alerts link to (docs/guide/alerts.md).
const monitoring = "../../../deploy/monitoring/"

// The alert rules pass promtool's check, and its unit tests: each alert fires on series
// shaped as drainctl exports them, and not otherwise. promtool is Debian's prometheus
// package (.ci/run installs it); without it the test skips, except in CI.
func TestTheAlertsFireWhenTheyShould(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no promtool in CI: .ci/run installs Debian's prometheus package")
		}
		t.Skip("no promtool (apt-get install prometheus)")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = monitoring
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every alert has a test case in which it fires, a severity, and a runbook in the guide;
// every metric the alerts, their tests and the dashboard name is one drainctl exports (the
// alerts may also read Prometheus' own up), so a renamed metric fails here, not at 3 a.m.
func TestTheAlertsAndTheDashboardReadDrainctlsMetrics(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	var tests struct {
		Tests []struct {
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	read(t, "alerts.yaml", func(b []byte) error { return yaml.Unmarshal(b, &rules) })
	read(t, "alerts_test.yaml", func(b []byte) error { return yaml.Unmarshal(b, &tests) })
	read(t, "dashboard.json", func(b []byte) error { return json.Unmarshal(b, &dashboard) })
	runbook, err := os.ReadFile("../../../docs/guide/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedSeries()
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, c := range tc.AlertRuleTest {
			fires[c.Alertname] = fires[c.Alertname] || len(c.ExpAlerts) > 0
		}
		for _, s := range tc.InputSeries {
			if name, _, _ := strings.Cut(s.Series, "{"); !exported[name] && name != "up" {
				t.Errorf("alerts_test.yaml: series %s is no metric drainctl exports", name)
			}
		}
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			for _, name := range metricsIn(r.Expr) {
				if !exported[name] && name != "up" {
					t.Errorf("alert %s reads %s, no metric drainctl exports", r.Alert, name)
				}
			}
			if !fires[r.Alert] {
				t.Errorf("alert %s: no case of alerts_test.yaml fires it", r.Alert)
			}
			if !slices.Contains([]string{"critical", "warning"}, r.Labels["severity"]) {
				t.Errorf("alert %s: severity %q; want critical or warning", r.Alert, r.Labels["severity"])
			}
			anchor := "#" + strings.ToLower(r.Alert)
			if !strings.HasSuffix(r.Annotations["runbook_url"], "/docs/guide/alerts.md"+anchor) ||
				!strings.Contains(string(runbook), "\n## "+r.Alert+"\n") {
				t.Errorf("alert %s: its runbook_url %q is not a section of docs/guide/alerts.md", r.Alert, r.Annotations["runbook_url"])
			}
		}
	}
	if alerts < 10 || len(dashboard.Panels) < 10 {
		t.Fatalf("read %d alerts and %d panels: is the reading broken?", alerts, len(dashboard.Panels))
	}
	for _, p := range dashboard.Panels {
		for _, q := range p.Targets {
			names := metricsIn(q.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q: %q reads no metric", p.Title, q.Expr)
			}
			for _, name := range names {
				if !exported[name] {
					t.Errorf("panel %q reads %s, no metric drainctl exports", p.Title, name)
				}
			}
		}
	}
}

// exportedSeries are the series names drainctl's metrics expose (a histogram's _bucket,
// _sum and _count).
func exportedSeries() map[string]bool {
	out := map[string]bool{}
	name := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range append(New().all(), fleet{}) {
		ch := make(chan *prometheus.Desc, 8)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			n := name.FindStringSubmatch(d.String())[1]
			for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
				out[n+suffix] = true
			}
		}
	}
	return out
}

// promqlWords are PromQL's own words: functions, aggregations, operators, a histogram's le.
var promqlWords = strings.Fields(`sum min max avg count rate increase irate delta histogram_quantile time by without
	and or unless on ignoring group_left group_right bool offset le abs clamp_min clamp_max`)

// metricsIn are the metric names a PromQL expression reads: its identifiers, less label
// matchers ({…}), grouping labels (by (…)), strings, durations and PromQL's own words.
func metricsIn(expr string) []string {
	for _, strip := range []string{`"[^"]*"`, `\{[^}]*\}`, `\b(by|without|on|ignoring)\s*\([^)]*\)`, `\[[^\]]*\]`} {
		expr = regexp.MustCompile(strip).ReplaceAllString(expr, " ")
	}
	var out []string
	for _, id := range regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`).FindAllString(expr, -1) {
		if !slices.Contains(promqlWords, id) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func read(t *testing.T, name string, decode func([]byte) error) {
	t.Helper()
	b, err := os.ReadFile(monitoring + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := decode(b); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
