package ui

import "testing"

// Each list is its row, in one file: its `:` command (which the colon commands list), its
// title, columns and rows, and what d and enter do on a row, which a describer knows (a list
// whose d named no describer would say the row "is gone").
func TestEveryListKindIsWhole(t *testing.T) {
	commands := map[string]bool{}
	for _, c := range colonCommands() {
		for _, n := range c.names {
			commands[n] = true
		}
	}
	if len(listKinds) < 3 {
		t.Fatalf("%d list kinds: is the table read?", len(listKinds))
	}
	for _, k := range listKinds {
		if len(k.names) == 0 || !commands[k.names[0]] {
			t.Errorf("list %q: no `:` command opens it (%v)", k.title, k.names)
			continue
		}
		name := k.names[0]
		if k.title == "" || k.columns == nil || k.rows == nil || k.picker {
			t.Errorf(":%s: its row is not whole: %+v", name, k)
		}
		r := listRow{key: "k", node: "n"}
		for _, f := range []func(listRow) intent{k.describe, k.enter} {
			if f == nil {
				continue
			}
			if d, ok := f(r).(describe); ok {
				if _, known := describers[d.kind]; !known {
					t.Errorf(":%s: d describes a %q, which no describer knows", name, d.kind)
				}
			}
		}
	}
	for _, p := range []*listKind{hostPicker, ctxPicker} {
		if !p.picker {
			t.Error("a picker's row does not say it is one: closing it would not put back the list under it")
		}
	}
}
