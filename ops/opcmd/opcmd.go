// Package opcmd runs an operator's command for a node (a fence command, a campaign's exec or
// gate command) the one way drainctl runs them: in a process group of its own that is killed
// whole on cancel, on timeout and once the command has exited (no ipmitool left behind to
// power a machine off after drainctl said it stopped); its output always drained, each line
// cut at MaxLine and at most MaxLines reported (the rest counted); a line saying it started
// before it runs.
package opcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Kind names a command in its lines and errors.
type Kind string

const (
	Fence      Kind = "fence command"
	FenceCheck Kind = "fence check command"
	Exec       Kind = "exec command"
	Gate       Kind = "gate command"
)

const (
	// MaxLine bounds a line of output: the rest of it is dropped, with a marker.
	MaxLine = 4 << 10
	// MaxLines bounds the lines reported: a command that prints without end (yes) floods no
	// screen, log or NDJSON stream; the rest is counted, and said once it has ended.
	MaxLines  = 200
	cutMarker = " … [line cut at 4 KiB]"
)

// Spec is one run of an operator's command.
type Spec struct {
	Kind     Kind
	Template string // a /bin/sh command line; {node} becomes the node's name, quoted
	Node     string // a Kubernetes node name (a DNS-1123 subdomain: it never starts with '-')
	Host     string
	// SystemUUID and BootID are the machine's, as its Node reports them: a fence command that
	// checks them (DRAINCTL_SYSTEM_UUID, DRAINCTL_BOOT_ID) cannot power off a wrong machine
	// that a wrong BMC name points at.
	SystemUUID, BootID string
	Timeout            time.Duration // 0: none but ctx's
}

// Validate refuses a template whose {node} sits inside quotes: drainctl quotes the name
// itself, and inside double quotes a $(…) in it would be expanded. Write {node} bare, or
// use "$DRAINCTL_NODE", and put -- before it where the command takes options.
func Validate(template string) error {
	quote := byte(0)
	for i := 0; i < len(template); i++ {
		c := template[i]
		switch {
		case quote == 0 && c == '\\', quote == '"' && c == '\\':
			i++
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0 && strings.HasPrefix(template[i:], "{node}"):
			return fmt.Errorf(
				"{node} is inside %c quotes in %q: drainctl quotes the node's name itself; write {node} bare (or \"$DRAINCTL_NODE\")",
				quote,
				Shown(template, ""),
			)
		}
	}
	return nil
}

// CheckNode refuses a node name that could be taken for an option or carry shell syntax:
// a Node's name is a DNS-1123 subdomain, so a name that is not one came from somewhere else
// (a planted record).
func CheckNode(node string) error {
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return fmt.Errorf("%q is no Kubernetes node name (%s)", node, strings.Join(errs, "; "))
	}
	return nil
}

// Expand is the command line for node: {node} replaced by the node's name, quoted.
func Expand(template, node string) string {
	return strings.ReplaceAll(template, "{node}", shellQuote(node))
}

// ErrTimedOut is a command killed at its timeout.
var ErrTimedOut = errors.New("timed out")

// Run runs the command; line gets each line of its output (cut at MaxLine) as it comes, and
// first a line saying it started. The error says how it ended, with its last line.
func Run(ctx context.Context, s Spec, line func(string)) error {
	if err := CheckNode(s.Node); err != nil {
		return fmt.Errorf("%s not run: %w", s.Kind, err)
	}
	if err := Validate(s.Template); err != nil {
		return fmt.Errorf("%s not run: %w", s.Kind, err)
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.Timeout, fmt.Errorf("%s %w after %s", s.Kind, ErrTimedOut, s.Timeout))
		defer cancel()
	}
	// Named, not shown: progress lines reach NDJSON and logs; the plan showed it, masked.
	limit := "no timeout"
	if s.Timeout > 0 {
		limit = "timeout " + s.Timeout.String()
	}
	line(fmt.Sprintf("%s started (%s)", s.Kind, limit))

	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: %w", s.Kind, err)
	}
	cmd := exec.Command("/bin/sh", "-c", Expand(s.Template, s.Node))
	cmd.Env = append(os.Environ(), "DRAINCTL_NODE="+s.Node, "DRAINCTL_HOST="+s.Host,
		"DRAINCTL_SYSTEM_UUID="+s.SystemUUID, "DRAINCTL_BOOT_ID="+s.BootID)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("%s: %w", s.Kind, err)
	}
	w.Close() // the command's copies keep the pipe open while any of its processes runs
	killGroup := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

	out := &lines{emit: line}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(out, r) // always drained: a command never blocks on a full pipe
		r.Close()
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	select {
	case err = <-exited:
	case <-ctx.Done():
		killGroup()
		<-exited
		err = context.Cause(ctx)
	}
	killGroup() // what it left running in the background goes with it
	<-drained
	out.flush()
	if ctx.Err() != nil && err == nil {
		err = context.Cause(ctx)
	}
	// The error goes where the command line must not (Events, notices, records): the command
	// is named by its kind, its last line masked.
	switch {
	case err == nil:
		return nil
	case out.last != "":
		return fmt.Errorf("%s: %w (last line: %s)", s.Kind, err, MaskLine(out.last))
	}
	return fmt.Errorf("%s: %w", s.Kind, err)
}

// lines splits output into lines, cutting long ones, reporting the first MaxLines; it keeps
// only the line being read and the last one (for the error).
type lines struct {
	emit    func(string)
	cur     []byte
	cut     bool // the current line passed MaxLine: the rest of it is dropped
	last    string
	emitted int
	dropped int
}

func (l *lines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !l.cut {
			room := MaxLine - len(l.cur)
			if len(chunk) > room {
				l.cur = append(l.cur, chunk[:room]...)
				l.cut = true
			} else {
				l.cur = append(l.cur, chunk...)
			}
		}
		if i < 0 {
			break
		}
		l.end()
		p = p[i+1:]
	}
	return n, nil
}

func (l *lines) end() {
	s := strings.TrimRight(string(l.cur), "\r")
	if l.cut {
		s += cutMarker
	}
	l.cur, l.cut = l.cur[:0], false
	l.last = s
	if l.emitted == MaxLines {
		l.dropped++
		return
	}
	l.emitted++
	l.emit(MaskLine(s))
}

func (l *lines) flush() {
	if len(l.cur) > 0 || l.cut {
		l.end()
	}
	if l.dropped > 0 {
		l.emit(fmt.Sprintf("… %d more line(s) not shown (the first %d are)", l.dropped, MaxLines))
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
