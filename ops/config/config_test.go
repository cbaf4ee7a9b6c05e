package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drainctl/drainctl/model"
)

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		desc, toml string
		want       string // the whole error message
	}{
		{"unknown key with suggestion", "refresh_interval = \"5s\"\n\n[policy]\ntaint_key = \"x\"\n    grace_perod = \"30s\"\n",
			`config.toml:5:5: unknown key "policy.grace_perod"; did you mean grace_period?`},
		{"unknown key far from any", "[kubernetes]\nwibble = 1\n",
			`config.toml:2:1: unknown key "kubernetes.wibble"; see config.toml.example for every key`},
		{"namespace not a name", "[kubernetes]\nnamespace = \"Ops_Drainctl\"\n",
			`config.toml:2:1: kubernetes.namespace is not a namespace's name (lower-case letters, digits and '-', at most 63); name the namespace drainctl's leases and records are in, or remove the key`},
		{"unknown table", "[polcy]\ngrace_period = \"1s\"\n",
			`config.toml:1:1: unknown key "polcy"; did you mean policy?`},
		{"wrong type", "[concurrency]\nevictions = \"ten\"\n",
			`config.toml:2:1: concurrency.evictions: incompatible types: TOML value has type string; destination has type integer; see config.toml.example for the type of each key`},
		{"bad duration", "[timeouts]\nmigration = \"30x\"\n",
			`config.toml:2:14: timeouts.migration: invalid duration "30x": use a number with a unit, such as "30s", "5m" or "1h"`},
		{"syntax", "[timeouts\n",
			`config.toml:2:10: expected '.' or ']' to end table name, but got '\n' instead`},
		{"range", "\n[concurrency]\nnodes = 0\n",
			`config.toml:3:1: concurrency.nodes must be at least 1, got 0; remove the key to use the default`},
		{"mapping needs label", "[mapping]\nmode = \"label\"\n",
			`config.toml: mapping.label is required when mapping.mode = "label"; name the node label that holds the compute host`},
		{"unknown mapping mode", "[mapping]\nmode = \"guess\"\n",
			`config.toml:2:1: mapping.mode unknown mode "guess"; use one of "name", "label", "annotation", "strip-domain"`},
		{"bad drain rule selector", "[policy]\n\n[[drain.order]]\nselector = \"app=a\"\norder = 1\n\n[[drain.order]]\norder = 2\nselector = \"app in ((\"\n",
			`config.toml:9:1: drain.order[2].selector bad selector "app in ((": unable to parse requirement: found '(', expected: ',', ')' or identifier; use the kubectl form, e.g. "app=db" or "tier in (db, cache)"`},
		{"drain rule without selector", "[[drain.order]]\norder = 2\n",
			`config.toml:1:1: drain.order[1].selector a rule needs a selector or a namespace; e.g. selector = "app=ingress", order = 10`},
		{"bad protected selector", "[policy]\nprotected_pods = [\"a b\"]\n",
			`config.toml:2:1: policy.protected_pods bad selector "a b": unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt; use the kubectl form, e.g. "app=db" or "tier in (db, cache)"`},
		{"unknown VM policy", "[policy.maintenance]\ndefault = \"migrate\"\nflavors = { \"m1.huge\" = \"reboot\" }\n",
			`config.toml:3:1: policy.maintenance.flavors unknown policy "reboot" for "m1.huge"; use one of migrate, stop-start, restart-in-place, stays`},
		{"canary without an image", "[return]\ncanary = true\nflavor = \"c1.tiny\"\nnetwork = \"net-1\"\n",
			`config.toml:2:1: return.canary is true but return.image is not set; set image to the ID of an image the canary boots from, or set canary = false`},
		{"canary timeout zero", "[return]\ncanary_timeout = \"0s\"\n",
			`config.toml:2:1: return.canary_timeout must be positive, got "0s"; the default is "5m"`},
		{"automatic fence naming no machine", "[recover]\nautomatic = true\nfence_cmd = \"ipmitool -H bmc-1 chassis power off\"\n",
			`config.toml:3:1: recover.fence_cmd names no machine: it must use {node}, DRAINCTL_NODE or DRAINCTL_HOST (the system UUID and boot ID are the node's own word, and do not count); e.g. "ipmitool -I lanplus -H {node}-bmc -U admin -E chassis power off"`},
		{"no node unhealthy", "[recover]\nmax_unhealthy = \"0%\"\n",
			`config.toml:2:1: recover.max_unhealthy must be at least 1 (or 1%), got "0%": with 0 one dead node would hold every recovery; e.g. "1" or "30%"`},
		{"half the nodes unhealthy", "[recover]\nmax_unhealthy = \"50%\"\n",
			`config.toml:2:1: recover.max_unhealthy must be under 50%, got "50%"; e.g. "30%"; the default is "1"`},
		{"half a domain unhealthy", "[recover]\nfailure_domain = \"rack\"\nmax_unhealthy_per_domain = \"60%\"\n",
			`config.toml:3:1: recover.max_unhealthy_per_domain must be under 50%, got "60%"; e.g. "30%"; the default is "1"`},
		{"heartbeat timeout too short", "[recover]\nheartbeat_timeout = \"2s\"\n",
			`config.toml:2:1: recover.heartbeat_timeout must be at least 20s, got "2s"; the default is "40s": the kubelet renews its ` +
				`Lease every 10s and nova-compute reports every report_interval (10s); under two periods one late beat would make a ` +
				`healthy host dead`},
		{"fence check with {node} quoted", "[recover]\nfence_check_cmd = \"ipmitool -H '{node}-bmc' power status\"\n",
			`config.toml:2:1: recover.fence_check_cmd {node} is inside ' quotes in "ipmitool -H '{node}-bmc' power status": drainctl quotes the node's name itself; write {node} bare (or "$DRAINCTL_NODE")`},
		{"recovery priority out of range", "[recover.priority]\nflavors = { \"m1.huge\" = 12 }\n",
			`config.toml:2:1: recover.priority.flavors must be 0 to 9, got 12; 9 is rebuilt first; the default is 5`},
		{"stays_for below zero", "[policy.maintenance]\nstays_for = -1\n",
			`config.toml:2:1: policy.maintenance.stays_for is -1 days; give 0 (no bound) to 3650 days`},
		{"honour neither all, none nor a list", "[policy.maintenance]\nhonour = \"some\"\n",
			`config.toml:2:11: policy.maintenance.honour: must be "all", "none" or a list of project IDs, got "some"`},
		{"refresh every nanosecond", "refresh_interval = \"1ns\"\n",
			`config.toml:1:1: refresh_interval must be at least 1s, got "1ns"; the default is "5s"`},
		{"proactive action unknown", "[proactive]\nconditions = [\"KernelDeadlock\"]\naction = \"reboot\"\n",
			`config.toml:3:1: proactive.action must be notify, quarantine or evacuate, got "reboot"; notify tells and changes nothing; quarantine cordons and disables; evacuate also empties the node`},
		{"proactive Nova signal unknown", "[proactive]\nconditions = [\"nova:slow\"]\n",
			`config.toml:2:1: proactive.conditions no Nova signal "nova:slow"; Nova's are "nova:disabled" and "nova:down"`},
		{"rate budget not a budget", "[roll]\nbudget = [\"25% every 10m\"]\n",
			`config.toml:2:1: roll.budget "25% every 10m" is not a budget: write "N per WINDOW", "P% per WINDOW" or add "per LABEL" (e.g. "25% per 10m", "1 per zone per 1h"); e.g. budget = ["25% per 10m", "1 per zone per 1h"]`},
		{"group budget not a budget", "[policy.groups]\ndb = \"one\"\n",
			`config.toml:2:1: policy.groups.db must be a count or a percentage of the group, got "one"; e.g. "1" or "25%": how many of the group's VMs may be disrupted at once`},
		{"owner lead negative", "[notify]\nowner_lead = \"-30m\"\n",
			`config.toml:2:1: notify.owner_lead must be 0 to 168h, got "-30m0s"; use a duration such as "30m", or "0s": owners not told`},
		{"reserve label not a label key", "[recover]\nreserve_label = \"failover reserve\"\n",
			`config.toml:2:1: recover.reserve_label must be a node label key under node-restriction.kubernetes.io/, got "failover reserve"; ` +
				`e.g. "node-restriction.kubernetes.io/drainctl-failover-reserve": the NodeRestriction admission plugin keeps a node's ` +
				`kubelet from setting it on itself; the nodes labelled KEY=true are the reserve`},
		{"reserve label a kubelet may set", "[recover]\nreserve_label = \"drainctl.io/failover-reserve\"\n",
			`config.toml:2:1: recover.reserve_label must be a node label key under node-restriction.kubernetes.io/, got "drainctl.io/failover-reserve"; ` +
				`e.g. "node-restriction.kubernetes.io/drainctl-failover-reserve": the NodeRestriction admission plugin keeps a node's ` +
				`kubelet from setting it on itself; the nodes labelled KEY=true are the reserve`},
		{"two password sources", "[openstack]\npassword = \"hunter2\"\npassword_file = \"/x\"\n",
			`config.toml:3:1: openstack.password_file both password and password_file are set; keep one of them`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Parse("config.toml", []byte(tc.toml))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *Error", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("\ngot  %s\nwant %s", got, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Error("the error shows the password")
			}
		})
	}
}

