package app

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/campaign"
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

// roll's flags land in the campaign's own options, and the configuration's [roll] fills what
// they leave unset, for roll and the TUI alike (one function): a flag's window wins over the
// configured one, the configured budget and undrainable come through, the TUI (no flags)
// takes the configured window.
func TestRollsFlagsAreTheCampaignsOptions(t *testing.T) {
	var o Options
	fs := FlagSet(&o)
	if err := fs.Parse([]string{"--selector", "rack=r1", "--window", "daily 01:00-05:00 UTC", "--node-deadline", "10m",
		"--parallel", "3", "--campaign", "kernel", "--gate-cmd", "true {node}"}); err != nil {
		t.Fatal(err)
	}
	roll := model.DefaultConfig().Campaign
	roll.Window, roll.Budget, roll.Undrainable = "Sat 02:00-06:00 Europe/Berlin", []string{"1 per 10m"}, "fail"
	c, err := campaign.Configured(o.Verb.Roll.Options, roll)
	if err != nil {
		t.Fatal(err)
	}
	if c.Selector != "rack=r1" || c.Parallel != 3 || c.Name != "kernel" || c.Gates.Cmd != "true {node}" || c.NodeDeadline != 10*time.Minute {
		t.Errorf("the flags did not land: %+v", c)
	}
	if c.Gates.Window == nil || c.Gates.Window.String() != "daily 01:00-05:00 UTC" {
		t.Errorf("window %v; want the flag's over the configured one", c.Gates.Window)
	}
	if len(c.Gates.Budgets) != 1 || c.Undrainable != "fail" || c.Gates.PDBBlockedFor != roll.PDBBlockedFor.D() {
		t.Errorf("the configuration did not fill what the flags left: %+v", c)
	}
	tui, err := campaign.Configured(campaign.Options{}, roll)
	if err != nil || tui.Gates.Window == nil || tui.Gates.Window.String() != roll.Window || tui.NodeDeadline != roll.NodeDeadline.D() {
		t.Errorf("the TUI's campaign: %+v (%v); want the configured window and deadline", tui, err)
	}
}
