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
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			continue
		}
		n := -1
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
		if n >= 0 {
			return n
		}
	}
	return -1
}

// ProductionFiles counts the package's Go files, tests aside.
func ProductionFiles(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	n := 0
	for _, path := range files {
		if !strings.HasSuffix(path, "_test.go") {
			n++
		}
	}
	return n
}
