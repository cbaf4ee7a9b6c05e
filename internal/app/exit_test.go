package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/ui"
)

// A TUI closed with work unfinished exits 4, as an interrupted --auto run does: a script
// that ran it must not read success.
func TestUnfinishedTUIExitsInterrupted(t *testing.T) {
	if code := ExitCodeOf(&ui.UnfinishedError{Left: 1}); code != ExitInterrupted {
		t.Errorf("exit %d, want %d", code, ExitInterrupted)
	}
}

// The reference's exit-code table has a row for each exit code the code has (the Exit
// constants, read from this package's source), and no other.
func TestTheReferenceNamesEveryExitCode(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "exit.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	code := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for i, n := range s.(*ast.ValueSpec).Names {
				if lit, ok := s.(*ast.ValueSpec).Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "Exit") {
					code[lit.Value] = true
				}
			}
		}
	}
	ref, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(ref), "| code | meaning |\n|---|---|\n")
	table, _, _ = strings.Cut(table, "\n\n")
	documented := map[string]bool{}
	for _, row := range strings.Split(table, "\n") {
		documented[strings.TrimSpace(strings.Split(row, "|")[1])] = true
	}
	if len(code) < 7 || !maps.Equal(code, documented) {
		t.Errorf("exit codes in the code %v, in docs/reference.md %v", slices.Sorted(maps.Keys(code)), slices.Sorted(maps.Keys(documented)))
	}
}
