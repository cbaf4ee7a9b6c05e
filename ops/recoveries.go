package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/drainctl/drainctl/model"
)

// A recovery's ledger (model.Recovery) is a record in drainctl's namespace, as its fence is:
// the one who recovers writes it, `--auto recoveries` and the TUI read it.

// RecoveryRecord is the record name of the node's recovery.
func RecoveryRecord(node string) string { return "recovery-" + node }

// SaveRecovery writes the recovery's record.
func (e *Engine) SaveRecovery(ctx context.Context, rec model.Recovery) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return e.kube.SaveRecord(ctx, RecoveryRecord(rec.Node), data)
}

// Recoveries are the recoveries recorded on the cluster, the newest first.
func (e *Engine) Recoveries(ctx context.Context) ([]model.Recovery, error) {
	recs, err := e.kube.Records(ctx, "recovery")
	if err != nil {
		return nil, err
	}
	out := make([]model.Recovery, 0, len(recs))
	for name, data := range recs {
		var r model.Recovery
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("record %s: %w", name, err)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, nil
}
