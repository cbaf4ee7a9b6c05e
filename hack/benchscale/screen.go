package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// screen is one terminal program in its own tmux server, measured from outside as an
// operator sees it: what the pane shows, the process's RSS and CPU time.
type screen struct {
	socket, name string
	pid          int
	started      time.Time
}

const tmuxSocket = "drainctl-benchscale"

func tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", tmuxSocket}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// startScreen runs argv in a pane of w×h with env added; the pane's process is argv's
// (env(1) execs it), so its pid is the program's.
func startScreen(name string, w, h int, env []string, argv ...string) (*screen, error) {
	_, _ = tmux("kill-session", "-t", name)
	cmd := append([]string{"new-session", "-d", "-s", name, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "env"}, env...)
	cmd = append(cmd, argv...)
	s := &screen{socket: tmuxSocket, name: name, started: time.Now()}
	var err error
	for try := 0; try < 10; try++ { // the previous tool's server may still be exiting
		if _, err = tmux(cmd...); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
		s.started = time.Now()
	}
	if err != nil {
		return nil, err
	}
	_, _ = tmux("set-option", "-t", name, "remain-on-exit", "on")
	out, err := tmux("display-message", "-p", "-t", name, "#{pane_pid}")
	if err != nil {
		return nil, err
	}
	if s.pid, err = strconv.Atoi(strings.TrimSpace(out)); err != nil {
		return nil, fmt.Errorf("pane pid %q: %w", out, err)
	}
	return s, nil
}

func (s *screen) close() { _, _ = tmux("kill-session", "-t", s.name) }

// text is the pane as plain text; styled keeps the escape sequences (a highlighted row).
func (s *screen) text() string { out, _ := tmux("capture-pane", "-p", "-t", s.name); return out }
func (s *screen) styled() string {
	out, _ := tmux("capture-pane", "-p", "-e", "-t", s.name)
	return out
}

func (s *screen) keys(keys ...string) error {
	_, err := tmux(append([]string{"send-keys", "-t", s.name}, keys...)...)
	return err
}

// waitFor polls the pane until ok says yes, and returns when it first did (from since).
func (s *screen) waitFor(since time.Time, timeout time.Duration, ok func(plain, styled string) bool) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok(s.text(), s.styled()) {
			return time.Since(since), nil
		}
		if !s.alive() {
			return 0, fmt.Errorf("%s exited; its screen:\n%s", s.name, s.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s: not seen within %s; the screen:\n%s", s.name, timeout, s.text())
}

func (s *screen) alive() bool {
	out, err := tmux("display-message", "-p", "-t", s.name, "#{pane_dead}")
	return err == nil && strings.TrimSpace(out) == "0"
}

// rss is the process's resident set, in bytes.
func (s *screen) rss() int64 { return rssOf(s.pid) }

func rssOf(pid int) int64 { return procStatus(pid, "VmRSS") }

// procStatus reads a memory figure of /proc/PID/status (VmRSS, VmHWM), in bytes.
func procStatus(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpu is the process's user+system CPU time so far.
func (s *screen) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

// lineWith returns the first line of text that contains every one of parts.
func lineWith(text string, parts ...string) (string, bool) {
	for _, l := range strings.Split(text, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return l, true
		}
	}
	return "", false
}
