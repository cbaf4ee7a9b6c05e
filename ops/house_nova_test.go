package ops

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// Nova's words for a server's status and task, as its API writes them.
var (
	novaStatuses = strings.Fields(`ACTIVE BUILD DELETED ERROR HARD_REBOOT MIGRATING PASSWORD PAUSED REBOOT REBUILD RESCUE
		RESIZE REVERT_RESIZE SHELVED SHELVED_OFFLOADED SHUTOFF SOFT_DELETED SUSPENDED UNKNOWN VERIFY_RESIZE`)
	novaTasks = strings.Fields(`scheduling block_device_mapping networking spawning image_snapshot image_snapshot_pending
		image_pending_upload image_uploading image_backup updating_password resize_prep resize_migrating resize_migrated
		resize_finish resize_reverting resize_confirming rebooting reboot_pending reboot_started rebooting_hard
		reboot_pending_hard reboot_started_hard pausing unpausing suspending resuming powering-off powering-on rescuing
		unrescuing rebuilding rebuild_block_device_mapping rebuild_spawning migrating deleting soft-deleting restoring
		shelving shelving_image_pending_upload shelving_image_uploading shelving_offloading unshelving`)
)

// No Nova status or task word decides anything outside the adapter (ops/nova) and the
// simulator that plays Nova (ops/sim, its harness internal/simtest): ops/nova reads a server
// into a phase and a task, and the engine, the policy and the views decide by those. A word
// is caught where it decides: compared (==, !=, a case), a map key or a list's element, a
// strings.HasPrefix-like argument, or a constant (a status; a task word is also drainctl's
// own, "migrating"). Nova's words in a message to an operator are text, not decisions.
func TestNoNovaWordOutsideTheAdapter(t *testing.T) {
	words := map[string]string{}
	for _, w := range novaStatuses {
		words[w] = "status"
	}
	for _, w := range novaTasks {
		words[w] = "task"
	}
	skip := []string{"../ops/nova", "../ops/sim", "../internal/simtest", "../hack"}
	productionFiles(t, 150, skip, func(path string, fset *token.FileSet, f *ast.File) {
		flag := func(e ast.Expr, where string, kinds ...string) {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return
			}
			s, _ := strconv.Unquote(lit.Value)
			for _, k := range kinds {
				if words[s] == k {
					t.Errorf("%s: Nova's %s %q %s: decide by the VM's Phase and Task, read by ops/nova",
						fset.Position(lit.Pos()), k, s, where)
				}
			}
		}
		eachCompared(f, func(e ast.Expr, where string) { flag(e, where, "status", "task") })
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				for _, e := range x.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						flag(kv.Key, "as a key", "status", "task")
						continue
					}
					flag(e, "in a list", "status", "task")
				}
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Has") || isConversion(x) {
					for _, a := range x.Args {
						flag(a, "matched", "status", "task")
					}
				}
			case *ast.ValueSpec:
				for _, v := range x.Values {
					flag(v, "as a constant", "status")
				}
			}
			return true
		})
	})
}

// isConversion: a call of a named type on one argument, MigState("…") — a word made a value.
func isConversion(c *ast.CallExpr) bool {
	id, ok := c.Fun.(*ast.Ident)
	return ok && len(c.Args) == 1 && id.Name != "" && id.Name[0] >= 'A' && id.Name[0] <= 'Z'
}
