package auto

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ui/flagrow"
)

// The flags of recover and roll, each on its verb's row (verbs.go); a verb's flags belong to
// it (and to the verbs a row adds), are listed in its section of --help, and go into Params.

// PromTokenEnv holds the Prometheus gate's bearer token, when no token file is given.
const PromTokenEnv = "DRAINCTL_PROMETHEUS_TOKEN"

// recoverFlags: how the dead machine is proven off, and the disks a rebuild may lose.
var recoverFlags = []flagrow.Row[Params]{
	{Names: []string{"fence-cmd"},
		Usage: "  --fence-cmd 'CMD {node}'   power the machine off (ipmitool, a Redfish call): exit 0\n" +
			"                       proves it off; its output is reported line by line\n",
		Bind: flagrow.String(func(p *Params) *string { return &p.Recover.FenceCmd }, "")},
	{Names: []string{"confirm-fenced"},
		Usage: "  --confirm-fenced     your word that the machine is off (journaled with who and when)\n",
		Bind:  flagrow.Bool(func(p *Params) *bool { return &p.Recover.ConfirmFenced }, false)},
	{Names: []string{"accept-disk-loss"},
		Usage: "  --accept-disk-loss   rebuild the VMs whose local disk stays on the dead machine: they come\n" +
			"                       back from their image, their disk lost (the plan lists them)\n",
		Bind: flagrow.Bool(func(p *Params) *bool { return &p.Recover.AcceptDiskLoss }, false)},
}

