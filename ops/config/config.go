// Package config loads drainctl's config.toml and nova-kubernetes-drain's config.yaml into
// model.Config, with errors that say where (file:line:col) and how to fix them.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
	"github.com/drainctl/drainctl/ops/opcmd"
	"github.com/drainctl/drainctl/ops/policy"
)

// Error is a problem in a configuration file, with where it is and how to fix it.
// It prints as file:line:col: problem; hint. Line and Col are 0 when unknown.
type Error struct {
	File      string
	Line, Col int
	Problem   string
	Hint      string
	Err       error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// DefaultPath is ~/.config/drainctl/config.toml (XDG_CONFIG_HOME honoured).
func DefaultPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "drainctl", "config.toml")
}

// Load reads config.toml over the defaults. A missing file is fine when the path is the
// default one (explicit=false); a missing file that was asked for by name is an error.
func Load(path string, explicit bool) (model.Config, error) {
	cfg := model.DefaultConfig()
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			return cfg, nil
		}
		return cfg, &Error{File: path, Problem: "cannot read the configuration file: " + unwrapPathError(err),
			Hint: "check the configuration file's path", Err: err}
	}
	return Parse(path, data)
}

// Parse decodes TOML over the defaults and validates it. name is used in errors.
func Parse(name string, data []byte) (model.Config, error) {
	cfg := model.DefaultConfig()
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&cfg)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return cfg, &Error{File: name, Line: pe.Position.Line, Col: pe.Position.Col,
				Problem: tomlProblem(pe), Hint: pe.Usage, Err: err}
		}
		// Type mismatches come as plain errors: "toml: line 3 (last key "a.b"): incompatible types…".
		if m := tomlTypeErr.FindStringSubmatch(err.Error()); m != nil {
			var line int
			fmt.Sscan(m[1], &line)
			_, col := locateKey(data, toml.Key(strings.Split(m[2], ".")))
			return cfg, &Error{File: name, Line: line, Col: col, Problem: fmt.Sprintf("%s: %s", m[2], m[3]),
				Hint: "see config.toml.example for the type of each key", Err: err}
		}
		return cfg, &Error{File: name, Problem: strings.TrimPrefix(err.Error(), "toml: "), Err: err}
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		k := undecoded[0]
		line, col := locateKey(data, k)
		ce := &Error{File: name, Line: line, Col: col, Problem: fmt.Sprintf("unknown key %q", k.String())}
		if s := suggestKey(k); s != "" {
			ce.Hint = "did you mean " + s + "?"
		} else {
			ce.Hint = "see config.toml.example for every key"
		}
		return cfg, ce
	}
	err = cfg.Validate()
	if err == nil {
		_, err = policy.FromConfig(cfg) // the selectors and drain rules parse
	}
	if err == nil {
		err = checkOperatorParts(cfg)
	}
	if err != nil {
		var fe *model.FieldError
		if errors.As(err, &fe) {
			line, col := locateField(data, fe.Key)
			return cfg, &Error{File: name, Line: line, Col: col, Problem: fmt.Sprintf("%s %s", fe.Key, fe.Problem), Hint: fe.Fix, Err: err}
		}
		return cfg, &Error{File: name, Problem: err.Error(), Err: err}
	}
	return cfg, nil
}

// Warnings are what the configuration file at path holds that works but should not: a
// command with a password written out (on every process list while it runs, in a file a
// colleague may read). Each says where (file:line) and how to do without.
func Warnings(path string, cfg model.Config) []string {
	data, _ := os.ReadFile(path)
	var out []string
	for _, c := range []struct{ key, cmd string }{{"recover.fence_cmd",
		cfg.Recover.FenceCmd}, {"recover.fence_check_cmd", cfg.Recover.FenceCheckCmd}} {
		if opts := opcmd.LiteralSecrets(c.cmd); len(opts) > 0 {
			line, _ := locateField(data, c.key)
			out = append(out, fmt.Sprintf("%s:%d: %s %s", path, line, c.key, LiteralSecretWarning(opts)))
		}
	}
	return out
}

