package app

import (
	"context"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/internal/app/metrics"
	"github.com/drainctl/drainctl/internal/notify"
	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
)

// flushWithin is how long a run that ends gives its last notices to be posted.
const flushWithin = 10 * time.Second

// webhook is the [notify] webhook, posting in the background until stop (which first gives
// what was said flushWithin to go); nil, and a stop that does nothing, when none is set.
// failed hears each notice the webhook did not take.
func (e env) webhook(ctx context.Context, failed func(model.Notice, error)) (hook *notify.Webhook, stop func(), err error) {
	hook, err = notify.New(e.cfg.Notify, e.getenv, failed)
	if err != nil || hook == nil {
		return nil, func() {}, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx)) // a signal ends the run, not its last notices
	go hook.Run(ctx)
	return hook, func() { hook.Flush(flushWithin); cancel() }, nil
}

// campaignNotices is the emit function that tells a campaign's notices (started, a node past
// its deadline, quarantined, finished) to the webhook and counts them and the events in the
// metrics, each when there is one (nil when neither is).
func campaignNotices(hook *notify.Webhook, met *metrics.Metrics) func(ops.Event) {
	switch {
	case hook == nil && met == nil:
		return nil
	case met == nil:
		return (&notify.Campaigns{}).Observer(hook.Notify)
	}
	tell := met.Notice
	if hook != nil {
		tell = func(n model.Notice) { met.Notice(n); hook.Notify(n) }
	}
	notices := (&notify.Campaigns{}).Observer(tell)
	return func(ev ops.Event) { met.Observe(ev); notices(ev) }
}

// webhookFailed is the line that says a notice was not taken.
func webhookFailed(n model.Notice, err error) string {
	return fmt.Sprintf("the [notify] webhook did not take the %s notice: %v", n.Kind, err)
}
