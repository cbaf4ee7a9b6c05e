package text

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Safe makes text from the cluster (VM and pod names, Nova's messages, reasons anyone can
// write) harmless on a terminal: every control character, ESC (so every CSI and OSC
// sequence, terminal titles and OSC 8 links included), DEL, the C1 controls, invalid UTF-8
// and the bidirectional and line-separator format characters are shown escaped (\x1b,
// \u202e) instead of being obeyed. Newlines and tabs are escaped too: one value is one line.
// Printable text is returned as it is, without copying, so widths measured afterwards are
// the widths on screen. Every view passes cluster text through here before it formats it.
func Safe(s string) string {
	i := unsafeAt(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unsafeAt is the index of the first byte Safe must escape, or -1.
func unsafeAt(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unsafeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

// unsafeRune: C1 controls, and the format characters that reorder or break what follows.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1, including the 8-bit CSI (0x9b) and OSC (0x9d)
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // bidi marks
		return true
	case r >= 0x202a && r <= 0x202e: // bidi embeddings and overrides
		return true
	case r >= 0x2066 && r <= 0x2069: // bidi isolates
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// SafeErr is an error's message, made Safe: errors quote names and Nova's words.
func SafeErr(err error) string {
	if err == nil {
		return ""
	}
	return Safe(err.Error())
}

// Sprintf is fmt.Sprintf with every string, error and Stringer argument made Safe: the
// format is ours (its newlines and tabs stay), the values are the cluster's.
func Sprintf(format string, args ...any) string { return fmt.Sprintf(format, safeArgs(args)...) }

// Fprintf is fmt.Fprintf with the arguments made Safe, as Sprintf.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, safeArgs(args)...)
}

// Fprintln is fmt.Fprintln with the arguments made Safe.
func Fprintln(w io.Writer, args ...any) (int, error) { return fmt.Fprintln(w, safeArgs(args)...) }

func safeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = Safe(v)
		case error:
			out[i] = SafeErr(v)
		case fmt.Stringer:
			out[i] = Safe(v.String())
		default:
			// Named string types (a Nova status, a step state) are text from outside too.
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
				out[i] = Safe(rv.String())
			} else {
				out[i] = a
			}
		}
	}
	return out
}
