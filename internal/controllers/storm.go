package controllers

// The storm guard: while more compute nodes are unhealthy than [recover] max_unhealthy (in
// the cluster, or in one failure domain), nothing is fenced, and for storm_cooldown after the
// storm ended. Its state is a record on the cluster, so a controller that restarts, or a new
// leader, keeps it.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drainctl/drainctl/model"
)

// stormOf says why the storm guard holds every automatic recovery ("": it does not): more
// compute nodes unhealthy than [recover] max_unhealthy, or more of one failure domain (a
// rack, a zone: [recover] failure_domain) than max_unhealthy_per_domain.
func stormOf(cfg model.RecoverConfig, compute, unhealthy []model.Node) string {
	names := func(ns []model.Node) string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = n.Name
		}
		return strings.Join(out, ", ")
	}
	if limit := cfg.UnhealthyLimit(len(compute)); len(unhealthy) > limit {
		return fmt.Sprintf(
			"%d of %d compute nodes unhealthy (%s), more than max_unhealthy (%d)",
			len(unhealthy),
			len(compute),
			names(unhealthy),
			limit,
		)
	}
	if cfg.FailureDomain == "" {
		return ""
	}
	size, sick := map[string]int{}, map[string][]model.Node{}
	for _, n := range compute {
		size[n.Kube.Labels[cfg.FailureDomain]]++
	}
	for _, n := range unhealthy {
		d := n.Kube.Labels[cfg.FailureDomain]
		sick[d] = append(sick[d], n)
	}
	domains := make([]string, 0, len(sick))
	for d := range sick {
		domains = append(domains, d)
	}
	slices.Sort(domains)
	for _, d := range domains {
		if limit := cfg.DomainLimit(size[d]); len(sick[d]) > limit {
			return fmt.Sprintf(
				"%d of %d compute nodes of %s=%s unhealthy (%s), more than max_unhealthy_per_domain (%d): the domain, not its machines",
				len(sick[d]),
				size[d],
				cfg.FailureDomain,
				d,
				names(sick[d]),
				limit,
			)
		}
	}
	return ""
}

// readStorm reads the guard's record once, at the first pass: a storm that had not ended
// when the last controller stopped holds this one too (false: unreadable now, a pass later).
func (r *Recoverer) readStorm(ctx context.Context) bool {
	if r.stormRead {
		return true
	}
	s, err := r.Engine.Storm(ctx)
	if err != nil {
		if r.sayOnce("storm-record", err.Error()) {
			r.Log("automatic recovery: held: the storm guard's record cannot be read: " + err.Error())
		}
		return false
	}
	r.storm, r.stormRead = s, true
	if s != nil && s.Ended.IsZero() {
		r.inStorm, r.stormSaid = true, true // it ends (and its cooldown starts) once this process sees it calm
	}
	return true
}

// calmed ends a storm, if one held: no recovery starts for cooldown from now. The end is
// recorded on the cluster, so a controller that follows keeps the cooldown.
func (r *Recoverer) calmed(ctx context.Context, now time.Time, cooldown time.Duration) {
	if !r.inStorm {
		return
	}
	said := r.stormSaid
	r.inStorm, r.stormSaid = false, false
	if !said {
		return // shorter than not_ready_for: no storm anyone was told of, no cooldown
	}
	s := model.Storm{Began: now}
	if r.storm != nil {
		s = *r.storm
	}
	s.Ended = now
	r.saveStorm(ctx, s)
	r.Log(
		fmt.Sprintf(
			"automatic recovery: the storm is over; none starts before %s (storm_cooldown)",
			now.Add(cooldown).Format(time.RFC3339),
		),
	)
}

// saveStorm records the guard's state and keeps it. A record that cannot be written is said;
// this process still holds what it knows.
func (r *Recoverer) saveStorm(ctx context.Context, s model.Storm) {
	r.storm = &s
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.Engine.SaveStorm(wctx, s); err != nil {
		r.Log("automatic recovery: the storm guard's record could not be written (a restart would not know of this storm): " + err.Error())
	}
}

// stormBegan says, once a storm, loudly, on each unhealthy node, that every automatic
// recovery is held, and records the storm.
func (r *Recoverer) stormBegan(ctx context.Context, now time.Time, unhealthy []model.Node, why string) {
	var names []string
	for _, n := range unhealthy {
		names = append(names, n.Name)
	}
	r.saveStorm(ctx, model.Storm{Began: now, Nodes: names})
	msg := "storm guard: no automatic recovery, nothing fenced: " + why
	r.Log("automatic recovery: " + msg)
	r.notify(model.Notice{Kind: model.NoticeStorm, Message: msg})
	for _, n := range unhealthy {
		r.event(ctx, n.Name, "Warning", EventRecoveryStorm, msg)
	}
}
