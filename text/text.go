// Package text formats model values for people (sizes, counts, node states) and keeps the
// cluster's text from driving a terminal or a shell: Safe escapes it for a screen, ShellWord
// quotes it for a command line. Both the TUI and the plain printer use it, so a node reads
// the same on the screen and in a log.
package text

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
)

// Tenths is v to a tenth, without trailing zeros: "16", "3.2".
func Tenths(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// Bytes formats a byte count with a binary unit: 512M, 1.5G, 2.0T.
func Bytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%dB", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit && exp < 4; n /= unit {
		div *= unit
		exp++
	}
	v := float64(b) / float64(div)
	suffix := "KMGTP"[exp : exp+1]
	if v >= 100 || v == float64(int64(v)) {
		return fmt.Sprintf("%.0f%s", v, suffix)
	}
	return fmt.Sprintf("%.1f%s", v, suffix)
}

// Rate formats bytes per second.
func Rate(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	units := []string{"B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"}
	i := 0
	for bps >= 1023.5 && i < len(units)-1 { // one that would print as 1024 is 1.0 of the next unit
		bps /= 1024
		i++
	}
	if bps < 100 && i > 0 {
		return fmt.Sprintf("%.1f %s", bps, units[i])
	}
	return fmt.Sprintf("%.0f %s", bps, units[i])
}

// MigrationRate formats a migration's copy rate in MiB/s always: a rate that crosses
// 1 GiB/s and back keeps its unit, so the column reads as one series.
func MigrationRate(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	mib := bps / (1 << 20)
	if mib < 10 {
		return fmt.Sprintf("%.1f MiB/s", mib)
	}
	return fmt.Sprintf("%.0f MiB/s", mib)
}

// CopyETA is a live copy's ETA with the rate it is counted from (how fast its remaining
// memory falls, in rate's format): "eta 2s at 1.0 GiB/s"; "eta -" before a rate is measured
// (one sample), "eta - (not falling)" while remaining grows.
func CopyETA(eta time.Duration, converge float64, rate func(float64) string) string {
	switch {
	case converge > 0:
		return "eta " + Duration(eta) + " at " + rate(converge)
	case converge < 0:
		return "eta - (not falling)"
	}
	return "eta -"
}

// Duration formats a duration for an ETA column: 45s, 3m20s, 1h05m.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// Time is a record's moment as the ledgers show it ("" for none yet).
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05")
}

// MigrationID is Nova's migration record as `openstack server migration list` names it ("" for
// none known).
func MigrationID(id int64) string {
	if id == 0 {
		return ""
	}
	return fmt.Sprint(id)
}

// RecoveryPause says who holds automatic recovery, since when and why.
func RecoveryPause(p model.RecoveryPause) string {
	return fmt.Sprintf("automatic recovery is paused by %s since %s: %s", p.By, Time(p.At), p.Reason)
}

// RecoveryHold is what holds automatic recovery, as a person reads it.
func RecoveryHold(h model.RecoveryHold) string {
	s := "automatic recovery held: " + h.Why
	if h.Node != "" {
		s = fmt.Sprintf("automatic recovery of %s held: %s", h.Node, h.Why)
	}
	if !h.Since.IsZero() {
		s += " (since " + Time(h.Since)
		if !h.Until.IsZero() {
			s += ", until " + Time(h.Until)
		}
		s += ")"
	}
	return s
}

// Roles lists a node's roles, or "-" (or "nova" for a compute host with no Kubernetes node).
func Roles(n model.Node) string {
	if n.Kube == nil {
		return "-"
	}
	if len(n.Kube.Roles) == 0 {
		return "<none>"
	}
	return strings.Join(n.Kube.Roles, ",")
}

// KubeState is the Kubernetes status in kubectl's words: Ready, NotReady, with
// SchedulingDisabled when cordoned.
func KubeState(n model.Node) string {
	if n.Kube == nil {
		return "no node"
	}
	s := "Ready"
	if !n.Kube.Ready {
		s = "NotReady"
	}
	if !n.Kube.Schedulable {
		s += ",SchedulingDisabled"
	}
	return s
}

// Compute is the nova-compute state: enabled/up, disabled/down, "-" for none, "n/a"
// when Nova is not configured.
func Compute(n model.Node, novaConfigured bool) string {
	switch {
	case !novaConfigured:
		return "n/a"
	case n.Compute == nil:
		return "-"
	}
	s := "enabled"
	if !n.Compute.Enabled {
		s = "disabled"
	}
	if n.Compute.ForcedDown {
		return s + "/forced-down"
	}
	if n.Compute.Up {
		return s + "/up"
	}
	return s + "/down"
}

