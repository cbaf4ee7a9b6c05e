package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input is refused before anything is read or changed, with what is wrong, where, and
// how to fix it (exit 2): a flag the verb would ignore, a value out of range, a credential
// on the command line, a template that quotes {node}, a config value that would bite later.
func TestBadInputIsRefused(t *testing.T) {
	dir := t.TempDir()
	conf := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	notReady := conf("notready.toml", "[recover]\nnot_ready_for = \"10s\"\n")
	poll := conf("poll.toml", "# fast\n[timeouts]\npoll = \"10ms\"\n")
	local := conf("local.toml", "[roll]\nwindow = \"Mon-Fri 22:00-06:00 Local\"\n")
	badWindow := conf("window.toml", "\n[roll]\nwindow = \"weekdays 22-6\"\n")
	quoted := conf("fence.toml", "[recover]\nfence_cmd = 'ipmitool -H \"{node}-bmc\" power off'\n")
	automatic := conf("automatic.toml", "[recover]\n# opted in, with no fence command\nautomatic = true\n")
	unhealthy := conf("unhealthy.toml", "[recover]\nmax_unhealthy = \"half\"\n")
	canary := conf("canary.toml", "[return]\ncanary = true\nimage = \"img\"\nflavor = \"c1.tiny\"\n")
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--auto", "evacuate", "n1", "--gate-cmd", "true"}, "--gate-cmd belong(s) to roll, not evacuate"},
		{[]string{"--auto", "evacuate", "n1", "--window", "daily 01:00-05:00 UTC"}, "--window belong(s) to roll"},
		{[]string{"--auto", "plan", "evacuate", "n1", "--node-deadline", "5m"}, "--node-deadline belong(s) to roll"},
		{[]string{"--auto", "evacuate", "n1", "--fence-cmd", "true"}, "--fence-cmd belong(s) to recover"},
		{[]string{"--auto", "evacuate", "n1", "--accept-disk-loss"}, "--accept-disk-loss belong(s) to recover"},
		{[]string{"--auto", "evacuate", "n1", "--return-vms"}, "--return-vms belongs to roll and uncordon, not evacuate"},
		{[]string{"--auto", "roll", "n1", "--gate-alerts", "Node.*"}, "--gate-alerts without --gate-prometheus"},
		{[]string{"--auto", "roll", "n1", "--gate-prometheus", "localhost:9090"}, "the scheme must be http or https"},
		{[]string{"--auto", "roll", "n1", "--gate-prometheus", "https://"}, "has no host"},
		{[]string{"--auto", "roll", "n1", "--gate-prometheus", "https://admin:hunter2@prom.example:9090"}, "carries a credential"},
		{[]string{"--auto", "evacuate", "n1", "--timeout", "-1s"}, "--timeout must not be negative"},
		{[]string{"--auto", "evacuate", "n1", "--max-parallel", "-2"}, "--max-parallel must not be negative"},
		{[]string{"--auto", "evacuate", "n1", "--max-parallel", "5000000"}, "--max-parallel 5000000 is more than 1000"},
		{[]string{"--auto", "roll", "n1", "--node-deadline", "-5m"}, "--node-deadline must not be negative"},
		{[]string{"--auto", "recommend", "--count", "-1"}, "--count must not be negative"},
		{[]string{"--auto", "roll", "n1", "n2", "n1"}, "node n1 is named twice"},
		{[]string{"--auto", "list", "extra-arg"}, "list takes no argument, got extra-arg"},
		{[]string{"--auto", "list", "--ignore-failover-room"}, "--ignore-failover-room changes how an operation runs; list runs none"},
		{[]string{"--auto", "doctor", "--force"}, "--force changes how an operation runs; doctor runs none"},
		{[]string{"--auto", "evacuate", "n1", "--owner-lead", "-1s"}, "--owner-lead must not be negative"},
		{[]string{"--auto", "list", "--owner-lead", "0"}, "--owner-lead belongs to roll and evacuate, not list"},
		{[]string{"--auto", "roll", "n1", "--node-deadline", "30s"}, "under a minute"},
		{[]string{"--auto", "roll", "n1", "--campaign", "Rack_1"}, "no DNS-1123 name"},
		{[]string{"--auto", "roll", "n1", "--exec", `ssh "{node}" reboot`}, `{node} is inside " quotes`},
		{[]string{"--auto", "roll", "n1", "--gate-cmd", `check '{node}'`}, "{node} is inside ' quotes"},
		{[]string{"--config", notReady, "--auto", "list"}, notReady + ":2:1: recover.not_ready_for must be at least 30s"},
		{[]string{"--config", poll, "--auto", "list"}, poll + ":3:1: timeouts.poll must be at least 100ms"},
		{[]string{"--config", local, "--auto", "list"}, local + ":2:1: roll.window"},
		{[]string{"--config", badWindow, "--auto", "list"}, badWindow + ":3:1: roll.window"},
		{[]string{"--config", quoted, "--auto", "list"}, quoted + ":2:1: recover.fence_cmd"},
		{[]string{"--config", automatic, "--auto", "list"}, automatic + ":3:1: recover.automatic needs recover.fence_cmd"},
		{[]string{"--config", unhealthy, "--auto", "list"}, unhealthy + ":2:1: recover.max_unhealthy must be a count or a percentage"},
		{[]string{"--config", canary, "--auto", "list"}, canary + ":2:1: return.canary is true but return.network is not set"},
	} {
		r := drainctl(t, map[string]string{}, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.args, r.code, r.stderr, tc.stderr)
		}
		if strings.Contains(r.stderr+r.stdout, "hunter2") {
			t.Errorf("%v: the password is printed:\n%s", tc.args, r.stderr)
		}
	}
	if r := drainctl(t, map[string]string{}, "--config", local, "--auto", "list"); !strings.Contains(r.stderr, "Local is no zone") {
		t.Errorf("Local: %s", r.stderr)
	}
}

