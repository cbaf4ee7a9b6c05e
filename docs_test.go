package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/drainctl/drainctl/internal/controllers"
	"github.com/drainctl/drainctl/internal/docblock"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/kube"
)

var update = flag.Bool("update", false, "rewrite docs/reference.md's generated blocks")

// The reference's command line is drainctl --help as the code prints it: a mode, verb or flag
// the code has and the reference lacks fails, and so does one the reference names that the
// code no longer has. -update writes it again.
func TestTheReferenceIsTheHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("--help: exit %d: %s", code, errb.String())
	}
	held(t, "help", "```\n"+strings.TrimRight(out.String()+errb.String(), "\n")+"\n```")
}

// The reference's notice kinds (what [notify]'s webhooks receive) and the reasons a plan
// refuses or waits are model's NoticeKind and ReasonCode constants, each with its comment,
// read from the source.
func TestTheReferenceNamesEveryNoticeKind(t *testing.T) {
	held(t, "notices", "| kind | when |\n|---|---|\n"+strings.Join(constTable(t, "model/notice.go", "NoticeKind"), "\n"))
	held(t, "reasons", "| reason | what it means |\n|---|---|\n"+strings.Join(constTable(t, "model/reason.go", "ReasonCode"), "\n"))
}

// constTable is a row for each string constant of the type in the file: its value and its
// comment (the one beside it, else the one above it).
func constTable(t *testing.T, file, typ string) []string {
	t.Helper()
	var rows []string
	for _, c := range stringConsts(t, file) {
		if c.typ != typ {
			continue
		}
		if c.doc == "" {
			t.Errorf("%s: %s has no comment to say what it means", file, c.value)
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s |", c.value, firstSentence(c.doc)))
	}
	if len(rows) < 10 {
		t.Fatalf("only %d %s constants read from %s", len(rows), typ, file)
	}
	return rows
}

// stringConst is a string constant of a Go file, as its source declares it.
type stringConst struct {
	name, typ, value string
	doc              string // its own comment: beside it, else above it
	groupDoc         string // its const block's
}

// stringConsts are the file's string constants, in order.
func stringConsts(t *testing.T, file string) []stringConst {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []stringConst
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			typ := ""
			if id, ok := v.Type.(*ast.Ident); ok {
				typ = id.Name
			}
			for i, val := range v.Values {
				if lit, ok := val.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					value, _ := strconv.Unquote(lit.Value)
					out = append(out, stringConst{name: v.Names[i].Name, typ: typ, value: value,
						doc: cmp.Or(v.Comment.Text(), v.Doc.Text()), groupDoc: g.Doc.Text()})
				}
			}
		}
	}
	return out
}

// held holds docs/reference.md's block name to want (-update writes it).
func held(t *testing.T, name, want string) {
	t.Helper()
	wrong, err := docblock.Check("docs/reference.md", name, want, *update)
	if err != nil {
		t.Fatal(err)
	}
	if wrong != "" {
		t.Error(wrong)
	}
}

// The README is the tool and how to start, at most 250 lines; history (issue numbers, steps)
// goes to CHANGELOG.md, never to the README or the docs; every link between them resolves.
func TestTheDocsAreForThePeopleWhoUseThem(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > 250 {
		t.Errorf("README.md is %d lines; at most 250 (the rest goes to docs/)", n)
	}
	pages := []string{"README.md", "deploy/README.md"}
	docs, _ := filepath.Glob("docs/*.md")
	guide, _ := filepath.Glob("docs/guide/*.md")
	pages = append(append(pages, docs...), guide...)
	issue := regexp.MustCompile(`(^|[\s(])#[0-9]{2,3}\b`) // "#57.1", "(#74": an issue; "ticket #4411" is the demo's
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, p := range pages {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if issue.MatchString(line) {
				t.Errorf("%s:%d names an issue: %q", p, i+1, strings.TrimSpace(line))
			}
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
					t.Errorf("%s:%d links to %s, which is not there", p, i+1, target)
				}
			}
		}
	}
}

