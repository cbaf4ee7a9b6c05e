package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// StructFields counts the fields of the struct type declared in the package's directory (an
// embedded type counts one, as does each name of a list: a, b int is two); -1 when none is.
func StructFields(dir, typeName string) int {
	n := -1
	EachProductionFile(dir, func(_ string, f *ast.File) {
		ast.Inspect(f, func(node ast.Node) bool {
			if ts, ok := node.(*ast.TypeSpec); ok && ts.Name.Name == typeName {
				if st, ok := ts.Type.(*ast.StructType); ok {
					n = 0
					for _, fld := range st.Fields.List {
						n += max(1, len(fld.Names))
					}
				}
			}
			return true
		})
	})
	return n
}

// ProductionFiles counts the package's Go files, tests aside.
func ProductionFiles(dir string) int {
	n := 0
	EachProductionFile(dir, func(string, *ast.File) { n++ })
	return n
}

// EachProductionFile parses each of the directory's Go files, tests aside, and hands it to
// visit (one that does not parse is not a file of the package's: it is passed over).
func EachProductionFile(dir string, visit func(path string, f *ast.File)) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		if f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0); err == nil {
			visit(path, f)
		}
	}
}
