package campaign

import (
	"context"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/poll"
)

// A node's turn: a slot of --parallel and its failure domain free (--spread-by).

// domains are the failure domains with a node in flight (--spread-by): never two at once.
type domains struct {
	mu       sync.Mutex
	inFlight map[string]bool
}

// wait takes the domain once no node of it is in flight ("" is no domain: never waits); said
// is called once if it has to wait. false: ctx ended.
func (d *domains) wait(ctx context.Context, domain string, said func(string)) bool {
	if domain == "" {
		return true
	}
	told := false
	for {
		d.mu.Lock()
		if !d.inFlight[domain] {
			d.inFlight[domain] = true
			d.mu.Unlock()
			return true
		}
		d.mu.Unlock()
		if !told {
			said(domain)
			told = true
		}
		if !poll.Sleep(ctx, 200*time.Millisecond) {
			return false
		}
	}
}

func (d *domains) done(domain string) {
	d.mu.Lock()
	delete(d.inFlight, domain)
	d.mu.Unlock()
}

// waitTurn waits for a free slot and for no pause; false when the campaign must start no
// new node (ctx ended, or a failure).
func (r *Campaign) waitTurn(ctx context.Context, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	for {
		r.mu.Lock()
		paused, wake, stopping := r.paused, r.wake, r.stopping
		r.mu.Unlock()
		if stopping != nil || ctx.Err() != nil {
			<-slots
			return false
		}
		if !paused {
			if r.Record().State == model.CampaignPaused {
				r.setState(ctx, model.CampaignRunning, "")
			}
			return true
		}
		if r.Record().State != model.CampaignPaused {
			r.setState(ctx, model.CampaignPaused, "no new node starts until resumed") // the state says paused
		}
		select {
		case <-wake:
		case <-ctx.Done():
		case <-time.After(time.Second): // a failure elsewhere also ends the wait
		}
	}
}
