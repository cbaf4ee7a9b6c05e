package ops

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// No way a VM is handled is compared outside its table (movers.go) and the policy that
// chooses it: the engine, the views, the controllers and the metrics ask the row
// (moverOf, MoveFactsOf). A comparison with a method's constant, or with its word, is a
// branch beside the table.
func TestNoMoveMethodComparedOutsideItsTable(t *testing.T) {
	names, words := moveMethods(t)
	skip := []string{"../ops/policy", "../ops/movers.go"}
	productionFiles(t, 150, skip, func(path string, fset *token.FileSet, f *ast.File) {
		eachCompared(f, func(e ast.Expr, where string) {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "model" && names[x.Sel.Name] {
					t.Errorf("%s: model.%s %s: ask the mover's row (moverOf, ops.MoveFactsOf)", fset.Position(x.Pos()), x.Sel.Name, where)
				}
			case *ast.BasicLit:
				if s, _ := strconv.Unquote(x.Value); x.Kind == token.STRING && words[s] {
					t.Errorf("%s: the method's word %q %s: ask the mover's row", fset.Position(x.Pos()), s, where)
				}
			}
		})
	})
}

// productionFiles parses every production Go file of the repository (tests, test data and
// the build's own directories aside) but those under skip, hands each to visit, and fails when
// it read fewer than least: a walk that finds nothing proves nothing.
func productionFiles(t *testing.T, least int, skip []string, visit func(path string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	read := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case slices.Contains(skip, path) && d.IsDir():
			return filepath.SkipDir
		case d.IsDir() && slices.Contains([]string{"testdata", ".git", ".envtest", ".nova"}, d.Name()):
			return filepath.SkipDir
		case d.IsDir() || slices.Contains(skip, path) || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		read++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		visit(path, fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < least {
		t.Fatalf("read %d files: is the walk broken?", read)
	}
}

// eachCompared hands flag every operand of a == or a != and every case of a switch: where
// a value decides.
func eachCompared(f *ast.File, flag func(e ast.Expr, where string)) {
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if x.Op == token.EQL || x.Op == token.NEQ {
				flag(x.X, "compared")
				flag(x.Y, "compared")
			}
		case *ast.CaseClause:
			for _, e := range x.List {
				flag(e, "in a case")
			}
		}
		return true
	})
}

// moveMethods are the MoveMethod constants model/vm.go declares, by name and by word.
func moveMethods(t *testing.T) (names, words map[string]bool) {
	f, err := parser.ParseFile(token.NewFileSet(), "../model/vm.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names, words = map[string]bool{}, map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "MoveMethod" {
				names[vs.Names[0].Name] = true
				w, _ := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
				words[w] = true
			}
		}
		return true
	})
	if len(names) < 6 {
		t.Fatalf("found %d move methods in model/vm.go: is the search broken?", len(names))
	}
	return names, words
}

// Every row that acts on a VM asks Nova through its request and follows the move through its
// poll, so the one admission list (beforeRequest) stands before every act: no row moves or
// stops a VM from its begin. A row without a request only follows someone else's move or
// accounts for a VM that stays.
func TestEveryActingMoverHasARequestAndAPoll(t *testing.T) {
	acting := 0
	for m, row := range moverTable() {
		switch {
		case row.theirs || row.Stays:
			if row.request != nil {
				t.Errorf("%s: a row that follows or leaves a VM has a request", m)
			}
		case row.request == nil || row.poll == nil:
			t.Errorf("%s: a row that acts needs a request (asked after the admission list) and a poll", m)
		default:
			acting++
		}
	}
	if acting < 4 { // live, cold, rebuild, the stop in place
		t.Errorf("%d acting rows, want at least 4: is the table read?", acting)
	}
}
