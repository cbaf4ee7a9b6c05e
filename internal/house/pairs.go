// Package house measures the house's drawing from the code: what hack/housemetrics prints
// and the house tests hold.
package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
)

// NamingPairs are the pairs of the package's files (tests aside) where each names something
// the other declares: a table file and its rows that call back into it, say. A name is a
// package-level one the parser left unresolved in the file (declared in another), or a
// method named through a selector (a method name declared in two files, Error or Subscribe,
// is not counted: the name alone does not say which).
func NamingPairs(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	declared, methods := map[string]string{}, map[string]string{} // name → file
	uses := map[string][]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					if f, seen := methods[d.Name.Name]; seen && f != path {
						methods[d.Name.Name] = "" // declared in two files: a name alone does not say which
					} else {
						methods[d.Name.Name] = path
					}
				} else {
					declared[d.Name.Name] = path
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						declared[sp.Name.Name] = path
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							declared[n.Name] = path
						}
					}
				}
			}
		}
		var u []string
		for _, id := range f.Unresolved {
			u = append(u, "="+id.Name)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				u = append(u, "."+sel.Sel.Name)
			}
			return true
		})
		uses[path] = u
	}
	names := func(a, b string) bool {
		for _, n := range uses[a] {
			if (n[0] == '=' && declared[n[1:]] == b) || (n[0] == '.' && methods[n[1:]] == b && b != "") {
				return true
			}
		}
		return false
	}
	var out []string
	for a := range uses {
		for b := range uses {
			if a < b && names(a, b) && names(b, a) {
				out = append(out, a+" ⇄ "+b)
			}
		}
	}
	sort.Strings(out)
	return out
}
