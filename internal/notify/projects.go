package notify

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/bearer"
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
		u, err := url.Parse(cfg.Projects[id])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("[notify.projects] %s: not an http(s) URL", model.Quoted(id))
		}
		if u.User != nil {
			return nil, fmt.Errorf("[notify.projects] %s: %s carries a credential: a project's webhook is posted to with none",
				id, Shown(u))
		}
		// A tenant's URL, posted to from the operator's network: never this cloud's metadata
		// service or another link-local address, and never in clear off this machine.
		if why := unsafeHost(u); why != "" {
			return nil, fmt.Errorf("[notify.projects] %s: %s %s", id, Shown(u), why)
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

// unsafeHost says why a project's webhook may not be posted to ("": it may): a link-local,
// unspecified or multicast address (169.254.169.254 is the cloud's metadata service), or
// plain http to anything but this machine.
func unsafeHost(u *url.URL) string {
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() ||
		ip.IsMulticast()) {
		return "is a link-local, unspecified or multicast address (a cloud's metadata service lives there): refused"
	}
	if strings.EqualFold(host, "metadata.google.internal") || strings.HasSuffix(strings.ToLower(host), ".internal.") {
		return "names a metadata service: refused"
	}
	if u.Scheme == "http" && !bearer.Loopback(host) {
		return "is plain http off this machine: its notices would cross the network in clear; use https"
	}
	return ""
}

// Shown is a webhook's URL as drainctl prints it: its scheme and host, never its path or query
// (a webhook's path is often its secret).
func Shown(u *url.URL) string {
	if u == nil {
		return "(no URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
