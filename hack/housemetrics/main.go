// Command housemetrics prints the figures the house's steps are measured by (#39): the
// checks on an operation's kind, the engine's production lines, its long functions and
// its back-arrows. Run from the repository's root: go run ./hack/housemetrics
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/drainctl/drainctl/internal/house"
)

// opCheck is a decision on an operation's kind: p.Op == model.OpEvacuate, switch op {…}.
var opCheck = regexp.MustCompile(`\b(Op|op) [!=]= model\.Op|switch (\w+\.)*(Op|op) \{|case model\.Op\w+[,:]`)

func main() {
	var lines, checks int
	var long []string
	fset := token.NewFileSet()
	_ = filepath.Walk("ops", func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines += strings.Count(string(src), "\n")
		if !strings.HasPrefix(path, "ops/sim") { // the simulator plays Nova: its switches are Nova's
			checks += len(opCheck.FindAllIndex(src, -1))
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				if n > 80 {
					long = append(long, fmt.Sprintf("%s:%s (%d)", path, fn.Name.Name, n))
				}
			}
		}
		return nil
	})
	sort.Strings(long)
	fmt.Printf("ops production lines: %d\n", lines)
	fmt.Printf("checks on an operation's kind (ops/, the simulator aside): %d\n", checks)
	fmt.Printf("functions over 80 lines in ops/: %d %v\n", len(long), long)
	fmt.Printf("back-arrows: %v\n", backArrows())
	pairs := house.NamingPairs("ops")
	fmt.Printf("file pairs in ops/ that name each other: %d; in ui/: %d\n", len(pairs), len(house.NamingPairs("ui")))
	if os.Getenv("PAIRS") != "" {
		fmt.Println(strings.Join(pairs, "\n"))
	}
	fmt.Printf("app.Options fields: %d\n", house.StructFields("internal/app", "Options"))
	fmt.Printf("ops.RunOptions fields (a parameter type counts one): %d\n", house.StructFields("ops", "RunOptions"))
	fmt.Printf("ops' runner fields: %d; vmRun fields: %d\n", house.StructFields("ops", "runner"), house.StructFields("ops", "vmRun"))
	fmt.Printf("package ops production files: %d\n", house.ProductionFiles("ops"))
	big, wide := bigFiles()
	fmt.Printf("production files over 500 lines: %d %v\n", len(big), big)
	fmt.Printf("production lines over 140 columns (a tab is 4): %d\n", wide)
}

// bigFiles are the production files over 500 lines, and the count of lines wider than 140
// columns, across the repository (tests, hack/ and the simulator's fixtures aside).
func bigFiles() (big []string, wide int) {
	_ = filepath.Walk(".", func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && (strings.HasPrefix(info.Name(), ".") && path != "." || path == "hack" || info.Name() == "testdata") {
			return filepath.SkipDir
		}
		if info.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := strings.Split(string(src), "\n")
		if len(lines)-1 > 500 {
			big = append(big, fmt.Sprintf("%s (%d)", path, len(lines)-1))
		}
		for _, l := range lines {
			if len([]rune(strings.ReplaceAll(l, "\t", "    "))) > 140 {
				wide++
			}
		}
		return nil
	})
	sort.Strings(big)
	return big, wide
}

// backArrows are imports that point up the drawing: the engine (ops) importing what is built
// over it (ops/campaign, a view, the root), an engine subpackage importing a view, the
// controllers importing a view. (An adapter importing ops for the ports it implements, and
// ops/campaign importing the engine it works over, point down.)
func backArrows() []string {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		return []string{"go list: " + err.Error()}
	}
	const mod = "github.com/drainctl/drainctl/"
	var arrows []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		pkg := strings.TrimPrefix(f[0], mod)
		for _, imp := range f[1:] {
			imp = strings.TrimPrefix(imp, mod)
			up := false
			switch {
			case strings.HasPrefix(pkg, "ops/") && strings.HasPrefix(imp, "ui"):
				up = true
			case pkg == "ops" && (strings.HasPrefix(imp, "ui") || imp == "ops/campaign" || strings.HasPrefix(imp, "internal")):
				up = true
			case strings.HasPrefix(pkg, "internal/controllers") && strings.HasPrefix(imp, "ui"):
				up = true
			}
			if up {
				arrows = append(arrows, pkg+" → "+imp)
			}
		}
	}
	return arrows
}
