package ops

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/internal/house"
	"github.com/drainctl/drainctl/model"
)

// sealedEvents is the sealed set: every struct in events.go that embeds the header.
func sealedEvents(t *testing.T) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		if st, ok := ts.Type.(*ast.StructType); ok {
			for _, fld := range st.Fields.List {
				if id, ok := fld.Type.(*ast.Ident); ok && len(fld.Names) == 0 && id.Name == "header" {
					out = append(out, ts.Name.Name)
				}
			}
		}
		return true
	})
	if len(out) < 6 {
		t.Fatalf("found %d event types in events.go: is the search broken?", len(out))
	}
	return out
}

// Every type switch over events, anywhere in the program (tests aside), names every event type (an
// empty case where nothing is to be done): a new event cannot be forgotten by a consumer.
func TestEventSwitchesAreExhaustive(t *testing.T) {
	eventTypes := sealedEvents(t)
	isEvent := map[string]bool{}
	for _, e := range eventTypes {
		isEvent[e] = true
	}
	found := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".envtest" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		inOps := f.Name.Name == "ops"
		ast.Inspect(f, func(n ast.Node) bool {
			sw, ok := n.(*ast.TypeSwitchStmt)
			if !ok {
				return true
			}
			named := map[string]bool{}
			for _, c := range sw.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					switch x := e.(type) {
					case *ast.SelectorExpr:
						if id, ok := x.X.(*ast.Ident); ok && id.Name == "ops" && isEvent[x.Sel.Name] {
							named[x.Sel.Name] = true
						}
					case *ast.Ident:
						if inOps && isEvent[x.Name] {
							named[x.Name] = true
						}
					}
				}
			}
			if len(named) == 0 {
				return true
			}
			found++
			for _, e := range eventTypes {
				if !named[e] {
					t.Errorf("%s: a switch over events does not name %s", path, e)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 5 { // the printer, the TUI, metrics, node events, the NodeMaintenance status…
		t.Errorf("found only %d switches over events: is the search broken?", found)
	}
}

// Every step kind a plan can hold has its function in the table, except the ones the run
// itself does (the lease) and those only scale-down does.
func TestEveryStepKindHasAFunction(t *testing.T) {
	src, err := os.ReadFile("../model/plan.go")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "plan.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := map[model.StepKind]bool{model.StepLease: true, model.StepDeleteNode: true, model.StepTerminate: true, model.StepSlot: true}
	n := 0
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "StepKind" {
				continue
			}
			for _, v := range vs.Values {
				kind := model.StepKind(strings.Trim(v.(*ast.BasicLit).Value, `"`))
				n++
				if _, ok := stepTable()[kind]; !ok && !elsewhere[kind] {
					t.Errorf("step %q has no function in steps", kind)
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d step kinds: is the search broken?", n)
	}
}

// Every operation kind model declares has its row in the engine's one table of them, with a
// planner (scale-down names a report, not an operation that is planned); and that table is
// the only one keyed by the kind in the engine and the model (the views' own, such as the
// confirm pane's, read their facts from it).
func TestEveryOperationHasItsRows(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../model/plan.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []model.OpKind
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "OpKind" {
				lit := vs.Values[0].(*ast.BasicLit)
				kinds = append(kinds, model.OpKind(strings.Trim(lit.Value, `"`)))
			}
		}
		return true
	})
	if len(kinds) < 7 {
		t.Fatalf("found %d operation kinds in model/plan.go: is the search broken?", len(kinds))
	}
	for _, k := range kinds {
		if k == model.OpScaleDown {
			continue
		}
		if row, ok := operationOf(k); !ok || row.plan == nil {
			t.Errorf("%s has no row with a planner (operations.go)", k)
		}
	}
	tables := 0
	for _, dir := range []string{".", "../model"} {
		house.EachProductionFile(dir, func(path string, f *ast.File) {
			ast.Inspect(f, func(n ast.Node) bool {
				if m, ok := n.(*ast.MapType); ok {
					if sel, ok := m.Key.(*ast.SelectorExpr); ok && sel.Sel.Name == "OpKind" || isIdent(m.Key, "OpKind") {
						tables++
						if path != "operations.go" {
							t.Errorf("%s keeps a table by the operation's kind: a column of operations.go's", path)
						}
					}
				}
				return true
			})
		})
	}
	if tables == 0 {
		t.Fatal("found no table by the operation's kind: is the search broken?")
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// Every way a VM moves has its mover (movers.go): the methods model declares, but follow (a
// move already under way, followed as the method it is) and stays.
func TestEveryMoveMethodHasAMover(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../model/vm.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, movers := 0, moverTable()
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "MoveMethod" {
			n++
			m := model.MoveMethod(strings.Trim(vs.Values[0].(*ast.BasicLit).Value, `"`))
			row, ok := movers[m]
			switch {
			case !ok:
				t.Errorf("move method %s has no mover (movers.go)", m)
			case row.begin == nil:
				t.Errorf("move method %s: its mover does not say how a run takes the VM in (begin)", m)
			case row.request != nil && row.poll == nil:
				t.Errorf("move method %s: requested but never followed (poll)", m)
			}
			if !slices.Contains(moverOrder, m) {
				t.Errorf("move method %s is not in moverOrder: an abort would not undo it", m)
			}
		}
		return true
	})
	if n < 6 {
		t.Fatalf("found %d move methods in model/vm.go: is the search broken?", n)
	}
	if len(moverOrder) != len(movers) {
		t.Errorf("moverOrder names %d methods, movers %d", len(moverOrder), len(movers))
	}
}