func TestParseConfigValues(t *testing.T) {
	cfg, err := Parse("c.toml", []byte(`
refresh_interval = "2s"
[mapping]
mode = "strip-domain"
[mapping.hosts]
"odd-node" = "compute-9"
[policy]
grace_period = "45s"
protected_pods = ["app=db"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RefreshInterval.D() != 2*time.Second || cfg.Policy.GracePeriod.D() != 45*time.Second {
		t.Errorf("durations: %v %v", cfg.RefreshInterval, cfg.Policy.GracePeriod)
	}
	if cfg.Mapping.Hosts["odd-node"] != "compute-9" || cfg.Policy.ProtectedPods[0] != "app=db" {
		t.Errorf("tables: %+v %+v", cfg.Mapping, cfg.Policy)
	}
	// Untouched keys keep their defaults.
	if cfg.Concurrency != model.DefaultConfig().Concurrency {
		t.Errorf("defaults lost: %+v", cfg.Concurrency)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.toml"), false); err != nil {
		t.Errorf("a missing default file must be fine, got %v", err)
	}
	_, err := Load(filepath.Join(t.TempDir(), "none.toml"), true)
	if err == nil || !strings.Contains(err.Error(), "cannot read the configuration file: no such file or directory; check the configuration file's path") {
		t.Errorf("a missing explicit file: got %v", err)
	}
}

// The example file must parse and must name every key, so it cannot drift from the code.
func TestConfigExampleIsComplete(t *testing.T) {
	data, err := os.ReadFile("../../config.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	uncommented := strings.NewReplacer("\n# ", "\n", "\n#", "\n").Replace("\n" + string(data))
	if _, err := Parse("config.toml.example", data); err != nil {
		t.Fatalf("example as shipped: %v", err)
	}
	for _, k := range knownKeys(reflectConfigType(), "") {
		parts := strings.Split(k, ".")
		if line, _ := locateKey([]byte(uncommented), toKey(parts)); line == 0 {
			t.Errorf("config.toml.example does not show key %q", k)
		}
	}
}

func TestLegacyConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "config.yaml")
	os.WriteFile(good, []byte("IdentityEndpoint: \"http://keystone-api:5000/v3/\"\nUsername: \"admin\"\nPassword: \"mysupersecretpassword\"\nTenantName: \"admin\"\nDomainID: \"default\"\n"), 0o600)
	o, err := LoadLegacy(good)
	if err != nil {
		t.Fatal(err)
	}
	if o.AuthURL != "http://keystone-api:5000/v3/" || o.Username != "admin" || o.ProjectName != "admin" ||
		o.UserDomainID != "default" || o.Password.Reveal() != "mysupersecretpassword" {
		t.Errorf("got %+v", o)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("IdentityEndpoint: x\nPasword: \"mysupersecretpassword\"\n"), 0o600)
	_, err = LoadLegacy(bad)
	want := bad + `:2: field Pasword is not a known key; the keys are IdentityEndpoint, Username, Password, TenantName and DomainID`
	if err == nil || err.Error() != want {
		t.Errorf("\ngot  %v\nwant %s", err, want)
	}
}

// A fence command with its password written out loads (it works), with a warning that says
// where and how to do without; one taking it from the environment loads in silence.
func TestAWrittenOutPasswordIsWarnedAtLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	os.WriteFile(path, []byte("[recover]\nnot_ready_for = \"2m\"\nfence_cmd = \"ipmitool -H {node}-bmc -U admin -P hunter2 power off\"\n"), 0o600)
	cfg, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	w := Warnings(path, cfg)
	if len(w) != 1 || !strings.Contains(w[0], path+":3: recover.fence_cmd") || !strings.Contains(w[0], "(-P)") || strings.Contains(w[0], "hunter2") {
		t.Errorf("warnings %q", w)
	}
	os.WriteFile(path, []byte("[recover]\nfence_cmd = 'ipmitool -H {node}-bmc -U admin -P \"$IPMI_PASSWORD\" power off'\n"), 0o600)
	if cfg, err = Load(path, true); err != nil || len(Warnings(path, cfg)) != 0 {
		t.Errorf("from the environment: %v, warnings %q", err, Warnings(path, cfg))
	}
}

// The bounds of every power the configuration grants, as bad input: each value is refused at
// load with its file and line, says what is wrong and how to fix it, and never echoes a value
// past a few hundred bytes (a 1 MB window, a 1 MB fence command).
func TestEveryPowerIsBoundedAtLoad(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		desc, toml, line, says string
	}{
		{"a NaN share of a rate budget", "[roll]\nbudget = [\"NaN% per 10m\"]\n", ":2:", "the share must be above 0%"},
		{"a rate budget per no label", "[roll]\nbudget = [\"1 per my rack per 1h\"]\n", ":2:", "is not a budget"},
		{"a rate budget per a bad label", "[roll]\nbudget = [\"1 per -rack- per 1h\"]\n", ":2:", "is no node label key"},
		{"a rate budget of a nanosecond", "[roll]\nbudget = [\"1 per 1ns\"]\n", ":2:", "from 1s to 720h"},
		{"a NaN reserve", "[capacity]\nreserve = \"NaN%\"\n", ":2:", "capacity.reserve must be a percentage"},
		{"a billion failures tolerated", "[capacity]\ntolerate = 1000000000\n", ":2:", "capacity.tolerate must be 0 to 100"},
		{"an owner lead of a century", "[notify]\nowner_lead = \"876000h\"\n", ":2:", "notify.owner_lead must be 0 to 168h"},
		{"a failure domain that is no label", "[recover]\nfailure_domain = \"my rack\"\n", ":2:", "recover.failure_domain must be a node label key"},
		{"a heartbeat of one period", "[recover]\nheartbeat_timeout = \"10s\"\n", ":2:", "must be at least 20s"},
		{"a megabyte window", "[roll]\nwindow = \"" + huge + "\"\n", ":2:", "roll.window is 1048576 bytes long"},
		{"a megabyte fence command", "[recover]\nfence_cmd = \"" + huge + "\"\n", ":2:", "recover.fence_cmd is 1048576 bytes long"},
		{"a proactive max_out of none", "[proactive]\nmax_out = \"0\"\n", ":2:", "proactive.max_out must be a count or a percentage of at least 1"},
		{"a NaN proactive max_out", "[proactive]\nmax_out_per_domain = \"NaN%\"\n", ":2:", "proactive.max_out_per_domain must be"},
		{"an owners' priority bound of 12", "[recover.priority]\nowner_max = 12\n", ":2:", "recover.priority.owner_max must be 0 to 9"},
		{"a reserve label its kubelet may set", "[recover]\nreserve_label = \"example.com/reserve\"\n", ":2:", "under node-restriction.kubernetes.io/"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := Parse("config.toml", []byte(tc.toml))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *Error", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "config.toml"+tc.line) || !strings.Contains(msg, tc.says) || len(msg) > 600 {
				t.Errorf("got (%d bytes) %.600s\nwant at config.toml%s, saying %q", len(msg), msg, tc.line, tc.says)
			}
		})
	}
}
