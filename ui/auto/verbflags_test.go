package auto

import (
	"slices"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/ui/flagrow"
)

// A verb's flags sit on its row, and every place a flag shows comes from there: the verbs it
// belongs to (its verb first), its section of --help under the verb's title, and (through
// internal/app) the flag set, completion and the refusal for another verb. A new verb with a
// flag is that row (and the flag's field in Params), in this package's verbs.go.
func TestAVerbsFlagsComeFromItsRow(t *testing.T) {
	all := VerbFlags()
	usage := VerbFlagUsage()
	n := 0
	for _, v := range verbTable() {
		if len(v.flags) == 0 {
			continue
		}
		if v.flagsTitle == "" || !strings.Contains(usage, v.flagsTitle+":\n") {
			t.Errorf("%s: its flags have no title in --help", v.name)
		}
		for _, f := range v.flags {
			n++
			i := slices.IndexFunc(all, func(r flagrow.Row[Params]) bool { return slices.Equal(r.Names, f.Names) })
			if i < 0 {
				t.Errorf("%s: --%s is not among the verbs' flags", v.name, f.Names[0])
				continue
			}
			if r := all[i]; len(r.Verbs) == 0 || r.Verbs[0] != v.name || r.Section != v.name {
				t.Errorf("%s: --%s belongs to %v, listed in %q", v.name, f.Names[0], r.Verbs, r.Section)
			}
			if f.Usage != "" && !strings.Contains(usage, f.Usage) {
				t.Errorf("%s: --%s's lines are not in --help", v.name, f.Names[0])
			}
		}
	}
	if n < 20 || len(all) != n {
		t.Fatalf("%d flags on verb rows, %d read: is the table read?", n, len(all))
	}
}