// LiteralSecretWarning says what is wrong with a command holding a written-out secret, and how
// to pass it instead.
func LiteralSecretWarning(opts []string) string {
	return fmt.Sprintf("writes a password out (%s): it is masked in drainctl's output, but on every process list while the command runs; "+
		"take it from the environment instead (\"$IPMI_PASSWORD\", ipmitool -E, fence agents' --password-script)", strings.Join(opts, ", "))
}

// locateField finds a validated key: "a.b.c", or "a.b[N].c" for the N-th [[a.b]] table.
func locateField(data []byte, key string) (line, col int) {
	m := arrayField.FindStringSubmatch(key)
	if m == nil {
		return locateKey(data, toml.Key(strings.Split(key, ".")))
	}
	var n int
	fmt.Sscan(m[2], &n)
	seen := 0
	lines := strings.Split(string(data), "\n")
	for i, raw := range lines {
		h := arrayHeader.FindStringSubmatch(raw)
		if h == nil || strings.ReplaceAll(h[1], " ", "") != m[1] {
			continue
		}
		if seen++; seen != n {
			continue
		}
		for j := i + 1; j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "["); j++ {
			t := strings.TrimLeft(lines[j], " \t")
			if eq := strings.Index(t, "="); eq > 0 && strings.Trim(strings.TrimSpace(t[:eq]), `"'`) == m[3] {
				return j + 1, len(lines[j]) - len(t) + 1
			}
		}
		return i + 1, strings.Index(raw, "[") + 1
	}
	return 0, 0
}

var (
	arrayField  = regexp.MustCompile(`^([\w.]+)\[(\d+)\]\.(\w+)$`)
	arrayHeader = regexp.MustCompile(`^\s*\[\[\s*([^\[\]]+?)\s*\]\]\s*(#.*)?$`)
)

// tomlProblem turns the decoder's message into one that names the key where it can.
func tomlProblem(pe toml.ParseError) string {
	msg := pe.Message
	if msg == "" {
		msg = pe.Error()
	}
	if k := pe.LastKey; k != "" && !strings.Contains(msg, k) {
		msg = fmt.Sprintf("%s: %s", k, msg)
	}
	return msg
}

var tomlTypeErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): (.*)$`)

var tableHeader = regexp.MustCompile(`^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$`)

// locateKey finds the line and column where key is set. The TOML decoder does not report
// positions of keys it did not decode, so this reads the lines itself: it follows [table]
// headers and matches `name =` (or a dotted `a.b =` relative to the current table).
func locateKey(data []byte, key toml.Key) (line, col int) {
	if len(key) == 0 {
		return 0, 0
	}
	table := ""
	for i, raw := range strings.Split(string(data), "\n") {
		if m := arrayHeader.FindStringSubmatch(raw); m != nil && strings.ReplaceAll(m[1], " ", "") == key.String() {
			return i + 1, strings.Index(raw, "[") + 1
		}
		if m := tableHeader.FindStringSubmatch(raw); m != nil {
			table = strings.ReplaceAll(m[1], " ", "")
			if table == key.String() {
				return i + 1, strings.Index(raw, "[") + 1
			}
			continue
		}
		trimmed := strings.TrimLeft(raw, " \t")
		eq := strings.Index(trimmed, "=")
		if eq < 0 || strings.HasPrefix(trimmed, "#") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(trimmed[:eq]), `"'`)
		full := name
		if table != "" {
			full = table + "." + name
		}
		if full == key.String() {
			return i + 1, len(raw) - len(trimmed) + 1
		}
	}
	return 0, 0
}

