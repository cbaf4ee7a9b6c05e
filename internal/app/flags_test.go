package app

import (
	"flag"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/ui/auto"
)

// A flag is its row: the flag set, the help's lines and the verbs it belongs to all come from
// it. Every flag a verb owns (a row on its verb) is refused for another verb, naming its
// verbs, and taken by its own; a root flag of no verb is taken by any. A new row is checked
// here without a new test.
func TestEveryFlagRowIsRefusedForAnotherVerb(t *testing.T) {
	owned := 0
	for _, r := range owners() {
		for _, name := range r.Names {
			o := Options{Set: map[string]bool{name: true}}
			if len(r.Verbs) == 0 {
				if err := misplacedFlags(o, "evacuate"); err != nil {
					t.Errorf("--%s belongs to every verb, yet: %v", name, err)
				}
				continue
			}
			owned++
			for _, v := range r.Verbs {
				if err := misplacedFlags(o, v); err != nil {
					t.Errorf("--%s refused for its own verb %s: %v", name, v, err)
				}
			}
			err := misplacedFlags(o, "list")
			if err == nil || !strings.Contains(err.Error(), "--"+name+" ") || !strings.Contains(err.Error(), strings.Join(r.Verbs, " and ")+", not list") {
				t.Errorf("--%s given to list: %v", name, err)
			}
		}
	}
	if owned < 20 {
		t.Fatalf("%d flags owned by a verb: are the verbs' rows read?", owned)
	}
}

// Every flag of the set has its row's help lines, but the modes and the help itself, which
// the help's usage lines name; an alias is named on its flag's line.
func TestEveryFlagHasItsHelpLines(t *testing.T) {
	modes := map[string]bool{"help": true, "auto": true, "daemon": true, "proxy": true, "controller": true, "demo": true}
	type row struct {
		names []string
		usage string
	}
	var rows []row
	for _, r := range flagRows {
		rows = append(rows, row{r.Names, r.Usage})
	}
	for _, r := range auto.VerbFlags() {
		rows = append(rows, row{r.Names, r.Usage})
	}
	seen := map[string]bool{}
	for _, r := range rows {
		for i, name := range r.names {
			if seen[name] {
				t.Errorf("--%s has two rows", name)
			}
			seen[name] = true
			if modes[r.names[0]] {
				continue
			}
			dashes := "--"
			if len(name) == 1 || name == "config-path" {
				dashes = "-"
			}
			if !strings.Contains(r.usage, dashes+name+" ") && !strings.Contains(r.usage, dashes+name+",") {
				t.Errorf("%s%s (name %d of its row) is not on its help lines %q", dashes, name, i, r.usage)
			}
		}
	}
	n := 0
	FlagSet(new(Options)).VisitAll(func(f *flag.Flag) {
		n++
		if !seen[f.Name] {
			t.Errorf("--%s is in the flag set without a row", f.Name)
		}
	})
	if n != len(seen) {
		t.Errorf("%d flags in the set, %d in the rows", n, len(seen))
	}
}