// VCPU is the host's vCPUs used/capacity (with the allocation ratio, from Placement when it
// answers).
func VCPU(n model.Node) string {
	h := n.Hypervisor
	switch {
	case h == nil:
		return "-"
	case h.Capacity != nil:
		return fmt.Sprintf("%d/%.0f", h.Capacity.VCPU.Used, h.Capacity.VCPU.Capacity)
	case !h.CapacityKnown:
		return "?"
	}
	return fmt.Sprintf("%d/%d", h.VCPUsUsed, h.VCPUs)
}

// RAM is the host's memory used/capacity.
func RAM(n model.Node) string {
	h := n.Hypervisor
	switch {
	case h == nil:
		return "-"
	case h.Capacity != nil:
		return Bytes(h.Capacity.MemoryMB.Used<<20) + "/" + Bytes(int64(h.Capacity.MemoryMB.Capacity)<<20)
	case !h.CapacityKnown:
		return "?"
	}
	return Bytes(h.MemoryMBUsed<<20) + "/" + Bytes(h.MemoryMB<<20)
}

// VMs is the VM count, "-" where there is no hypervisor.
func VMs(n model.Node, novaConfigured bool) string {
	if !novaConfigured {
		return "n/a"
	}
	if n.Compute == nil && n.Hypervisor == nil && len(n.VMs) == 0 {
		return "-"
	}
	return fmt.Sprint(len(n.VMs))
}

// Pods is the count of pods bound to the node that still run.
func Pods(n model.Node) string {
	if n.Kube == nil {
		return "-"
	}
	running := 0
	for _, p := range n.Pods {
		if !p.Finished() {
			running++
		}
	}
	return fmt.Sprint(running)
}

// Forecast says what a campaign will cost, in one line.
func Forecast(f model.Forecast) string {
	lines := ForecastLines(f)
	out := lines[0]
	for _, l := range lines[1:] {
		out += "; " + l
	}
	return out
}

// ForecastLines is the forecast in short lines (a screen's): the work and its time, the
// fleet's least free memory, a refusal.
func ForecastLines(f model.Forecast) []string {
	var mb int64
	pods := 0
	for _, n := range f.Nodes {
		if n.Skip { // left untouched: nothing of it moves
			continue
		}
		mb += n.VMMemoryMB
		pods += n.Pods
	}
	lines := []string{Sprintf("forecast: %s of VM memory and %d pod(s) to move; about %s of migrations at %.0f MiB/s (%s)",
		Bytes(mb<<20), pods, Duration(f.Total), f.RateMiBps, f.RateSource)}
	if f.MinFreeAt != "" {
		lines = append(
			lines,
			Sprintf(
				"the fleet's free memory is lowest while %s is out: %s (%.0f%%)",
				f.MinFreeAt,
				Bytes(max(0, f.MinFreeMB)<<20),
				f.MinFreePercent,
			),
		)
	}
	switch k := f.RoomOutAtOnce; {
	case k == nil:
	case *k == 0:
		lines = append(lines, "FAILOVER ROOM: one node out alone takes the room for the next host failure; each node's check refuses it")
	case *k > f.Parallel:
		lines = append(lines, Sprintf("the room for the next host failure would hold with up to %d node(s) out at once; it runs %d",
			*k, f.Parallel))
	default: // the room is what bounds it
		lines = append(lines, Sprintf("the room for the next host failure holds with %d node(s) out at once: it runs no more", *k))
	}
	for _, b := range f.RateFloors {
		lines = append(lines, Sprintf("rate budget %q: the campaign takes at least %s", b.Budget, Duration(b.Least)))
	}
	for _, g := range f.GroupFloors {
		lines = append(lines,
			Sprintf("%s: %d member(s) on these nodes, %d at once: at least %s", g.Group, g.Members, g.Max, Duration(g.Least)))
	}
	if f.Short != "" {
		lines = append(lines, Sprintf("REFUSED: below the headroom while %s is out", f.Short))
	}
	return lines
}

// ForecastError is the forecast held against the nodes done: "2 node(s) done in 1m02s,
// forecast 40s (+55%)"; "" before the first.
func ForecastError(c model.Campaign) string {
	forecast, took, n := c.ForecastError()
	if n == 0 {
		return ""
	}
	return Sprintf("%d node(s) done in %s, forecast %s (%s; a node's time counts its pods and checks too)",
		n, Duration(took), Duration(forecast), ForecastOff(forecast, took))
}

// ForecastOff is how far what was taken is off its forecast: "+55%".
func ForecastOff(forecast, took time.Duration) string {
	return Sprintf("%+.0f%%", 100*(took.Seconds()-forecast.Seconds())/forecast.Seconds())
}

