package app

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/opcmd"
	"github.com/drainctl/drainctl/ops/prom"
	"github.com/drainctl/drainctl/text"
	"github.com/drainctl/drainctl/ui/auto"
)

// Bad input is refused before anything is read or changed (exit 2): a flag that the verb
// does not use, a value out of range, a command template that could be turned against its
// operator. A silently ignored flag is a request not carried out.

// PromTokenEnv holds the Prometheus gate's bearer token, when no token file is given.
const PromTokenEnv = auto.PromTokenEnv

func checkAutoFlags(verb string, args []string, o Options) error {
	target := verb
	if verb == "plan" && len(args) > 0 {
		target = args[0]
	}
	if err := misplacedFlags(o, target); err != nil { // flags.go: each flag's verbs
		return err
	}
	if err := readVerbFlags(verb, args, o); err != nil {
		return err
	}
	if verb == "roll" {
		named := map[string]bool{}
		for _, n := range args {
			if named[n] {
				return &ops.UsageError{Problem: fmt.Sprintf("node %s is named twice: a campaign works each node once", text.ShellWord(n)),
					Hint: "name each node once"}
			}
			named[n] = true
		}
	}
	if o.Verb.Recover.FenceCmd != "" && o.Verb.Recover.ConfirmFenced {
		return &ops.UsageError{Problem: "--fence-cmd and --confirm-fenced both given: one proof is asked for",
			Hint: "give --fence-cmd to power the machine off, or --confirm-fenced when you know it is off"}
	}
	for _, n := range []struct {
		flag string
		neg  bool
	}{{"timeout",
		o.Op.Timeout < 0}, {"max-parallel",
		o.Op.MaxParallel < 0}, {"node-deadline", o.Verb.Roll.NodeDeadline < 0}, {"count", o.Count < 0},
		{"owner-lead", o.Verb.OwnerLead < 0}} {
		if n.neg {
			return &ops.UsageError{Problem: "--" + n.flag + " must not be negative", Hint: "leave it out to use the default"}
		}
	}
	if o.Op.MaxParallel > maxParallel {
		// Each node worked at once holds goroutines, watches and a lease: millions would
		// exhaust memory before the first node; no cluster empties that many at once.
		return &ops.UsageError{Problem: fmt.Sprintf("--max-parallel %d is more than %d", o.Op.MaxParallel, maxParallel),
			Hint: "nodes worked at once; the default is concurrency.nodes (1)"}
	}
	if o.Set["node-deadline"] && o.Verb.Roll.NodeDeadline < time.Minute {
		return &ops.UsageError{Problem: fmt.Sprintf("--node-deadline %s is under a minute: no node drains that fast",
			o.Verb.Roll.NodeDeadline),
			Hint: "the default is 30m; give at least 1m"}
	}
	if o.Verb.Roll.Name != "" {
		if errs := validation.IsDNS1123Label(o.Verb.Roll.Name); len(errs) > 0 {
			return &ops.UsageError{Problem: fmt.Sprintf("--campaign %q is no DNS-1123 name: %s",
				o.Verb.Roll.Name, strings.Join(errs, "; ")),
				Hint: "lower-case letters, digits and '-', e.g. rack-r1-firmware"}
		}
	}
	if o.Verb.Roll.GateAlerts != "" && o.Verb.Roll.GatePrometheus == "" {
		return &ops.UsageError{Problem: "--gate-alerts without --gate-prometheus: there is no Prometheus to read the alerts from",
			Hint: "add --gate-prometheus https://prometheus.example:9090"}
	}
	for flag, tmpl := range map[string]string{"fence-cmd": o.Verb.Recover.FenceCmd, "exec": o.Verb.Roll.Exec,
		"gate-cmd": o.Verb.Roll.Gates.Cmd} {
		if err := opcmd.Validate(tmpl); tmpl != "" && err != nil {
			return &ops.UsageError{Problem: "--" + flag + ": " + err.Error(), Hint: "e.g. ssh -- {node} sudo reboot"}
		}
	}
	return nil
}

// alertGate is the Prometheus gate the flags ask for (nil: none). Its token comes from
// --gate-prometheus-token-file or DRAINCTL_PROMETHEUS_TOKEN, never from the command line.
func (e env) alertGate() (campaign.AlertSource, error) {
	o := e.o
	if o.Verb.Roll.GatePrometheus == "" {
		return nil, nil
	}
	po := prom.Options{URL: o.Verb.Roll.GatePrometheus, CAFile: o.Verb.Roll.GatePromCAFile, Token: model.Secret(e.getenv(PromTokenEnv))}
	if o.Verb.Roll.GatePromTokenFile != "" {
		b, err := os.ReadFile(o.Verb.Roll.GatePromTokenFile)
		if err != nil {
			return nil, &ops.UsageError{Problem: "--gate-prometheus-token-file: " + err.Error()}
		}
		po.Token = model.Secret(strings.TrimSpace(string(b)))
	}
	if o.Verb.Roll.GateAlerts != "" {
		re, err := regexp.Compile(o.Verb.Roll.GateAlerts)
		if err != nil {
			return nil, &ops.UsageError{
				Problem: fmt.Sprintf("--gate-alerts %q: %v", o.Verb.Roll.GateAlerts, err),
				Hint:    "a Go regular expression over alert names, e.g. 'Node.*|Ceph.*'",
			}
		}
		po.Match = re
	}
	c, err := prom.New(po)
	if err != nil {
		return nil, &ops.UsageError{
			Problem: "--gate-prometheus: " + err.Error(),
			Hint:    "e.g. --gate-prometheus https://prometheus.example:9090",
		}
	}
	return c, nil
}

// maxParallel bounds --max-parallel.
const maxParallel = 1000

// VerbHelp is what drainctl --auto VERB --help prints: the verb's lines and its flags, the
// operation's flags for a verb that runs one, and where the rest are.
func VerbHelp(verb string) string {
	s := auto.VerbHelp(verb)
	if s == "" {
		return ""
	}
	if _, reads := readVerbs[verb]; !reads {
		s += "\nOperation flags:\n" + FlagUsage(SectionOperation)
	}
	return s + "\nThe general flags (--config, --kubeconfig, -o json, …) and the exit codes: drainctl --help\n"
}

// readVerbs run no operation: they take no argument, and an operation's flag (--force,
// --ignore-failover-room, --skip-vm) given to one is a request not carried out. The flags
// each does read are listed beside it.
var readVerbs = map[string][]string{
	"list": nil, "doctor": nil, "recommend": {"count"}, "recoveries": nil, "campaigns": nil,
	"pause-recovery": {"reason"}, "resume-recovery": nil,
}

func readVerbFlags(verb string, args []string, o Options) error {
	reads, ok := readVerbs[verb]
	if !ok {
		return nil
	}
	if len(args) > 0 {
		return &ops.UsageError{Problem: fmt.Sprintf("%s takes no argument, got %s", verb, text.ShellWord(args[0])),
			Hint: "drainctl --help lists each verb's arguments"}
	}
	for _, r := range flagRows {
		for _, name := range r.Names {
			if r.Section == SectionOperation && o.Set[name] && !slices.Contains(reads, name) {
				return &ops.UsageError{Problem: fmt.Sprintf("--%s changes how an operation runs; %s runs none", name, verb),
					Hint: "leave it out"}
			}
		}
	}
	return nil
}
