// Package flagrow is a command-line flag as a row: its names, its lines in --help, the verbs
// it belongs to, and where its value goes. The root's flags (internal/app) and each verb's own
// flags (ui/auto's verb rows) are rows of it, into their own targets.
package flagrow

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// Row is one flag, bound into a T.
type Row[T any] struct {
	Names   []string // the first is its name, the others its aliases (-l, -o)
	Section string   // the part of --help that lists it
	Usage   string   // its lines in its section of --help, as shown ("": not listed)
	Verbs   []string // the --auto verbs it belongs to (none: every one)
	Hint    string   // refused for another verb: what to do instead ("": run its verb)
	Bind    func(fs *flag.FlagSet, name string, into *T)
}

// Owner is what a refusal reads of a row: its names, its verbs and its hint.
func (r Row[T]) Owner() Owner { return Owner{Names: r.Names, Verbs: r.Verbs, Hint: r.Hint} }

// Owner is a flag's names and the verbs it belongs to.
type Owner struct {
	Names, Verbs []string
	Hint         string
}

// Bool binds a bool flag.
func Bool[T any](f func(*T) *bool, def bool) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, t *T) { fs.BoolVar(f(t), name, def, "") }
}

// String binds a string flag.
func String[T any](f func(*T) *string, def string) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, t *T) { fs.StringVar(f(t), name, def, "") }
}

// Int binds an int flag.
func Int[T any](f func(*T) *int, def int) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, t *T) { fs.IntVar(f(t), name, def, "") }
}

// Duration binds a duration flag (default 0).
func Duration[T any](f func(*T) *time.Duration) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, t *T) { fs.DurationVar(f(t), name, 0, "") }
}

// VMs binds a repeatable flag naming a VM.
func VMs[T any](f func(*T) *[]string) func(*flag.FlagSet, string, *T) {
	return func(fs *flag.FlagSet, name string, t *T) {
		fs.Func(name, "", func(v string) error {
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("--%s needs a VM name or ID", name)
			}
			*f(t) = append(*f(t), v)
			return nil
		})
	}
}

// Usage is the lines --help shows for the rows of a section, in the rows' order.
func Usage[T any](rows []Row[T], section string) string {
	var b strings.Builder
	for _, r := range rows {
		if r.Section == section {
			b.WriteString(r.Usage)
		}
	}
	return b.String()
}

// BindAll binds every name of every row into t.
func BindAll[T any](fs *flag.FlagSet, rows []Row[T], t *T) {
	for _, r := range rows {
		for _, name := range r.Names {
			r.Bind(fs, name, t)
		}
	}
}