// NodeForecast is one node's share: "2 VM(s) (10G), 3 pod(s), ~20s".
func NodeForecast(n model.NodeForecast) string {
	return Sprintf("%d VM(s) (%s), %d pod(s), ~%s", n.VMs, Bytes(n.VMMemoryMB<<20), n.Pods, Duration(n.Expected))
}

// flags are the overrides as the command line names them.
var flags = map[model.Override]string{
	model.OverrideForce:              "--force",
	model.OverrideDeleteEmptyDirData: "--delete-emptydir-data",
	model.OverrideDisableEviction:    "--disable-eviction",
	model.OverrideIgnoreDaemonSets:   "--ignore-daemonsets",
	model.OverrideAllowLastNode:      "--allow-last-node",
	model.OverrideAllowControlPlane:  "--allow-control-plane",
	model.OverrideColdMigrateRunning: "--cold-migrate-running",
	model.OverrideFenced:             "--fence-cmd or --confirm-fenced",
	model.OverrideConfirmFenced:      "--confirm-fenced",
	model.OverrideFewerAtOnce:        "fewer nodes at once (--parallel), or [roll] min_headroom_percent",
	model.OverrideAcceptDiskLoss:     "--accept-disk-loss",
	model.OverrideIgnoreFailoverRoom: "--ignore-failover-room",
}

// Flag is the reason's override as the command line gives it ("" without one).
func Flag(r model.Reason) string {
	switch r.Override {
	case "":
		return ""
	case model.OverrideSkipVM:
		// A tenant chose the VM's name: it is quoted as a shell word, and the ID preferred.
		return "--skip-vm " + ShellWord(firstNonEmpty(r.ObjectID, r.Object))
	case model.OverrideVMPolicy:
		return "--override-vm-policy " + ShellWord(firstNonEmpty(r.ObjectID, r.Object))
	}
	if f, ok := flags[r.Override]; ok {
		return f
	}
	return string(r.Override)
}

// GivenFlags are the overrides given as the command line gives them, each value a shell word.
func GivenFlags(given []model.Given) []string {
	out := make([]string, 0, len(given))
	for _, g := range given {
		out = append(out, Flag(model.Reason{Override: g.Override, Object: g.Object}))
	}
	return out
}

// Flags are every flag that lifts the reason: its own (Flag), and for a VM whose own
// maintenance policy blocks, the named override that moves it anyway.
func Flags(r model.Reason) []string {
	f := Flag(r)
	if f == "" {
		return nil
	}
	out := []string{f}
	if r.Severity == model.Blocks && (r.Code == model.VMAsksToStay || r.Code == model.VMPolicyUnknown) {
		out = append(out, Flag(model.Reason{Override: model.OverrideVMPolicy, Object: r.Object, ObjectID: r.ObjectID}))
	}
	return out
}

// Reason is a reason with the flag that lifts it, as the command line and the TUI show it,
// or the flag given that makes it so (a loss: "(--force)").
func Reason(r model.Reason) string {
	if f := Flag(r); f != "" {
		return r.Text() + " (use " + f + " to override)"
	}
	if f := By(r); f != "" {
		return r.Text() + " (" + f + ")"
	}
	return r.Text()
}

// By is the flag given that makes the reason so (--force for a loss, --skip-vm ID for a VM
// left), or "".
func By(r model.Reason) string {
	return Flag(model.Reason{Override: r.By, Object: r.Object, ObjectID: r.ObjectID})
}

// ShellWord quotes s for a POSIX shell when it holds anything but letters, digits and
// -._/:@%+= (a value printed in a command to paste: cluster text is untrusted).
func ShellWord(s string) string {
	if s != "" && !strings.HasPrefix(s, "-") &&
		strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._/:@%+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Step is a plan's step as a line: "1. [ ] cordon  unschedulable + taint …". A step the
// cluster already shows done is marked "-" and says so: nothing has run yet, so nothing in
// a plan is ticked.
func Step(i int, s model.Step) string {
	if s.Done {
		return Sprintf("%d. [-] %-16s %s (nothing to do)", i+1, s.Kind, s.Detail)
	}
	return Sprintf("%d. [ ] %-16s %s", i+1, s.Kind, s.Detail)
}

// VMOwnWord is what a plan says of a VM beyond how it moves: its lock (kept through an admin's
// move) and its maintenance policy when not the default, with where that comes from
// ("locked · policy stop-start (its metadata drainctl:maintenance)"); "" when neither. Its
// owner's word is cluster text: escaped.
func VMOwnWord(vm model.VM) string {
	var parts []string
	if vm.Locked {
		parts = append(parts, "locked")
	}
	if vm.Policy != "" && vm.PolicyFrom != "" {
		parts = append(parts, Sprintf("policy %s (%s)", string(vm.Policy), vm.PolicyFrom))
	}
	return strings.Join(parts, " · ")
}