// suggestKey proposes the known key closest to a misspelt one in the same table.
func suggestKey(k toml.Key) string {
	known := knownKeys(reflect.TypeOf(model.Config{}), "")
	parent := strings.Join(k[:len(k)-1], ".")
	last := k[len(k)-1]
	best, bestDist := "", 3 // farther than two edits is no longer a typo
	for _, full := range known {
		p, name := "", full
		if i := strings.LastIndex(full, "."); i >= 0 {
			p, name = full[:i], full[i+1:]
		}
		if p != parent {
			continue
		}
		if d := editDistance(last, name); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// knownKeys lists every TOML key of the config struct, dotted, from the struct tags.
func knownKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("toml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		full := prefix + tag
		out = append(out, full)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(model.Duration(0)) {
			out = append(out, knownKeys(f.Type, full+".")...)
		}
	}
	sort.Strings(out)
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func unwrapPathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// legacyConfig is nova-kubernetes-drain's config.yaml.
type legacyConfig struct {
	IdentityEndpoint string `yaml:"IdentityEndpoint"`
	Username         string `yaml:"Username"`
	Password         string `yaml:"Password"`
	TenantName       string `yaml:"TenantName"`
	DomainID         string `yaml:"DomainID"`
}

// LoadLegacy reads a nova-kubernetes-drain config.yaml (-config-path) into an
// [openstack] table, so users of that tool can switch without rewriting it.
func LoadLegacy(path string) (model.OpenStackConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return model.OpenStackConfig{}, &Error{File: path, Problem: "cannot read the configuration file: " + unwrapPathError(err),
			Hint: "check the path given to -config-path", Err: err}
	}
	var lc legacyConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&lc); err != nil && !errors.Is(err, io.EOF) {
		line, problem := yamlProblem(err)
		return model.OpenStackConfig{}, &Error{File: path, Line: line, Problem: problem,
			Hint: "the keys are IdentityEndpoint, Username, Password, TenantName and DomainID", Err: err}
	}
	if lc.IdentityEndpoint == "" {
		return model.OpenStackConfig{}, &Error{File: path, Problem: "IdentityEndpoint is missing",
			Hint: `set it to the Keystone URL, e.g. IdentityEndpoint: "http://keystone-api:5000/v3/"`}
	}
	return model.OpenStackConfig{
		AuthURL:         lc.IdentityEndpoint,
		Username:        lc.Username,
		Password:        model.Secret(lc.Password),
		ProjectName:     lc.TenantName,
		UserDomainID:    lc.DomainID,
		ProjectDomainID: lc.DomainID,
	}, nil
}

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

func yamlProblem(err error) (int, string) {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		var n int
		fmt.Sscan(m[1], &n)
		return n, strings.Replace(m[2], "not found in type config.legacyConfig", "is not a known key", 1)
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

func reflectConfigType() reflect.Type { return reflect.TypeOf(model.Config{}) }

func toKey(parts []string) toml.Key { return toml.Key(parts) }

// checkOperatorParts checks, at load time, what a campaign or a recovery would otherwise
// refuse hours later: the window parses in a named zone, the fence command's {node} is bare.
func checkOperatorParts(cfg model.Config) error {
	if w := cfg.Campaign.Window; w != "" {
		if _, err := campaign.ParseWindow(w); err != nil {
			var ue *ops.UsageError
			if errors.As(err, &ue) {
				return &model.FieldError{Key: "roll.window", Problem: strings.TrimPrefix(ue.Problem, "window "), Fix: ue.Hint}
			}
			return &model.FieldError{Key: "roll.window", Problem: err.Error()}
		}
	}
	for _, c := range []struct{ key, cmd string }{{"recover.fence_cmd",
		cfg.Recover.FenceCmd}, {"recover.fence_check_cmd", cfg.Recover.FenceCheckCmd}} {
		if err := opcmd.Validate(c.cmd); c.cmd != "" && err != nil {
			return &model.FieldError{Key: c.key, Problem: err.Error()}
		}
	}
	return nil
}
