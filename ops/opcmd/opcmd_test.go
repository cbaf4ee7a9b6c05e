package opcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type collected struct {
	mu    sync.Mutex
	lines []string
}

func (c *collected) add(s string) { c.mu.Lock(); c.lines = append(c.lines, s); c.mu.Unlock() }
func (c *collected) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// A line far longer than a pipe's buffer or a scanner's limit is cut, the command is not
// blocked by it, and what follows it still arrives.
func TestALongLineIsCutAndTheRestArrives(t *testing.T) {
	var c collected
	err := Run(context.Background(), Spec{Kind: Exec, Template: "head -c 102400 /dev/zero | tr '\\0' x; echo; echo after {node}", Node: "compute-0", Timeout: 30 * time.Second}, c.add)
	if err != nil {
		t.Fatal(err)
	}
	got := c.all()
	if len(got) != 3 || !strings.HasPrefix(got[0], "exec command started (timeout 30s)") {
		t.Fatalf("lines: %d, first %q", len(got), got[0])
	}
	if len(got[1]) != MaxLine+len(cutMarker) || !strings.HasSuffix(got[1], cutMarker) {
		t.Errorf("the long line is %d bytes, want %d with the marker", len(got[1]), MaxLine+len(cutMarker))
	}
	if got[2] != "after compute-0" {
		t.Errorf("the line after: %q", got[2])
	}
}

// A command that outlives its timeout is killed with every process it started: a child
// started in the background would otherwise act after drainctl said it stopped.
func TestTimeoutKillsTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "late")
	var c collected
	start := time.Now()
	err := Run(context.Background(), Spec{Kind: Fence, Template: "(sleep 2; touch " + marker + ") & sleep 60", Node: "compute-0", Timeout: 300 * time.Millisecond}, c.add)
	if err == nil || !strings.Contains(err.Error(), "fence command timed out after 300ms") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Run returned after %s", d)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the background child ran on after the timeout")
	}
}

// Cancelling kills the group too, and a command that exits while a child keeps its output
// open does not hang drainctl.
func TestCancelAndLeftoverChildren(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	if err := Run(ctx, Spec{Kind: Gate, Template: "sleep 60", Node: "n1"}, func(string) {}); err == nil {
		t.Fatal("a cancelled command reported success")
	}
	start := time.Now()
	if err := Run(context.Background(), Spec{Kind: Gate, Template: "sleep 60 & echo bye", Node: "n1"}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("a background child held Run for %s", d)
	}
}

// The error names the last line and shows no secret: not the command line (it goes to
// Events, notices and records, named by its kind only), and its output masked, also in
// what a command echoes of its own arguments.
func TestFailureSaysItsLastLineWithoutSecrets(t *testing.T) {
	err := Run(context.Background(), Spec{Kind: Fence, Template: "echo BMC down; exit 3 # ipmitool -P hunter2", Node: "n1"}, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "last line: BMC down") || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "ipmitool") {
		t.Fatalf("err = %v", err)
	}
	var lines []string
	err = Run(context.Background(), Spec{Kind: Fence, Template: "echo running fence_ipmilan -p hunter2; echo failed: BMC_PASSWORD=hunter2; exit 1", Node: "n1"},
		func(l string) { lines = append(lines, l) })
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(strings.Join(lines, "\n"), "hunter2") {
		t.Fatalf("err = %v, lines %q", err, lines)
	}
}

// A name that is no node name never reaches the command (a planted record's "-oProxyCommand=…"),
// and {node} inside quotes is refused.
func TestHostileNamesAndQuotedTemplates(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	for _, node := range []string{"-oProxyCommand=touch " + ran, "$(touch " + ran + ")", "a b", ""} {
		if err := Run(context.Background(), Spec{Kind: Gate, Template: "touch " + ran + "; ssh {node} true", Node: node}, func(string) {}); err == nil {
			t.Errorf("node %q: ran", node)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("a command ran for a hostile node name")
	}
	for tmpl, ok := range map[string]bool{
		`ssh -- {node} reboot`:                     true,
		`ssh "$DRAINCTL_NODE" reboot`:              true,
		`echo "on {node}"`:                         false,
		`echo 'on {node}'`:                         false,
		`echo "a" {node} 'b'`:                      true,
		`echo \"{node}`:                            true,
		`sh -c "ipmitool -H {node}-bmc power off"`: false,
	} {
		if err := Validate(tmpl); (err == nil) != ok {
			t.Errorf("Validate(%s) = %v, want ok=%v", tmpl, err, ok)
		}
	}
}

func TestShownMasksSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"ipmitool -I lanplus -H {node}-bmc -U admin -P hunter2 chassis power off": "ipmitool -I lanplus -H 'n1'-bmc -U admin -P ****** chassis power off",
		"curl -u root:hunter2 https://bmc/{node}":                                 "curl -u ****** https://bmc/'n1'",
		"fence --password=hunter2 {node}":                                         "fence --password=****** 'n1'",
		"fence --api-token hunter2 {node}":                                        "fence --api-token ****** 'n1'",
		"IPMI_PASSWORD=hunter2 ipmitool -E {node}":                                "IPMI_PASSWORD=****** ipmitool -E 'n1'",
		"curl https://admin:hunter2@bmc.example/{node}":                           "curl https://admin:xxxxx@bmc.example/'n1'",
		"curl -H 'Authorization: Bearer hunter2' x":                               "curl -H 'Authorization: Bearer ****** x",
		"fence_ipmilan -a bmc -l admin -p hunter2 -o off":                         "fence_ipmilan -a bmc -l admin -p ****** -o off",
		"ipmitool -H {node}-bmc -Phunter2 power off":                              "ipmitool -H 'n1'-bmc -P****** power off",
		"sshpass -p hunter2 ssh {node} poweroff":                                  "sshpass -p ****** ssh 'n1' poweroff",
		"racadm -r bmc -u root -p hunter2 serveraction powerdown":                 "racadm -r bmc -u ****** -p ****** serveraction powerdown",
		"curl --user=admin:hunter2 https://bmc/{node}":                            "curl --user=****** https://bmc/'n1'",
		"curl -H X-Auth-Token: hunter2 https://bmc":                               "curl -H X-Auth-Token: ****** https://bmc",
		"BMC_PW=hunter2 fence {node}":                                             "BMC_PW=****** fence 'n1'",
	} {
		if got := Shown(in, "n1"); got != want || strings.Contains(got, "hunter2") {
			t.Errorf("Shown(%s)\n got %s\nwant %s", in, got, want)
		}
	}
}

// A command that prints without end is reported in bounded lines and stopped at its
// timeout: its flood reaches no screen, log or stream.
func TestEndlessOutputIsBounded(t *testing.T) {
	var c collected
	err := Run(context.Background(), Spec{Kind: Fence, Template: "yes {node}", Node: "n1", Timeout: time.Second}, c.add)
	got := c.all()
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v", err)
	}
	if len(got) != MaxLines+2 || !strings.Contains(got[len(got)-1], "more line(s) not shown") {
		t.Fatalf("%d lines reported, the last %q", len(got), got[len(got)-1])
	}
}
