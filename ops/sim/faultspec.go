package sim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// FaultSpecHelp lists what --demo-fault accepts.
const FaultSpecHelp = `latency=DURATION (every Nova call), slow-api=P99 (every Nova call, a random delay: 1 in 100 slower than P99), ` +
	`loaded-api=DURATION (every Nova call, a random delay whose mean grows by DURATION for each move under way), ` +
	`fail-api=SHARE (that share of Nova calls answered 503, 0 to 1), ` +
	`shared-link=N (the live moves share one link that carries N at full speed; more each get less), ` +
	`migrate-500, migrate-409, services-503, ` +
	`no-valid-host, compute-down=HOST, never-converge=VM, fail-migration=VM@PHASE (preparing or running), ` +
	`boot-error=HOST (a server booted there ends in ERROR), boot-hang=HOST (stays BUILD; a stop or start there never ends), ` +
	`console-silent=HOST (an empty console log)`

// ApplyFaultSpec applies a comma-separated list of faults, as given to --demo-fault.
func (w *World) ApplyFaultSpec(spec string) error {
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, arg, _ := strings.Cut(item, "=")
		switch name {
		case "latency":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return fmt.Errorf("fault %q: %v", item, err)
			}
			w.InjectFault(Fault{Latency: d})
		case "slow-api":
			d, err := time.ParseDuration(arg)
			if err != nil || d <= 0 {
				return fmt.Errorf("fault %q: a duration, the 99th percentile (slow-api=5s)", item)
			}
			w.InjectFault(Fault{P99: d})
		case "loaded-api":
			d, err := time.ParseDuration(arg)
			if err != nil || d <= 0 {
				return fmt.Errorf("fault %q: a duration, the mean delay each move under way adds (loaded-api=50ms)", item)
			}
			w.InjectFault(Fault{PerMove: d})
		case "fail-api":
			share, err := strconv.ParseFloat(arg, 64)
			if err != nil || share <= 0 || share > 1 {
				return fmt.Errorf("fault %q: a share of the calls, above 0 and at most 1 (fail-api=0.05)", item)
			}
			w.InjectFault(Fault{Share: share, Status: 503, Message: "Service Unavailable"})
		case "shared-link":
			n, err := strconv.ParseFloat(arg, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("fault %q: how many moves the link carries at full speed, above 0 (shared-link=4)", item)
			}
			w.SetSharedLink(n)
		case "migrate-500", "migrate-409":
			status := 500
			msg := ""
			if name == "migrate-409" {
				status, msg = 409, "Cannot 'os-migrateLive' instance while it is in task_state migrating"
			}
			w.InjectFault(Fault{Method: "POST", Path: regexp.MustCompile(`^/servers/[^/]+/action$`), Status: status, Message: msg})
		case "services-503":
			w.InjectFault(Fault{Path: regexp.MustCompile(`^/os-services`), Status: 503, Message: "Service Unavailable"})
		case "no-valid-host":
			w.SetNoValidHost(true)
		case "compute-down", "boot-error", "boot-hang", "console-silent":
			found := false
			w.Update(func(hosts map[string]*Host, _ map[string]*VM) {
				h, ok := hosts[arg]
				if !ok {
					return
				}
				found = true
				switch name {
				case "compute-down":
					h.Up = false
				case "boot-error":
					h.BootError = "Failed to allocate the network(s), not rescheduling."
				case "boot-hang":
					h.BootHangs = true
				case "console-silent":
					h.ConsoleSilent = true
				}
			})
			if !found {
				return fmt.Errorf("fault %q: no compute host %q", item, arg)
			}
		case "never-converge", "fail-migration":
			vm, phase, _ := strings.Cut(arg, "@")
			if name == "fail-migration" && phase != "preparing" && phase != "running" {
				return fmt.Errorf("fault %q: the phase is preparing or running", item)
			}
			found := false
			w.Update(func(_ map[string]*Host, servers map[string]*VM) {
				for _, s := range servers {
					if s.Name == vm || s.ID == vm {
						found = true
						if name == "never-converge" {
							s.DirtyBytesPerSec = 2 * w.opts.BandwidthBytesPerSec
						} else {
							s.FailAt = phase
						}
					}
				}
			})
			if !found {
				return fmt.Errorf("fault %q: no VM %q", item, vm)
			}
		default:
			return fmt.Errorf("unknown fault %q; the faults are: %s", name, FaultSpecHelp)
		}
	}
	return nil
}
