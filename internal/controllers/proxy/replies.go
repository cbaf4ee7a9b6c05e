package proxy

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/drainctl/drainctl/internal/controllers/cloudpool"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/text"
)

// How the proxy answers: its refusals and failures as the cloudpool API's error bodies.

// refusal is a scale-down the policy does not allow.
type refusal struct{ message, detail string }

func (r *refusal) Error() string { return r.message + ": " + r.detail }

func isStatus(err error, status int) bool {
	var e *cloudpool.Error
	return errors.As(err, &e) && e.Status == status
}

// writeFailure answers with an error: a backend's own error as the backend gave it, a
// refusal with every reason, anything else as a 500 with its text.
func writeFailure(w http.ResponseWriter, err error) {
	var backend *cloudpool.Error
	var ref *refusal
	var refused *ops.RefusedError
	switch {
	case errors.As(err, &backend):
		writeError(w, backend.Status, backend.Message, backend.Detail)
	case errors.As(err, &ref):
		writeError(w, http.StatusInternalServerError, ref.message, ref.detail)
	case errors.As(err, &refused):
		msgs := make([]string, len(refused.Reasons))
		for i, r := range refused.Reasons {
			msgs[i] = text.Reason(r)
		}
		writeError(w, http.StatusInternalServerError, "the node cannot be emptied safely", strings.Join(msgs, "\n"))
	case errors.Is(err, cloudpool.ErrUnreachable):
		writeError(w, http.StatusBadGateway, "the backend cloudpool did not answer", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "scale-down failed", err.Error())
	}
}

// writeError answers in the API's error shape.
func writeError(w http.ResponseWriter, status int, message, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": message, "detail": detail}) //nolint:errcheck // the client went away
}

// readBody reads a small JSON request body, answering 400 when it cannot.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "cannot read the request body", err.Error())
		return nil, false
	}
	return body, true
}
