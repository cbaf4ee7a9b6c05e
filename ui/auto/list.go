// Package plain is drainctl's headless view: tables and NDJSON for --auto, with no
// terminal control codes, so scripts and CI logs read it as they read any tool's output.
package auto

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/text"
)

// Formats for -o.
const (
	FormatTable = "table"
	FormatJSON  = "json"
)

// nodeJSON is a node as `list -o json` writes it: the joined model plus its mismatches.
type nodeJSON struct {
	model.Node
	At             time.Time        `json:"at"`
	NovaConfigured bool             `json:"novaConfigured"`
	Mismatches     []model.Mismatch `json:"mismatches,omitempty"`
}

// WriteInventory prints the joined inventory as a table, or as NDJSON: one node per line
// ({"type":"node",...}), then each VM on no known host ("unplacedVM") and each PDB ("pdb").
func WriteInventory(w io.Writer, inv model.Inventory, format string) error {
	if format == FormatJSON {
		for _, n := range inv.Nodes {
			if err := writeLine(w, "node", nodeJSON{n, inv.At, inv.NovaConfigured, n.Mismatches(inv.NovaConfigured)}); err != nil {
				return err
			}
		}
		for _, vm := range inv.UnplacedVMs {
			if err := writeLine(w, "unplacedVM", vm); err != nil {
				return err
			}
		}
		for _, p := range inv.PDBs {
			if err := writeLine(w, "pdb", p); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLES\tSTATUS\tCOMPUTE\tVCPU\tRAM\tVMS\tPODS\tNOTES")
	for _, n := range inv.Nodes {
		var notes []string
		reasonShown := false
		for _, m := range n.Mismatches(inv.NovaConfigured) {
			notes = append(notes, m.Message)
			reasonShown = reasonShown || m.Code == model.DisabledButSchedulable
		}
		if n.Compute != nil && !n.Compute.Enabled && n.Compute.DisabledReason != "" && !reasonShown {
			notes = append(notes, text.Sprintf("disabled: \"%s\"", n.Compute.DisabledReason))
		}
		for _, m := range n.Migrations {
			notes = append(notes, text.Sprintf("migration %s %s→%s", m.Status, m.SourceCompute, orDash(m.DestCompute)))
		}
		text.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, text.Roles(n), text.KubeState(n),
			text.Compute(n, inv.NovaConfigured), text.VCPU(n), text.RAM(n), text.VMs(n, inv.NovaConfigured),
			text.Pods(n), strings.Join(notes, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(inv.UnplacedVMs) > 0 {
		text.Fprintf(w, "\n%d VM(s) on hosts that are no known compute service:\n", len(inv.UnplacedVMs))
		for _, vm := range inv.UnplacedVMs {
			text.Fprintf(w, "  %s %s host=\"%s\" %s\n", vm.ShortID(), vm.Name, vm.Host, vm.Status)
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeLine writes v as one JSON line with its type first: {"type":typ, <v's fields>}.
// JSON escapes the values itself: a raw ESC never reaches the terminal.
func writeLine(w io.Writer, typ string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) < 2 || b[0] != '{' {
		return fmt.Errorf("%s: not an object", typ)
	}
	sep := ","
	if len(b) == 2 {
		sep = ""
	}
	_, err = fmt.Fprintf(w, "{\"type\":%q%s%s\n", typ, sep, b[1:])
	return err
}
