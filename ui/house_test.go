package ui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sealedIntents is the sealed set: every type in intents.go with an isIntent method.
func sealedIntents(t *testing.T) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "intents.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "isIntent" || fd.Recv == nil {
			continue
		}
		if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok {
			out = append(out, id.Name)
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d intents in intents.go: is the search broken?", len(out))
	}
	return out
}

// Every type switch over intents in ui/ names every intent: a new one cannot be left
// unhandled by the root. Intents are declared in intents.go alone.
func TestIntentSwitchIsExhaustive(t *testing.T) {
	intents := sealedIntents(t)
	isIntent := map[string]bool{}
	for _, in := range intents {
		isIntent[in] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	switches := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl: // an isIntent method outside intents.go: the set is not sealed
				if x.Name.Name == "isIntent" && path != "intents.go" {
					t.Errorf("%s declares an intent: declare it in intents.go", path)
				}
			case *ast.TypeSwitchStmt:
				named := map[string]bool{}
				for _, c := range x.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						if id, ok := e.(*ast.Ident); ok && isIntent[id.Name] {
							named[id.Name] = true
						}
					}
				}
				if len(named) == 0 {
					return true
				}
				switches++
				for _, in := range intents {
					if !named[in] {
						t.Errorf("%s: a switch over intents does not name %s", path, in)
					}
				}
			}
			return true
		})
	}
	if switches == 0 {
		t.Error("found no switch over intents: is the search broken?")
	}
}

// Every screen has its pane in the table, and every pane draws a footer from its bindings.
func TestEveryScreenHasAPane(t *testing.T) {
	m := newModel(t, 3, 120, 30)
	for s := range numScreens {
		get, ok := panes[s]
		if !ok {
			t.Errorf("screen %d has no pane", s)
			continue
		}
		m.screen = s
		if p := get(&m); footerKeys(p, &m.s) == "" {
			t.Errorf("screen %d: the footer shows no key", s)
		}
	}
}
