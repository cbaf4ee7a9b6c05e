package model

import (
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration written as "30s" or "5m" in TOML.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration the way UnmarshalText reads it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads "30s", "5m", "1h30m"; a bare number is refused because its unit is a guess.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`invalid duration %q: use a number with a unit, such as "30s", "5m" or "1h"`, s)
	}
	*d = Duration(v)
	return nil
}
