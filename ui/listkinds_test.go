package ui

import "testing"

// Each list is its row: its title, columns and rows, and what d and enter do on a row, which
// a describer knows (a list whose d named no describer would say the row "is gone").
func TestEveryListKindIsWhole(t *testing.T) {
	for name, k := range map[string]*listKind{"vms": vmList, "pods": podList, "recoveries": recoveryList} {
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
