package notify

import (
	"context"
	"fmt"
	"net/url"
	"sort"

	"github.com/drainctl/drainctl/model"
)

// Projects are the owners' own webhooks ([notify.projects]: a project ID to its URL): each VM
// owner told ahead (maintenance-event) is posted to their project's, as the operator's
// webhook posts (one JSON object, in the background, bounded retries), never with the
// operator's token: a tenant's endpoint is not the operator's to authenticate to.
type Projects map[string]*Webhook

// NewProjects is the configuration's project webhooks (nil: none); a URL that is no http(s)
// URL, or carries a credential, is refused naming its project.
func NewProjects(cfg model.NotifyConfig, failed func(Notice, error)) (Projects, error) {
	if len(cfg.Projects) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(cfg.Projects))
	for id := range cfg.Projects {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the first bad one named is always the same
	out := Projects{}
	for _, id := range ids {
		if u, err := url.Parse(cfg.Projects[id]); err == nil && u.User != nil {
			return nil, fmt.Errorf("[notify.projects] %s: %s carries a credential: a project's webhook is posted to with none",
				id, u.Redacted())
		}
		noToken := func(string) string { return "" }
		w, err := New(model.NotifyConfig{Webhook: cfg.Projects[id], CAFile: cfg.CAFile}, noToken, failed)
		if err != nil {
			return nil, fmt.Errorf("[notify.projects] %s: %w", id, err)
		}
		out[id] = w
	}
	return out, nil
}

// Run posts each project's queued notices until ctx ends.
func (p Projects) Run(ctx context.Context) {
	for _, w := range p {
		go w.Run(ctx)
	}
}

// Notify queues an owner's notice for their project's webhook; a project without one is told
// nothing here (its owners read the notice in their VMs' metadata).
func (p Projects) Notify(n Notice) {
	if n.Kind == model.NoticeMaintenanceEvent {
		p[n.Project].Notify(n)
	}
}
