package sim

import (
	"strings"
	"time"
)

// action is an instance action (os-instance-actions) with its events.
type action struct {
	Action    string
	RequestID string
	Start     time.Time
	Updated   time.Time
	Message   string // "Error" on failure, else empty (null)
	Events    []actionEvent
}

type actionEvent struct {
	Event   string
	Start   time.Time
	Finish  time.Time
	Result  string // "Success" or "Error"; empty while running
	Details string
	Host    string
}

func (w *World) recordAction(s *VM, name, requestID string, at time.Time) {
	w.recordNamedAction(s, name, "conductor_live_migrate_instance", requestID, at)
}

// recordNamedAction starts an action whose first event is the conductor's event.
func (w *World) recordNamedAction(s *VM, name, event, requestID string, at time.Time) {
	a := &action{Action: name, RequestID: requestID, Start: at, Updated: at}
	if event != "" { // lock and unlock have none
		a.Events = []actionEvent{{Event: event, Start: at, Host: "controller"}}
	}
	w.actions[s.ID] = append(w.actions[s.ID], a)
}

// lastAction is the server's newest instance action.
func (w *World) lastAction(s *VM) *action {
	acts := w.actions[s.ID]
	return acts[len(acts)-1]
}

// finishAction closes the action; failure is "event\x00details".
func (w *World) finishAction(s *VM, requestID string, at time.Time, failure string) {
	for _, a := range w.actions[s.ID] {
		if a.RequestID != requestID {
			continue
		}
		a.Updated = at
		for i := range a.Events {
			if a.Events[i].Result == "" {
				a.Events[i].Finish, a.Events[i].Result = at, "Success"
			}
		}
		if failure != "" {
			event, details, _ := strings.Cut(failure, "\x00")
			a.Message = "Error"
			if len(a.Events) > 0 && event == a.Events[0].Event {
				a.Events[0].Result, a.Events[0].Details = "Error", details
			} else {
				a.Events = append(a.Events, actionEvent{Event: event, Start: at, Finish: at, Result: "Error", Details: details,
					Host: s.Host})
			}
		}
	}
}
