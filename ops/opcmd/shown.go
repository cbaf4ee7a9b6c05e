package opcmd

import (
	"net/url"
	"regexp"
	"strings"
)

// Secrets are never shown: a command line is printed (plans, progress lines, errors, NDJSON)
// with the values that look like credentials masked. What looks like one: the word after an
// option whose name says password, secret, token or key (and ipmitool's -P, curl's -u); the
// value of NAME=value where NAME says so; the password of a URL; the word after "Bearer" or
// "Basic". A secret passed through the environment ("$IPMI_PASSWORD", ipmitool -E) is never
// in the command line at all: docs/guide/dead-host.md says how.

const mask = "******"

var (
	secretName = regexp.MustCompile(`(?i)(pass|pwd|(^|[_-])pw($|[_-])|secret|token|key|credential|auth)`)
	// The options that take a password (ipmitool -P, fence_ipmilan/sshpass/racadm -p, curl's
	// -u/--user), given apart ("-P x") or attached ("-Px", "--user=a:b"). ssh's -p (a port)
	// is masked too: a port shown as ****** costs nothing.
	secretOpt = map[string]bool{"-P": true, "-p": true, "-u": true, "--user": true}
)

// Shown is the command line as drainctl prints it: {node} replaced (when node is given), the
// values that look like secrets masked.
func Shown(template, node string) string {
	if node != "" {
		template = Expand(template, node)
	}
	words := strings.Fields(template)
	maskNext := false
	for i, w := range words {
		switch {
		case maskNext && (strings.EqualFold(strings.Trim(w, `'"`), "bearer") || strings.EqualFold(strings.Trim(w, `'"`), "basic")):
			continue // "Authorization: Bearer x": the scheme is shown, the credential after it masked
		case maskNext:
			words[i] = mask
			maskNext = false
			continue
		case secretOpt[w], strings.HasPrefix(w, "-") && !strings.Contains(w, "=") && secretName.MatchString(w),
			strings.EqualFold(strings.Trim(w, `'"`), "bearer"), strings.EqualFold(strings.Trim(w, `'"`), "basic"),
			strings.HasSuffix(w, ":") && secretName.MatchString(w): // a header: "X-Auth-Token: …"
			maskNext = true
			continue
		case len(w) > 2 && (strings.HasPrefix(w, "-P") || strings.HasPrefix(w, "-p")) && !strings.HasPrefix(w, "--"):
			words[i] = w[:2] + mask // attached: -Phunter2
			continue
		}
		if k, _, ok := strings.Cut(w, "="); ok && (secretName.MatchString(k) || secretOpt[strings.Trim(k, `'"`)]) {
			words[i] = k + "=" + mask
			continue
		}
		if strings.Contains(w, "://") {
			words[i] = RedactURL(w)
		}
	}
	return strings.Join(words, " ")
}

// RedactURL masks the password of a URL (anywhere in s, quotes kept).
func RedactURL(s string) string {
	trimmed := strings.Trim(s, `'"`)
	start := strings.Index(trimmed, "://")
	if start < 0 {
		return s
	}
	// the scheme starts at the last non-letter before ://
	b := start
	for b > 0 && isSchemeChar(trimmed[b-1]) {
		b--
	}
	u, err := url.Parse(trimmed[b:])
	if err != nil || u.User == nil {
		return s
	}
	return strings.Replace(s, trimmed[b:], u.Redacted(), 1)
}

func isSchemeChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// MaskLine is a command's output line as drainctl passes it on (a progress line, the last
// line in an error): the same masking as a command line, as a backstop for a command that
// prints its own arguments.
func MaskLine(line string) string { return Shown(line, "") }

// LiteralSecrets names the options of a command line whose secret is written out (what Shown
// masks, unless it is taken from the environment: "$IPMI_PASSWORD"). Masking keeps it off
// drainctl's output, but not off the process list of the machine that runs it, nor out of a
// config file a colleague can read: the operator is warned when the command is loaded.
func LiteralSecrets(template string) []string {
	words, shown := strings.Fields(template), strings.Fields(Shown(template, ""))
	if len(words) != len(shown) {
		return nil
	}
	var out []string
	for i, w := range words {
		if w == shown[i] {
			continue
		}
		// What was masked: the whole word, or what follows "=" or an attached -P.
		name, value := "", w
		switch {
		case shown[i] == mask && i > 0:
			name = words[i-1]
		case strings.Contains(shown[i], "="):
			name, value, _ = strings.Cut(w, "=")
			name += "="
		case strings.HasSuffix(shown[i], mask) && len(w) > 2:
			name, value = w[:2], w[2:]
		}
		if v := strings.Trim(value, `'"`); strings.HasPrefix(v, "$") || v == "" || name == "-p" && isDigits(v) {
			continue // from the environment (nothing written out), or ssh's port
		}
		if name == "" {
			name = "a URL's password"
		}
		out = append(out, name)
	}
	return out
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