// The reference's Nova metadata keys (drainctl:…) and Kubernetes labels and annotations
// (drainctl.io/…) are the constants the code names them by, each with its comment's first
// sentence, read from the source of model, ops and internal.
func TestTheReferenceNamesEveryKeyItWrites(t *testing.T) {
	tables := map[string][]string{"drainctl:": nil, "drainctl.io/": nil}
	for _, root := range []string{"model", "ops", "internal"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.Contains(path, "/sim") {
				return err
			}
			for _, c := range stringConsts(t, path) {
				for prefix := range tables {
					if strings.HasPrefix(c.value, prefix) && !strings.ContainsAny(c.value, " ") {
						tables[prefix] = append(tables[prefix], fmt.Sprintf("| `%s` | %s |", c.value, firstSentence(cmp.Or(c.doc, c.groupDoc))))
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for prefix, name := range map[string]string{"drainctl:": "metadata", "drainctl.io/": "annotations"} {
		rows := tables[prefix]
		slices.Sort(rows)
		rows = slices.Compact(rows)
		if len(rows) < 5 {
			t.Fatalf("only %d keys %s… read", len(rows), prefix)
		}
		held(t, name, "| key | what it is |\n|---|---|\n"+strings.Join(rows, "\n"))
	}
}

// firstSentence is a doc comment's first sentence, on one line, without the Go name it
// starts with ("JournalAnnotation is the node annotation…" → "The node annotation…").
func firstSentence(doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if m := regexp.MustCompile(`^[A-Z][A-Za-z]+ (is |on )`).FindStringSubmatch(doc); m != nil {
		doc = strings.TrimPrefix(doc, m[0])
		if m[1] == "on " {
			doc = "On " + doc
		}
		doc = strings.ToUpper(doc[:1]) + doc[1:]
	}
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i+1]
	}
	return strings.ReplaceAll(doc, "|", "\\|")
}

// The reference's Event reasons are the controllers' table (internal/controllers'
// EventReason constants), each step's pair (StepEventReason, for every model.StepKind) and
// [proactive]'s (NoticeEventReason, for the notice kinds it tells), read from the source.
func TestTheReferenceNamesEveryEventReason(t *testing.T) {
	rows := constTable(t, "internal/controllers/eventreasons.go", "EventReason")
	kinds := constValues(t, "model/plan.go", "StepKind")
	for _, name := range slices.Sorted(maps.Keys(kinds)) {
		k := model.StepKind(kinds[name])
		rows = append(rows, fmt.Sprintf("| `%s`, `%s` | the step %s done, or failed (its message says why) |",
			controllers.StepEventReason(k, false), controllers.StepEventReason(k, true), k))
	}
	notices := constValues(t, "model/notice.go", "NoticeKind")
	src, err := os.ReadFile("internal/controllers/proactive.go")
	if err != nil {
		t.Fatal(err)
	}
	// the kinds it tells: those named in proactive.go (each of its ends is picked into a variable)
	told := regexp.MustCompile(`model\.(Notice(?:Degrading|Proactive\w+))`).FindAllStringSubmatch(string(src), -1)
	for _, m := range told {
		rows = append(rows, fmt.Sprintf("| `%s` | [proactive]: the notice `%s` |",
			controllers.NoticeEventReason(model.NoticeKind(notices[m[1]])), notices[m[1]]))
	}
	if len(told) < 3 {
		t.Fatalf("only %d of [proactive]'s notices read from proactive.go", len(told))
	}
	slices.Sort(rows)
	held(t, "events", "| reason | recorded when |\n|---|---|\n"+strings.Join(slices.Compact(rows), "\n"))
}

// constValues are the file's string constants of the type, by name.
func constValues(t *testing.T, file, typ string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range stringConsts(t, file) {
		if c.typ == typ {
			out[c.name] = c.value
		}
	}
	return out
}

// The reference's records are kube.RecordKinds, the table SaveRecord writes by (a record of a
// kind without a row is refused); each row's kind is one the code names a record by.
func TestTheReferenceNamesEveryRecord(t *testing.T) {
	var rows []string
	for _, k := range kube.RecordKinds {
		rows = append(rows, fmt.Sprintf("| %s | `%s` | %s |", k.Kind, k.Name, strings.ReplaceAll(k.Holds, "|", "\\|")))
		named := regexp.MustCompile(`"` + regexp.QuoteMeta(k.Kind) + `(-[a-z]*)?"`)
		used := false
		for _, root := range []string{"ops", "internal"} {
			_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") &&
					!strings.HasSuffix(path, "kube/records.go") && !strings.Contains(path, "/sim") {
					data, _ := os.ReadFile(path)
					used = used || named.Match(data)
				}
				return err
			})
		}
		if !used {
			t.Errorf("kube.RecordKinds has %q, but no code names a record %s or %s-…", k.Kind, k.Kind, k.Kind)
		}
	}
	held(t, "records", "| kind | ConfigMap in drainctl's namespace | what it holds |\n|---|---|---|\n"+strings.Join(rows, "\n"))
}

// docs/design.md's Packages names every package of the module and what it owns: a package
// added without a line there fails.
func TestTheDesignNamesEveryPackage(t *testing.T) {
	data, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	design := string(data)
	layout := design[strings.Index(design, "## Packages"):]
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "image") {
			return filepath.SkipDir // hidden, test data, and hack/image (a module of its own)
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) == 0 || path == "." {
			return nil
		}
		base := path[strings.LastIndex(path, "/")+1:] + "/"
		if !strings.Contains(layout, path+"/") && !strings.Contains(layout, base) {
			t.Errorf("docs/design.md's Packages does not name %s/", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
