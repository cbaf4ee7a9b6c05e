package nova

import "encoding/json"

// novaMessage extracts the message of Nova's error bodies, which wrap it in a key named
// after the fault: {"badRequest": {"code": 400, "message": "..."}}, {"itemNotFound": ...},
// {"conflictingRequest": ...}; Keystone uses {"error": {"code", "message", "title"}}.
func novaMessage(body []byte) string {
	var faults map[string]struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &faults) == nil {
		for _, f := range faults {
			if f.Message != "" {
				return f.Message
			}
		}
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return string(body)
}