// drainctl --auto VERB --help is that verb's: its lines, the flags that belong to it, the
// operation's flags when it runs one, and where the rest are; not the whole --help.
func TestAVerbsHelpIsItsOwn(t *testing.T) {
	whole := drainctl(t, map[string]string{}, "--help")
	for verb, want := range map[string][]string{
		"evacuate": {"drainctl --auto evacuate:", "--owner-lead D", "Operation flags:", "--skip-vm NAME"},
		"recover":  {"drainctl --auto recover:", "--fence-cmd", "--accept-disk-loss"},
		"list":     {"drainctl --auto list:", "drainctl --help"},
	} {
		r := drainctl(t, map[string]string{}, "--auto", verb, "--help")
		if r.code != 0 || strings.Count(r.stdout, "\n") >= strings.Count(whole.stdout, "\n")/2 {
			t.Errorf("%s --help: exit %d, %d lines (the whole help: %d)", verb, r.code, strings.Count(r.stdout, "\n"),
				strings.Count(whole.stdout, "\n"))
		}
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s --help does not say %q:\n%s", verb, w, r.stdout)
			}
		}
	}
	if r := drainctl(t, map[string]string{}, "--auto", "list", "--help"); strings.Contains(r.stdout, "Operation flags") {
		t.Errorf("list --help lists the operation's flags:\n%s", r.stdout)
	}
}

// A refusal whose blocker no flag lifts says so, and names no other blocker's flags: recover
// of a live node (Ready) hints no --accept-disk-loss.
func TestARefusalNoFlagLiftsSaysSo(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--demo", "--auto", "recover", "compute-0")
	if r.code != 3 || !strings.Contains(r.stderr, "hint: no flag overrides compute-0: the node is Ready") ||
		strings.Contains(r.stderr, "hint: use") {
		t.Errorf("recover of a live node: exit %d\n%s", r.code, r.stderr)
	}
}

// The demo's pause ends with its cluster, in this process: it does not say it lasts until
// resume-recovery.
func TestTheDemosPauseSaysItEndsWithTheProcess(t *testing.T) {
	r := drainctl(t, map[string]string{}, "--demo", "--auto", "pause-recovery", "--reason", "a test")
	if r.code != 0 || !strings.Contains(r.stdout, "ends with this command") || strings.Contains(r.stdout, "until drainctl --auto resume-recovery") {
		t.Errorf("pause-recovery in the demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
