package app

import (
	"flag"
	"strings"
	"testing"
)

// A flag is its row: the flag set, the help's lines and the verbs it belongs to all come from
// it. Every flag a verb owns is refused for another verb, naming its verbs, and taken by its
// own; a flag of no verb is taken by any. A new row is checked here without a new test.
func TestEveryFlagRowIsRefusedForAnotherVerb(t *testing.T) {
	owned := 0
	for _, r := range flagRows {
		for _, name := range r.names {
			o := Options{Set: map[string]bool{name: true}}
			if len(r.verbs) == 0 {
				if err := misplacedFlags(o, "evacuate"); err != nil {
					t.Errorf("--%s belongs to every verb, yet: %v", name, err)
				}
				continue
			}
			owned++
			for _, v := range r.verbs {
				if err := misplacedFlags(o, v); err != nil {
					t.Errorf("--%s refused for its own verb %s: %v", name, v, err)
				}
			}
			err := misplacedFlags(o, "list")
			if err == nil || !strings.Contains(err.Error(), "--"+name+" ") || !strings.Contains(err.Error(), strings.Join(r.verbs, " and ")+", not list") {
				t.Errorf("--%s given to list: %v", name, err)
			}
		}
	}
	if owned < 20 {
		t.Fatalf("%d flags owned by a verb: are the rows read?", owned)
	}
}

// Every flag of the set has its row's help lines, but the modes and the help itself, which
// the help's usage lines name; an alias is named on its flag's line.
func TestEveryFlagHasItsHelpLines(t *testing.T) {
	modes := map[string]bool{"help": true, "auto": true, "daemon": true, "proxy": true, "controller": true, "demo": true}
	seen := map[string]bool{}
	for _, r := range flagRows {
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
