package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// rollRuns is what the campaign's JSON lines say of its nodes.
type rollRuns struct {
	done int
	// halfAt is when the campaign first said half its nodes were done, halfETA the ETA it gave
	// then, end when it last spoke: halfETA against end - halfAt is the ETA's error.
	halfAt, end time.Time
	halfETA     time.Duration
	migrating   map[string]time.Duration // node -> its migrate step's time
	returning   time.Duration            // --return-vms: the returns' migrations, summed
	movedOut    int                      // VMs moved off their nodes (their migrations completed)
	movedHome   int                      // VMs brought home (a return's migration completed)
	forced      map[string]bool          // the moves force-completed (stalled), by VM and attempt
	paced       map[string]bool          // what the pace said when it held a node's moves, each change once
	steps       map[string]time.Duration // step kind -> its time, summed over the nodes
}

// readRuns reads the NDJSON of the roll: each node's migrate-vms step, start to end.
func readRuns(r io.Reader) (rollRuns, error) {
	out := rollRuns{migrating: map[string]time.Duration{}, steps: map[string]time.Duration{}, forced: map[string]bool{}, paced: map[string]bool{}}
	started, stepStarted := map[string]time.Time{}, map[string]time.Time{}
	op := map[string]string{} // each node's latest plan: a return's migrate is no part of the floor
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type    string    `json:"type"`
			Node    string    `json:"node"`
			Step    string    `json:"step"`
			State   string    `json:"state"`
			VMID    string    `json:"vmID"`
			Source  string    `json:"source"`
			Attempt int       `json:"attempt"`
			What    string    `json:"what"`
			At      time.Time `json:"at"`
			Report  struct {
				Op     string `json:"op"`
				Result string `json:"result"`
			} `json:"report"`
			Plan struct {
				Op string `json:"op"`
			} `json:"plan"`
			Done       int           `json:"done"`
			InProgress int           `json:"inProgress"`
			Left       int           `json:"left"`
			ETA        time.Duration `json:"etaNs"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return out, fmt.Errorf("roll -o json: %v: %s", err, sc.Text())
		}
		if ev.Type == "plan" {
			op[ev.Node] = ev.Plan.Op
		}
		if ev.Type == "migration" && ev.State == "completed" {
			if op[ev.Node] == "migrate" {
				out.movedHome++
			} else {
				out.movedOut++
			}
		}
		if held, ok := strings.CutPrefix(ev.What, "moves held by the pace: "); ev.Type == "node" && ok {
			out.paced[held] = true // each run says a change once
		}
		if ev.Type == "migration" && ev.State == "force-complete" { // said again by each progress line after
			out.forced[fmt.Sprint(ev.VMID, ev.Attempt, ev.Source)] = true
		}
		if ev.Type == "step" && op[ev.Node] == "migrate" {
			key := ev.Node + " return " + ev.Step
			if ev.State == "started" {
				stepStarted[key] = ev.At
			} else if at, ok := stepStarted[key]; ok {
				out.returning += ev.At.Sub(at)
				delete(stepStarted, key)
			}
			continue
		}
		if ev.Type == "step" {
			key := ev.Node + " " + ev.Step
			if ev.State == "started" {
				stepStarted[key] = ev.At
			} else if at, ok := stepStarted[key]; ok {
				out.steps[ev.Step] += ev.At.Sub(at)
				delete(stepStarted, key)
			}
		}
		if ev.Type == "campaign" {
			out.end = ev.At
			if all := ev.Done + ev.InProgress + ev.Left; out.halfAt.IsZero() && all > 0 && 2*ev.Done >= all && ev.ETA > 0 {
				out.halfAt, out.halfETA = ev.At, ev.ETA
			}
		}
		switch {
		case ev.Type == "step" && ev.Step == "migrate-vms" && ev.State == "started":
			started[ev.Node] = ev.At
		case ev.Type == "step" && ev.Step == "migrate-vms" && !started[ev.Node].IsZero():
			out.migrating[ev.Node] += ev.At.Sub(started[ev.Node])
			delete(started, ev.Node)
		case ev.Type == "done" && ev.Report.Op == "evacuate" && ev.Report.Result == "done":
			out.done++
		}
	}
	return out, sc.Err()
}
