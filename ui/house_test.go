package ui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/internal/house"
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

// Every screen's row has a command for its key, and every pane draws a footer from its bindings.
func TestEveryScreenHasAPane(t *testing.T) {
	m := newModel(t, 3, 120, 30)
	for _, row := range screens {
		if row.key != nil && len(row.commands) == 0 {
			t.Errorf("screen %s has a key but no command to open it with", row.name)
		}
	}
	panes := []pane{m.nodes(), &detailPane{}, &opPane{}, &confirmPane{}, &helpPane{}, &quitPane{}, &victimsPane{},
		&campaignPane{}, &askPane{}, &listPane{}, &describePane{}}
	for _, p := range panes {
		if len(footerKeys(p, &m.s)) == 0 {
			t.Errorf("%T: the footer shows no key", p)
		}
	}
}

// The reference's key table names every key the bindings have, and no other: help and the
// reference cannot say different things.
func TestReadmeKeyTableMatchesTheBindings(t *testing.T) {
	data, err := os.ReadFile("../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(data), "| key | does |")
	if start < 0 {
		t.Fatal("docs/reference.md: no key table")
	}
	table := string(data[start:])
	table = table[:strings.Index(table, "\n\n")]
	documented := map[string]bool{}
	for _, row := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(row, "|")
		if len(cells) < 3 {
			continue
		}
		for i, word := range strings.Split(cells[1]+" "+cells[2], "`") {
			if i%2 == 1 { // inside backticks
				documented[strings.TrimSpace(word)] = true
			}
		}
	}
	keys := DefaultKeys()
	named := map[string]string{"↑↓/kj": "k", "↓/j": "j", "pgup": "PgUp", "pgdn": "PgDn", "n/esc": "n", "space": "space", "enter": "enter", "esc": "esc", "ctrl+c": "ctrl+c"}
	for _, b := range keys.all() {
		key := b.Help().Key
		if n, ok := named[key]; ok {
			key = n
		}
		if !documented[key] && (len([]rune(key)) == 1 || !strings.Contains(table, key)) {
			t.Errorf("the reference's key table lacks %q (%s)", key, b.Help().Desc)
		}
	}
	for word := range documented {
		if len([]rune(word)) != 1 {
			continue
		}
		found := false
		for _, b := range keys.all() {
			for _, k := range b.Keys() {
				found = found || k == word
			}
		}
		if !found && word != "●" && word != "▸" {
			t.Errorf("the reference's key table names %q, which no binding has", word)
		}
	}
}

// Every `:` name opens one thing: the screens' commands and the actions never share a name,
// and each is listed in the : key's help unless it is the demo's or help's own.
func TestColonCommandsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range colonCommands() {
		for _, n := range c.names {
			if seen[n] {
				t.Errorf(":%s names two commands", n)
			}
			seen[n] = true
		}
	}
	if len(seen) < 20 {
		t.Fatalf("%d command names: is the table read?", len(seen))
	}
	if h := DefaultKeys().Command.Help().Desc; !strings.Contains(h, ":vms") || !strings.Contains(h, ":ctx") {
		t.Errorf("the : key's help is not drawn from the table: %q", h)
	}
}

// At most 42 pairs of ui/'s files name each other (the count when it was first held; the
// house asks fewer than 60): a pane's file names the root's helpers and its rows,
// and the root names the panes through the screen table. A pair added is a pane reaching
// into another pane's file, or a helper left in a pane's.
func TestFewFilesOfTheViewNameEachOther(t *testing.T) {
	pairs := house.NamingPairs(".")
	if len(pairs) > 42 {
		t.Errorf("%d pairs of files name each other (at most 42):\n%s", len(pairs), strings.Join(pairs, "\n"))
	}
	if len(pairs) == 0 {
		t.Error("no pair at all: is the count broken? (app.go, the root, names and is named by several)")
	}
}

// The root keeps its panes in its stack only: no field of the root or of what it shares is a
// pane, so a new screen is its pane's file and a row of the table, not a field of the root.
func TestTheRootKeepsItsPanesInItsStack(t *testing.T) {
	paneType := reflect.TypeFor[pane]()
	for _, typ := range []reflect.Type{reflect.TypeFor[Model](), reflect.TypeFor[shared]()} {
		for f := range typ.Fields() {
			if f.Type.Implements(paneType) || reflect.PointerTo(f.Type).Implements(paneType) {
				t.Errorf("%s.%s is a pane (%s): keep it in the stack (nav.go)", typ.Name(), f.Name, f.Type)
			}
		}
	}
}
