package model

// Secret holds a credential. Every way of printing it prints a placeholder, so a Secret that
// slips into a log line, an error, a JSON document or a screen shows nothing.
type Secret string

const redacted = "[redacted]"

func (s Secret) String() string   { return redactedIfSet(s) }
func (s Secret) GoString() string { return redactedIfSet(s) }

// MarshalText keeps secrets out of JSON, TOML and YAML output.
func (s Secret) MarshalText() ([]byte, error) { return []byte(redactedIfSet(s)), nil }

// Reveal returns the secret itself, for the one place that sends it to Keystone.
func (s Secret) Reveal() string { return string(s) }

func redactedIfSet(s Secret) string {
	if s == "" {
		return ""
	}
	return redacted
}
