package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// A TUI beside the campaign (-roll-tui, #41.4): the real binary in tmux on the same API
// server and Nova, :campaign open while the campaign runs. Its keys are timed from the
// moment tmux sends them to the moment the screen shows their answer (? opens the help,
// esc comes back), idle before the campaign (the nodes screen: tmux's own share of every
// figure) and every two seconds while it runs (the campaign screen).

// tuiBeside is the TUI and what was measured of it.
type tuiBeside struct {
	s            *screen
	idle, during []time.Duration
	watchErr     error
}

// attachTUI starts the TUI (a kubeconfig of its own: the campaign's Kubernetes requests are
// counted without it) and measures its idle keys.
func attachTUI(o options, kubeconfig, cfgFile, home string, env []string) (*tuiBeside, error) {
	env = append([]string{"TERM=xterm-256color", "HOME=" + home}, env...)
	s, err := startScreen("bench-roll-tui", 160, 45, env, o.drainctl, "--kubeconfig", kubeconfig, "--config", cfgFile)
	if err != nil {
		return nil, err
	}
	t := &tuiBeside{s: s}
	if _, err := s.waitFor(s.started, 5*time.Minute, func(p, _ string) bool {
		return strings.Contains(p, "node-00000") && !strings.Contains(p, "reading pods") && !strings.Contains(p, "loading…")
	}); err != nil {
		s.close()
		return nil, err
	}
	for range 10 {
		d, err := t.keyRound(func(p string) bool { return strings.Contains(p, "node-00000") })
		if err != nil {
			s.close()
			return nil, err
		}
		t.idle = append(t.idle, d...)
	}
	return t, nil
}

// keyRound times ? (the help shows) and esc (back shows).
func (t *tuiBeside) keyRound(back func(plain string) bool) ([]time.Duration, error) {
	help, err := t.answer("?", func(p string) bool { return strings.Contains(p, "Move and select") })
	if err != nil {
		return nil, err
	}
	esc, err := t.answer("Escape", back)
	if err != nil {
		return nil, err
	}
	return []time.Duration{help, esc}, nil
}

// answer sends a key and polls the pane as fast as tmux answers until ok holds.
func (t *tuiBeside) answer(key string, ok func(plain string) bool) (time.Duration, error) {
	start := time.Now()
	if err := t.s.keys(key); err != nil {
		return 0, err
	}
	for time.Since(start) < 30*time.Second {
		if ok(t.s.text()) {
			return time.Since(start), nil
		}
	}
	return 0, fmt.Errorf("the TUI did not answer %s within 30 s; its screen:\n%s", key, t.s.text())
}

// watch opens :campaign once the campaign's record is there, then times a key round every
// two seconds until done is closed.
func (t *tuiBeside) watch(ctx context.Context, done <-chan struct{}) {
	watching := func(p string) bool { return strings.Contains(p, "run by") }
	for !watching(t.s.text()) {
		_ = t.s.keys(":campaign", "Enter")
		select {
		case <-done:
			t.watchErr = fmt.Errorf("the campaign ended before :campaign showed it; the screen:\n%s", t.s.text())
			return
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		d, err := t.keyRound(watching)
		if err != nil {
			t.watchErr = err
			return
		}
		t.during = append(t.during, d...)
	}
}

// report prints the keys' figures: median, 95th percentile and worst, idle and during.
func (t *tuiBeside) report() {
	fmt.Println()
	fmt.Println("| a key of the TUI beside the campaign (tmux send-keys to the answer on screen) | keys | median | p95 | worst |")
	fmt.Println("|---|---|---|---|---|")
	row := func(what string, ds []time.Duration) {
		if len(ds) == 0 {
			fmt.Printf("| %s | 0 | | | |\n", what)
			return
		}
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
		fmt.Printf("| %s | %d | %s | %s | %s |\n", what, len(s), ms(s[len(s)/2]), ms(s[len(s)*95/100]), ms(s[len(s)-1]))
	}
	row("idle, before the campaign (nodes screen): tmux's own share", t.idle)
	row("during the campaign, :campaign open", t.during)
	if t.watchErr != nil {
		fmt.Printf("\nthe TUI beside the campaign: %v\n", t.watchErr)
	}
}

func (t *tuiBeside) close() { t.s.close() }
