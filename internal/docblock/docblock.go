// Package docblock holds a generated block of a document to the code that generates it: the
// block between "<!-- NAME: how to regenerate -->" and "<!-- /NAME -->" is the code's text,
// or the test that calls Check fails; with update it is written again. Tests only.
package docblock

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Check compares the block NAME of the file at path with want, or writes want there (update).
// It returns what is wrong ("" when the block is want).
func Check(path, name, want string, update bool) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	block := regexp.MustCompile("(?s)(<!-- " + regexp.QuoteMeta(name) + ": ([^>]*)-->\n)(.*?)(<!-- /" + regexp.QuoteMeta(name) + " -->)")
	m := block.FindSubmatchIndex(data)
	if m == nil {
		return "", fmt.Errorf("%s has no block %q", path, name)
	}
	want = strings.TrimRight(want, "\n") + "\n"
	if update {
		out := string(data[:m[6]]) + want + string(data[m[7]:])
		return "", os.WriteFile(path, []byte(out), 0o644)
	}
	if got := string(data[m[6]:m[7]]); got != want {
		return fmt.Sprintf("%s's block %q is not the code's (%s)", path, name, strings.TrimSpace(string(data[m[4]:m[5]]))), nil
	}
	return "", nil
}
