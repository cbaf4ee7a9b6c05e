package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
)

// Health gates (kured's shape): before each node of a campaign starts, the operator's gate
// command must exit 0 and no alert matching --gate-alerts may fire in Prometheus. While one
// does not hold, no new node starts (the nodes in flight go on), the campaign says why, and
// it checks again until it holds.

// GateOptions are a campaign's health gates.
type GateOptions struct {
	Cmd        string         // a shell command, {node} replaced; must exit 0
	Prometheus string         // Prometheus' base URL; its /api/v1/alerts is read
	Alerts     *regexp.Regexp // alert names that hold the campaign while they fire (nil: any)
}

// gateOpen waits until every gate holds for node; false when ctx ended or the campaign stops.
func (r *Roll) gateOpen(ctx context.Context, node string) bool {
	g := r.o.Gates
	if g.Cmd == "" && g.Prometheus == "" {
		return true
	}
	said := ""
	for {
		why := r.gateClosed(ctx, node)
		if why == "" {
			if said != "" {
				r.note(node, model.PhasePending, "gates open: starting")
			}
			return true
		}
		if why != said {
			r.note(node, model.PhasePending, "waiting: "+why)
			said = why
		}
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if stopping != nil || !sleep(ctx, max(r.e.o.Poll*5, 250*time.Millisecond)) {
			return false
		}
	}
}

// gateClosed says why a gate does not hold now ("" when every one does).
func (r *Roll) gateClosed(ctx context.Context, node string) string {
	g := r.o.Gates
	if g.Cmd != "" {
		line := strings.ReplaceAll(g.Cmd, "{node}", shellQuote(node))
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
		cmd.Env = append(os.Environ(), "DRAINCTL_NODE="+node)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			last := strings.TrimSpace(string(out))
			if i := strings.LastIndexByte(last, '\n'); i >= 0 {
				last = last[i+1:]
			}
			if last != "" {
				return fmt.Sprintf("gate command %q: %v (%s)", line, err, last)
			}
			return fmt.Sprintf("gate command %q: %v", line, err)
		}
	}
	if g.Prometheus != "" {
		firing, err := firingAlerts(ctx, g.Prometheus, g.Alerts)
		switch {
		case err != nil: // a gate that cannot be read is closed: the fleet's health is unknown
			return "Prometheus gate: " + err.Error()
		case len(firing) > 0:
			return "alert firing: " + strings.Join(firing, ", ")
		}
	}
	return ""
}

// firingAlerts reads Prometheus' alerts (GET /api/v1/alerts) and returns the names of those
// firing that match re.
func firingAlerts(ctx context.Context, base string, re *regexp.Regexp) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(buf.Bytes(), &body); err != nil || body.Status != "success" {
		return nil, fmt.Errorf("GET %s: not a Prometheus alerts answer", req.URL)
	}
	var out []string
	for _, a := range body.Data.Alerts {
		name := a.Labels["alertname"]
		if a.State == "firing" && (re == nil || re.MatchString(name)) {
			out = append(out, name)
		}
	}
	return out, nil
}
