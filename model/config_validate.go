package model

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FieldError says which configuration key is wrong, what is wrong with it and how to fix it.
type FieldError struct {
	Key     string
	Problem string
	Fix     string
}

func (e *FieldError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Key, e.Problem)
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}

// MinHeartbeatTimeout is two of the heartbeats' 10 s periods: a host is dead only once two
// beats in a row have not come.
const MinHeartbeatTimeout = 20 * time.Second

// maxValue bounds every string of the configuration: a command, a window, a URL. Longer is no
// such thing (a shell's argument stops at 128 KiB), and it is not echoed.
const maxValue = 4 << 10

// namespaceName is a Kubernetes namespace's name: an RFC 1123 label.
var namespaceName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// CheckNamespace says what is wrong with a namespace's name ("" is drainctl's default).
func CheckNamespace(ns string) error {
	if ns == "" || namespaceName.MatchString(ns) {
		return nil
	}
	return fmt.Errorf("is not a namespace's name (lower-case letters, digits and '-', at most 63)")
}

// Validate checks values a TOML decoder cannot: ranges and combinations.
func (c Config) Validate() error {
	if err := boundedStrings(reflect.ValueOf(c), ""); err != nil {
		return err
	}
	if err := CheckNamespace(c.Kubernetes.Namespace); err != nil {
		return &FieldError{"kubernetes.namespace", err.Error(),
			"name the namespace drainctl's leases and records are in, or remove the key"}
	}
	positive := []struct {
		key string
		v   int
	}{
		{"concurrency.evictions", c.Concurrency.Evictions},
		{"concurrency.migrations_per_source", c.Concurrency.MigrationsPerSource},
		{"concurrency.migrations_per_destination", c.Concurrency.MigrationsPerDestination},
		{"concurrency.migrations_per_cluster", c.Concurrency.MigrationsPerCluster},
		{"concurrency.nodes", c.Concurrency.Nodes},
	}
	for _, p := range positive {
		if p.v < 1 {
			return &FieldError{p.key, fmt.Sprintf("must be at least 1, got %d", p.v), "remove the key to use the default"}
		}
	}
	durations := []struct {
		key string
		v   Duration
	}{
		{"refresh_interval", c.RefreshInterval},
		{"full_refresh_interval", c.FullRefreshInterval},
		{"timeouts.api", c.Timeouts.API},
		{"timeouts.eviction", c.Timeouts.Eviction},
		{"timeouts.migration", c.Timeouts.Migration},
		{"timeouts.operation", c.Timeouts.Operation},
		{"timeouts.poll", c.Timeouts.Poll},
		{"policy.stall_after", c.Policy.StallAfter},
		{"recover.pods_gone_within", c.Recover.PodsGoneWithin},
		{"recover.fence_timeout", c.Recover.FenceTimeout},
		{"recover.storm_cooldown", c.Recover.StormCooldown},
		{"roll.gate_timeout", c.Campaign.GateTimeout},
		{"roll.exec_timeout", c.Campaign.ExecTimeout},
		{"roll.resume_within", c.Campaign.ResumeWithin},
		{"roll.keep_records", c.Campaign.KeepRecords},
	}
	for _, d := range durations {
		if d.v <= 0 {
			return &FieldError{d.key, fmt.Sprintf("must be positive, got %q", d.v), `use a duration such as "30s" or "5m"`}
		}
	}
	if c.Notify.OwnerLead < 0 || c.Notify.OwnerLead.D() > 7*24*time.Hour {
		// Longer, a notice is stale before its act (a day past its time) and the lead would
		// hold every move for weeks.
		return &FieldError{"notify.owner_lead", fmt.Sprintf("must be 0 to 168h, got %q", c.Notify.OwnerLead),
			`use a duration such as "30m", or "0s": owners not told`}
	}
	switch c.Campaign.Undrainable {
	case "quarantine", "rollback", "fail":
	default:
		return &FieldError{
			"roll.undrainable",
			fmt.Sprintf("unknown behaviour %q", c.Campaign.Undrainable),
			`use "quarantine", "rollback" or "fail"`,
		}
	}
	if c.Campaign.MigrationRateMiB <= 0 || c.Campaign.MinHeadroomPercent < 0 || c.Campaign.MinHeadroomPercent >= 100 {
		return &FieldError{"roll.migration_rate_mib", "migration_rate_mib must be positive and min_headroom_percent between 0 and 100", ""}
	}
	if c.Campaign.NodeDeadline <= 0 || c.Campaign.PDBBlockedFor < 0 {
		return &FieldError{"roll.node_deadline", "node_deadline must be positive and pdb_blocked_for not negative", `e.g. "30m" and "10m"`}
	}
	if c.Recover.NotReadyFor.D() < 30*time.Second {
		// A kubelet restart or a short partition is not a dead machine: a recovery that
		// rebuilds VMs elsewhere must not race one.
		return &FieldError{
			"recover.not_ready_for",
			fmt.Sprintf("must be at least 30s, got %q", c.Recover.NotReadyFor),
			`the default is "60s"`,
		}
	}
	if c.Recover.FenceRetries < 0 {
		return &FieldError{"recover.fence_retries", fmt.Sprintf("must not be negative, got %d", c.Recover.FenceRetries), "the default is 2"}
	}
	if c.Recover.Automatic && strings.TrimSpace(c.Recover.FenceCmd) == "" {
		return &FieldError{
			"recover.automatic",
			"needs recover.fence_cmd: an automatic recovery proves the machine off by the fence command alone",
			`set fence_cmd (e.g. "ipmitool -I lanplus -H {node}-bmc -U admin -E chassis power off"), or leave automatic = false`,
		}
	}
	if c.Recover.Automatic && !namesTheMachine(c.Recover.FenceCmd) {
		// A command that names no machine powers off whatever it was written for: the same
		// one for every dead node, or a wrong one.
		return &FieldError{
			"recover.fence_cmd",
			"names no machine: it must use {node}, DRAINCTL_NODE or DRAINCTL_HOST " +
				"(the system UUID and boot ID are the node's own word, and do not count)",
			`e.g. "ipmitool -I lanplus -H {node}-bmc -U admin -E chassis power off"`,
		}
	}
	for _, l := range []struct{ key, v string }{{"recover.max_unhealthy",
		c.Recover.MaxUnhealthy}, {"recover.max_unhealthy_per_domain", c.Recover.MaxUnhealthyPerDomain}} {
		m, share := strings.CutSuffix(strings.TrimSpace(l.v), "%")
		if m == "" || strings.Trim(m, "0123456789") != "" {
			return &FieldError{l.key, fmt.Sprintf("must be a count or a percentage, got %q", l.v), `e.g. "1" or "30%"`}
		}
		if n, _ := strconv.Atoi(m); n == 0 {
			return &FieldError{
				l.key,
				fmt.Sprintf("must be at least 1 (or 1%%), got %q: with 0 one dead node would hold every recovery", l.v),
				`e.g. "1" or "30%"`,
			}
		}
		if pct, _ := strconv.Atoi(m); share && pct >= 50 {
			// Half the nodes unhealthy is a partition, not dead machines: fencing them would
			// power off the half that still serves.
			return &FieldError{l.key, fmt.Sprintf("must be under 50%%, got %q", l.v), `e.g. "30%"; the default is "1"`}
		}
	}
	for _, raw := range c.Campaign.Budget {
		if _, err := ParseRateBudget(raw); err != nil {
			return &FieldError{"roll.budget", err.Error(), `e.g. budget = ["25% per 10m", "1 per zone per 1h"]`}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Policy.Groups)) {
		if v := c.Policy.Groups[name]; !ValidBudget(v) {
			return &FieldError{"policy.groups." + name, fmt.Sprintf("must be a count or a percentage of the group, got %q", v),
				`e.g. "1" or "25%": how many of the group's VMs may be disrupted at once`}
		}
	}
	if l := c.Recover.ReserveLabel; l != "" && (!labelKey.MatchString(l) || !strings.HasPrefix(l, KubeletCannotLabel)) {
		// A node's kubelet may set any other label on its own Node, and so make itself the
		// reserve: the next dead host's VMs would go to the machine that asked for them.
		return &FieldError{"recover.reserve_label", fmt.Sprintf("must be a node label key under %s, got %s", KubeletCannotLabel,
			Quoted(l)), `e.g. "` + KubeletCannotLabel + `drainctl-failover-reserve": the NodeRestriction admission plugin ` +
			`keeps a node's kubelet from setting it on itself; the nodes labelled KEY=true are the reserve`}
	}
	if err := c.Recover.Priority.validate(); err != nil {
		return err
	}
	if d := c.Recover.HeartbeatTimeout.D(); d < MinHeartbeatTimeout {
		// One late renewal must never make a healthy host dead: two of the heartbeats'
		// periods missed in a row.
		return &FieldError{"recover.heartbeat_timeout", fmt.Sprintf("must be at least %s, got %q", MinHeartbeatTimeout,
			c.Recover.HeartbeatTimeout), `the default is "40s": the kubelet renews its Lease every 10s and nova-compute ` +
			`reports every report_interval (10s); under two periods one late beat would make a healthy host dead`}
	}
	if d := c.Recover.FailureDomain; d != "" && !labelKey.MatchString(d) {
		return &FieldError{"recover.failure_domain", fmt.Sprintf("must be a node label key, got %s", Quoted(d)),
			`e.g. "topology.kubernetes.io/zone"`}
	}
	if c.RefreshInterval.D() < time.Second {
		// A Nova read every nanosecond is a denial of service on one's own cloud.
		return &FieldError{"refresh_interval", fmt.Sprintf("must be at least 1s, got %q", c.RefreshInterval), `the default is "5s"`}
	}
	if c.Timeouts.Poll.D() < 100*time.Millisecond {
		return &FieldError{
			"timeouts.poll",
			fmt.Sprintf("must be at least 100ms, got %q", c.Timeouts.Poll),
			`the default is "2s"; a shorter poll only loads Nova`,
		}
	}
	if c.Policy.GracePeriod < 0 {
		return &FieldError{"policy.grace_period", "must not be negative", `leave it empty to keep each pod's own grace period`}
	}
	if c.CloudPool.MinSize < 0 || c.CloudPool.MaxSize < 0 {
		return &FieldError{"cloudpool.min_size", "min_size and max_size must not be negative", "0 leaves max_size open"}
	}
	if c.CloudPool.MaxScaleDown < 0 || c.CloudPool.MaxScaleDownPerHour < 0 || c.CloudPool.MaxScaleDown > 100 ||
		c.CloudPool.MaxScaleDownPerHour > 1000 {
		return &FieldError{"cloudpool.max_scale_down", "max_scale_down must be 0 to 100 and max_scale_down_per_hour 0 to 1000",
			"0 takes the defaults: 1 node a request, 4 an hour"}
	}
	if c.CloudPool.MaxSize > 0 && c.CloudPool.MaxSize < c.CloudPool.MinSize {
		return &FieldError{"cloudpool.max_size", fmt.Sprintf("%d is below min_size %d", c.CloudPool.MaxSize, c.CloudPool.MinSize), ""}
	}
	if c.Kubernetes.QPS < 0 || c.Kubernetes.Burst < 0 {
		return &FieldError{"kubernetes.qps", "qps and burst must not be negative", ""}
	}
	switch c.Policy.OnStall {
	case "wait", "force-complete", "abort":
	default:
		return &FieldError{
			"policy.on_stall",
			fmt.Sprintf("unknown escalation %q", c.Policy.OnStall),
			`use "wait", "force-complete" or "abort"`,
		}
	}
	if sd := c.ScaleDown; sd.PodCost < 0 || sd.VMGiBCost < 0 || sd.CPUPointCost < 0 || sd.CPUAllocationRatio <= 0 {
		return &FieldError{"scale_down", "costs must not be negative and cpu_allocation_ratio must be positive", ""}
	}
	if err := c.Policy.Maintenance.validate(); err != nil {
		return err
	}
	if err := c.Return.validate(); err != nil {
		return err
	}
	if err := c.Proactive.validate(); err != nil {
		return err
	}
	if err := c.Capacity.validate(); err != nil {
		return err
	}
	if c.Policy.MigrationAttempts < 1 {
		return &FieldError{"policy.migration_attempts", fmt.Sprintf("must be at least 1, got %d", c.Policy.MigrationAttempts), ""}
	}
	if c.Policy.TaintKey == "" {
		return &FieldError{"policy.taint_key", "must not be empty", `the default is "drainctl.io/maintenance"`}
	}
	switch c.Mapping.Mode {
	case MapByName, MapByStripDomain:
	case MapByLabel:
		if c.Mapping.Label == "" {
			return &FieldError{
				"mapping.label",
				`is required when mapping.mode = "label"`,
				"name the node label that holds the compute host",
			}
		}
	case MapByAnnotation:
		if c.Mapping.Annotation == "" {
			return &FieldError{
				"mapping.annotation",
				`is required when mapping.mode = "annotation"`,
				"name the node annotation that holds the compute host",
			}
		}
	default:
		return &FieldError{"mapping.mode", fmt.Sprintf("unknown mode %q", c.Mapping.Mode),
			`use one of "name", "label", "annotation", "strip-domain"`}
	}
	o := c.OpenStack
	if o.Password != "" && o.PasswordFile != "" {
		return &FieldError{"openstack.password_file", "both password and password_file are set", "keep one of them"}
	}
	if o.ApplicationCredentialSecret != "" && o.ApplicationCredentialSecretFile != "" {
		return &FieldError{"openstack.application_credential_secret_file",
			"both application_credential_secret and application_credential_secret_file are set", "keep one of them"}
	}
	if o.Interface != "" {
		switch strings.ToLower(o.Interface) {
		case "public", "internal", "admin", "publicurl", "internalurl", "adminurl":
		default:
			return &FieldError{
				"openstack.interface",
				fmt.Sprintf("unknown interface %q", o.Interface),
				`use "public", "internal" or "admin"`,
			}
		}
	}
	return nil
}

// labelKey is a Kubernetes label key: an optional DNS prefix and a name of up to 63
// characters, alphanumeric at both ends.
var labelKey = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)

// boundedStrings refuses a string of the configuration longer than maxValue, naming its key.
func boundedStrings(v reflect.Value, key string) error {
	switch v.Kind() {
	case reflect.String:
		if n := v.Len(); n > maxValue {
			return &FieldError{key, fmt.Sprintf("is %d bytes long: no value here is longer than %d", n, maxValue),
				"check the file: a value was pasted whole, or one quote is not closed"}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if err := boundedStrings(v.Field(i), strings.TrimPrefix(key+"."+cmp.Or(name, f.Name), ".")); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if err := boundedStrings(v.Index(i), key); err != nil {
				return err
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			name := fmt.Sprint(k.Interface())
			if len(name) > 64 {
				name = name[:64] + "…"
			}
			if err := boundedStrings(v.MapIndex(k), key+"."+name); err != nil {
				return err
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return boundedStrings(v.Elem(), key)
		}
	}
	return nil
}
