package metrics

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drainctl/drainctl/internal/docblock"
)

var update = flag.Bool("update", false, "rewrite docs/reference.md's metrics")

// The reference's metrics are the ones registered, each with its type's labels and help, as
// the collectors describe themselves: a metric added or dropped fails until -update.
func TestTheReferenceNamesEveryMetric(t *testing.T) {
	desc := regexp.MustCompile(`fqName: "([^"]+)", help: "((?:[^"\\]|\\.)*)".*variableLabels: \{([^}]*)\}`)
	rows := []string{"| metric | labels | meaning |", "|---|---|---|"}
	for _, c := range append(New().all(), fleet{}) {
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := desc.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read %s", d)
			}
			labels := "-"
			if m[3] != "" {
				labels = "`" + strings.ReplaceAll(m[3], ",", "`, `") + "`"
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %s |", m[1], labels, m[2]))
		}
	}
	wrong, err := docblock.Check("../../../docs/reference.md", "metrics", strings.Join(rows, "\n"), *update)
	if err != nil {
		t.Fatal(err)
	}
	if wrong != "" {
		t.Error(wrong)
	}
}