// rollFlags: the campaign's nodes and how it works them.
var rollFlags = []flagrow.Row[Params]{
	{Names: []string{"selector", "l"},
		Usage: "  -l, --selector L=V   the nodes: those the label selector matches (instead of NODE...)\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.Selector }, "")},
	{Names: []string{"parallel"},
		Usage: "  --parallel N|N%      nodes worked at once, or a share of the campaign's (default 1; at most\n" +
			"                       concurrency.nodes, see --max-parallel)\n",
		Bind: parallelFlag},
	{Names: []string{"spread-by"},
		Usage: "  --spread-by LABEL    never two nodes of one LABEL value (a zone, a rack) in flight; the\n" +
			"                       order walks the values round-robin\n",
		Bind: flagrow.String(func(p *Params) *string { return &p.Roll.SpreadBy }, "")},
	{Names: []string{"order"},
		Usage: "  --order name|given|cost   the order of the nodes (default: given, or by name for a\n" +
			"                       selector); cost: the ranking's cheapest first\n",
		Bind: flagrow.String(func(p *Params) *string { return &p.Roll.Order }, "")},
	{Names: []string{"gate-cmd"},
		Usage: "  --gate-cmd 'CMD {node}'   before each node starts, CMD must exit 0 (else the campaign waits)\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.Gates.Cmd }, "")},
	{Names: []string{"gate-prometheus"},
		Usage: "  --gate-prometheus URL     before each node starts, no alert may fire in this Prometheus\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.GatePrometheus }, "")},
	{Names: []string{"gate-alerts"},
		Usage: "  --gate-alerts REGEX  with --gate-prometheus: only the alerts whose name matches hold it\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.GateAlerts }, "")},
	{Names: []string{"gate-prometheus-token-file"},
		Usage: "  --gate-prometheus-token-file FILE   its bearer token (else " + PromTokenEnv + ")\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.GatePromTokenFile }, "")},
	{Names: []string{"gate-prometheus-ca-file"},
		Usage: "  --gate-prometheus-ca-file FILE      the CA its certificate is checked against\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.GatePromCAFile }, "")},
	{Names: []string{"exec"},
		Usage: "  --exec 'CMD {node}'  run on each emptied node ({node}: its name; env DRAINCTL_NODE, DRAINCTL_HOST)\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.Exec }, "")},
	{Names: []string{"wait-ready"},
		Usage: "  --wait-ready         wait for the node to reboot and come back Ready with nova-compute up\n",
		Bind:  flagrow.Bool(func(p *Params) *bool { return &p.Roll.WaitReady }, false)},
	{Names: []string{"return-vms"}, Verbs: []string{"uncordon"}, // and roll, its row
		Hint: "leave it out, or give it to uncordon after an evacuate, or to roll",
		Usage: "  --return-vms         (roll, uncordon) once a node is back and proven, bring home the VMs\n" +
			"                       that left it (its journal), live or cold as they left; one moved,\n" +
			"                       resized or deleted since stays where it is, said so\n",
		Bind: flagrow.Bool(func(p *Params) *bool { return &p.ReturnVMs }, false)},
	{Names: []string{"owner-lead"}, Verbs: []string{"evacuate"}, // and roll, its row
		Hint: "give it to evacuate or roll",
		Usage: "  --owner-lead D       (roll, evacuate) cap the lead the VMs' owners are given ([notify]\n" +
			"                       owner_lead) for this run; 0 waives it (an emergency): they are still told\n",
		Bind: flagrow.Duration(func(p *Params) *time.Duration { return &p.OwnerLead })},
	{Names: []string{"on-failure"},
		Usage: "  --on-failure MODE    stop (default): stop at the failed node; skip: roll it back, go on\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.OnFailure }, "stop")},
	{Names: []string{"window"},
		Usage: "  --window 'DAYS HH:MM-HH:MM ZONE'   no node starts outside it (e.g. 'Mon-Fri 22:00-06:00\n" +
			"                       Europe/Berlin'; [roll] window); the campaign waits, says until when\n",
		Bind: windowFlag},
	{Names: []string{"node-deadline"},
		Usage: "  --node-deadline D    a node not drained within D (default 30m) is undrainable:\n",
		Bind:  flagrow.Duration(func(p *Params) *time.Duration { return &p.Roll.NodeDeadline })},
	{Names: []string{"undrainable"},
		Usage: "  --undrainable MODE   quarantine (default: roll it back, label it drainctl.io/quarantined,\n" +
			"                       go on), rollback (roll it back, stop) or fail (stop, left as it is)\n",
		Bind: flagrow.String(func(p *Params) *string { return &p.Roll.Undrainable }, "")},
	{Names: []string{"campaign"},
		Usage: "  --campaign NAME      the campaign's name (default: derived from the nodes or selector)\n",
		Bind:  flagrow.String(func(p *Params) *string { return &p.Roll.Name }, "")},
	{Names: []string{"resume"},
		Usage: "  --resume             resume the campaign's unfinished record even when older than [roll]\n" +
			"                       resume_within\n",
		Bind: flagrow.Bool(func(p *Params) *bool { return &p.Roll.Resume }, false)},
}

// windowFlag reads --window into the campaign's gate: a window that is none is refused as
// the flag is read.
func windowFlag(fs *flag.FlagSet, name string, p *Params) {
	fs.Func(name, "", func(v string) error {
		w, err := campaign.ParseWindow(v)
		if bad := (*ops.UsageError)(nil); errors.As(err, &bad) {
			return fmt.Errorf("--window: %s; %s", bad.Problem, bad.Hint)
		} else if err != nil {
			return fmt.Errorf("--window: %w", err)
		}
		p.Roll.Gates.Window = w
		return nil
	})
}

// parallelFlag reads --parallel: a number of nodes, or a share of them.
func parallelFlag(fs *flag.FlagSet, name string, p *Params) {
	p.Roll.Parallel = 1
	fs.Func(name, "", func(v string) error {
		n, pct := strings.CutSuffix(strings.TrimSpace(v), "%")
		i, err := strconv.Atoi(n)
		switch {
		case err != nil || i < 1 || (pct && i > 100):
			return fmt.Errorf("--parallel %q: a number of nodes (4) or a share of them (10%%)", v)
		case pct:
			p.Roll.ParallelPercent = i
		default:
			p.Roll.Parallel = i
		}
		return nil
	})
}