// moveAll reads the mover rows: no switch on the method.
func TestMoveAllReadsTheMoverRows(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	read := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		read++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				if x.Name.Name != "moveAll" {
					return true
				}
				ast.Inspect(x.Body, func(n ast.Node) bool {
					if sw, ok := n.(*ast.SwitchStmt); ok && sw.Tag != nil {
						if sel, ok := sw.Tag.(*ast.SelectorExpr); ok && sel.Sel.Name == "method" {
							t.Errorf("%s: moveAll switches on the method: a mover row decides", path)
						}
						if id, ok := sw.Tag.(*ast.Ident); ok && id.Name == "method" {
							t.Errorf("%s: moveAll switches on the method: a mover row decides", path)
						}
					}
					return true
				})
			}
			return true
		})
	}
	if read < 30 {
		t.Fatalf("read %d files of ops: is the walk broken?", read)
	}
}

// No init() in ops/ (its subpackages too) or ui/auto: a table whose rows reach back to it is
// made where it is read (the engine's steps, --auto's verbs), never patched in by an init
// that dodges an initialization cycle (#54.2).
func TestNoInitInTheEngineOrTheVerbs(t *testing.T) {
	found := 0
	for _, root := range []string{".", "../ui/auto"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			found++
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "init" {
					t.Errorf("%s has an init()", path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 50 {
		t.Fatalf("read %d files: is the walk broken?", found)
	}
}

// Outside the engine, no code compares an operation's kind (#54.3): the TUI's checks, its
// confirm pane, the verbs, a plan's summary, the daemon and the controllers read the kind's
// row (model.OpRow, the confirm pane's rows), so a new operation is rows, not a hunt for
// every `op == model.OpX`.
func TestNoViewComparesTheOperationsKind(t *testing.T) {
	productionFiles(t, 80, []string{"../ops"}, func(path string, _ *token.FileSet, f *ast.File) {
		isKind := func(e ast.Expr) bool {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				return ok && id.Name == "model" && strings.HasPrefix(x.Sel.Name, "Op") && x.Sel.Name != "OpKind" && x.Sel.Name != "OpRow"
			case *ast.Ident: // inside model itself
				return f.Name.Name == "model" && strings.HasPrefix(x.Name, "Op") && len(x.Name) > 2 && x.Name != "OpKind" && x.Name != "OpRow"
			}
			return false
		}
		eachCompared(f, func(e ast.Expr, where string) {
			if isKind(e) {
				t.Errorf("%s: an operation's kind %s: read its row (model.OpRow)", path, where)
			}
		})
	})
}

// No production file is over 500 lines (#54.2): a file that grows past it holds two things,
// and the second goes to a file of its own. No production line is over 140 columns (#54.4;
// the runners in hack/ aside).
func TestNoProductionFileOverFiveHundredLines(t *testing.T) {
	read := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".envtest" || d.Name() == "testdata" || d.Name() == ".nova") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		read++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(src), "\n"); n > 500 {
			t.Errorf("%s has %d lines: split what it holds", path, n)
		}
		for i, l := range strings.Split(string(src), "\n") {
			if w := len([]rune(strings.ReplaceAll(l, "\t", "    "))); w > 140 && !strings.HasPrefix(path, "../hack/") {
				t.Errorf("%s:%d is %d columns wide (a tab is 4): wrap it under 140", path, i+1, w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < 150 {
		t.Fatalf("read %d files: is the walk broken?", read)
	}
}

// At most 12 pairs of ops/'s files name each other (#54.2; 36 before it): a table file holds
// its rows, the helpers the rows share sit one file lower, and arrows run table → rows →
// helpers. A pair added is a helper left in its table's file, or a type in the wrong file.
func TestFewFilesOfTheEngineNameEachOther(t *testing.T) {
	pairs := house.NamingPairs(".")
	if len(pairs) > 12 {
		t.Errorf("%d pairs of files name each other (at most 12):\n%s", len(pairs), strings.Join(pairs, "\n"))
	}
	if len(pairs) == 0 {
		t.Error("no pair at all: is the count broken? (the engine's hub, engine.go, names and is named by several)")
	}
}

// The runner keeps few fields: what a run did that the node's journal keeps, its hold of the
// lease, a recovery's outage, the canary's proof and what it said once are each a type of
// their own, so a new engineer reads one concern at a time (29 fields before they were).
func TestTheRunnerKeepsFewFields(t *testing.T) {
	switch n := house.StructFields(".", "runner"); {
	case n < 0:
		t.Fatal("no struct runner in package ops: is the search broken?")
	case n > 15:
		t.Errorf("runner has %d fields; at most 15: group a concern's fields in a type of its own", n)
	}
}
