// Command drainctl empties, fixes and removes nodes of a mixed Kubernetes + OpenStack Nova
// cluster: cordon and disable nova-compute, evict pods and live-migrate VMs, and undo it all.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/drainctl/drainctl/internal/app"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
	"github.com/drainctl/drainctl/ui/auto"
)

// Set by the linker: -X main.version=... -X main.commit=... -X main.date=...
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

var usage = `drainctl: empty, fix and remove nodes of a Kubernetes + OpenStack Nova cluster.

Usage:
  drainctl [flags]                      the interactive view (TUI)
  drainctl --auto VERB [ARGS] [flags]   headless, for scripts and CI
  drainctl --daemon [--node NODE]       follow cordon/uncordon: disable nova-compute and
                                        live-migrate VMs off cordoned nodes, re-enable after
  drainctl --proxy [--listen ADDR]      serve the cloudpool API in front of [cloudpool] url:
                                        scale-downs empty and delete a safe node first
  drainctl --controller                 reconcile NodeMaintenance resources (leader-elected):
                                        created, empty the node; deleted, put it back
  drainctl version                      the version (also --version)
  drainctl completion bash|zsh|fish     a shell completion script
  kubectl drainctl ...                  the same, as a kubectl plugin (kubectl-drainctl on PATH)

Verbs (--auto):
` + auto.VerbUsage() + `  (no verb)            evacuate the node drainctl runs on (NODE_NAME, else the hostname)

Operation flags:
` + app.FlagUsage(app.SectionOperation) + `
` + auto.VerbFlagUsage() + `Simulated cluster (no cluster needed):
  drainctl --demo [--auto VERB]         run on a generated cluster (Kubernetes + Nova)
  drainctl sim serve                    serve the simulated Nova + Keystone and print OS_* variables
` + app.FlagUsage(app.SectionSim) + `
Flags:
` + app.FlagUsage(app.SectionGeneral) + `
OpenStack credentials: -config-path, else OS_CLOUD + clouds.yaml, else OS_* variables,
else the [openstack] table of config.toml. With none, drainctl works on Kubernetes alone.

Exit codes: 0 done, 1 failed, 2 usage or configuration error or a cluster that cannot be
reached, 3 refused by policy, 4 interrupted (a rerun resumes), 5 doctor found disagreements,
6 done but the node is not empty (VMs left by --skip-vm or --force).
`

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		cancel() // first signal: stop at the next safe point
		<-signals
		fmt.Fprintln(os.Stderr, "drainctl: second signal, exiting at once")
		os.Exit(app.ExitInterrupted)
	}()
	serveProfiles(os.Getenv("DRAINCTL_PPROF"))
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	cancel()
	os.Exit(code)
}

// run is the whole program; it returns the exit code so that deferred calls run first.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	opts, cmd, err := parseArgs(args)
	switch {
	case err == nil && cmd == cmdHelp:
		if h := app.VerbHelp(firstArg(opts.Args)); opts.Auto && h != "" { // drainctl --auto VERB --help: that verb's
			fmt.Fprint(stdout, h)
			return app.ExitOK
		}
		fmt.Fprint(stdout, usage)
		return app.ExitOK
	case err == nil && cmd == cmdVersion:
		fmt.Fprintln(stdout, versionLine(version, commit, date))
		return app.ExitOK
	case err == nil && cmd == cmdCompletion:
		if len(opts.Args) != 2 {
			err = &ops.UsageError{Problem: "completion needs a shell", Hint: "drainctl completion bash|zsh|fish"}
		} else if cerr := completion(stdout, opts.Args[1], app.FlagSet(new(app.Options))); cerr != nil {
			err = &ops.UsageError{Problem: cerr.Error()}
		}
	case err == nil:
		err = app.Run(ctx, opts, stdout, stderr, getenv)
	}
	if err != nil {
		label := "error"
		if app.ExitCodeOf(err) == app.ExitNotEmpty { // done as asked: no error, a node left not empty on purpose
			label = "done, not empty"
		}
		text.Fprintf(stderr, "drainctl: %s: %s\n", label, app.ErrorText(err))
		if hint := app.HintOf(err); hint != "" {
			text.Fprintf(stderr, "drainctl: hint: %s\n", hint)
		}
		if opts.Demo && app.ExitCodeOf(err) == app.ExitInterrupted {
			// "Run it again to resume" is true of a cluster; the demo's lives in this process.
			text.Fprintf(
				stderr,
				"drainctl: hint: the demo's cluster lived in this process only: a rerun starts a new one (run the demo's "+
					"operations one after the other in its TUI: drainctl --demo)\n",
			)
		}
	}
	return app.ExitCodeOf(err)
}

// What the command line asks for besides a mode.
const (
	cmdRun = iota
	cmdHelp
	cmdVersion
	cmdCompletion
)

// goFlagValue is how Go's flag package wraps a flag's own check: `invalid value "V" for flag
// -NAME: ` before what the check said.
var goFlagValue = regexp.MustCompile(`^invalid value ".*" for flag -([a-z0-9-]+): (.*)$`)

// flagProblem is a flag's error as the user reads it: a row's own check names its flag and
// value already, so Go's wrapping of it goes.
func flagProblem(err error) string {
	if m := goFlagValue.FindStringSubmatch(err.Error()); m != nil && strings.HasPrefix(m[2], "--"+m[1]) {
		return m[2]
	}
	return err.Error()
}

// parseArgs reads the flags; they may come before or after the verb.
func parseArgs(args []string) (app.Options, int, error) {
	var o app.Options
	fs := app.FlagSet(&o)
	// Flags may come before or after the verb: parse, take one positional, parse the rest.
	for {
		if err := fs.Parse(args); err != nil {
			return o, cmdRun, &ops.UsageError{Problem: flagProblem(err), Hint: "run drainctl --help for the flags"}
		}
		if fs.NArg() == 0 {
			break
		}
		o.Args = append(o.Args, fs.Arg(0))
		args = fs.Args()[1:]
	}
	o.Set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.Set[f.Name] = true })
	if o.Output != auto.FormatTable && o.Output != auto.FormatJSON {
		return o, cmdRun, &ops.UsageError{Problem: fmt.Sprintf("unknown output format %q", o.Output), Hint: "use -o table or -o json"}
	}
	switch {
	case o.Help:
		return o, cmdHelp, nil
	case o.Version, len(o.Args) == 1 && o.Args[0] == "version":
		return o, cmdVersion, nil
	case len(o.Args) > 0 && o.Args[0] == "completion":
		return o, cmdCompletion, nil
	}
	return o, cmdRun, nil
}

// firstArg is the first positional argument ("": none).
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// versionLine says which drainctl this is: the linker's words (a release), else what the Go
// toolchain recorded of the module and its commit (a plain go build or go install).
func versionLine(version, commit, date string) string {
	if info, ok := debug.ReadBuildInfo(); ok && commit == "none" {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				date = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					commit += ", modified"
				}
			}
		}
	}
	return fmt.Sprintf("drainctl %s (commit %s, built %s)", version, commit, date)
}
