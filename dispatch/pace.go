package dispatch

import (
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/furrowhq/furrow"
)

// A webhook with a rate (max_per_second) takes its deliveries no faster
// than that however early they start: a burst's workflows started at once
// would only wait in the engine, and their thousand starts would hold every
// other farm's starts back behind them. So a paced webhook's deliveries
// start about startLead ahead of its rate and no further: a burst of
// rate·startLead at once (at least minStartBurst), then startFaster times
// the rate, so that started deliveries always wait for the webhook and
// never the other way round. An event whose start is not yet due keeps its
// lease unstarted for a hold (see holdFor), then any dispatcher claims it
// again.
const (
	startLead     = 10 * time.Second
	startFaster   = 1.25
	minStartBurst = 16
	// maxPacedWebhooks bounds the webhooks whose starts a dispatcher
	// paces at once; past it, every webhook starts afresh with a full
	// burst (the webhook's rate itself is kept by the delivery workflow).
	maxPacedWebhooks = 10_000
)

// startPacer paces the starts of webhooks with a rate, one token bucket
// per webhook, in this process.
type startPacer struct {
	mu    sync.Mutex
	hooks map[uuid.UUID]*rate.Limiter
}

// take takes a start of w now and returns 0, or returns how long the event
// should be held before it is claimed again. Webhooks without a rate are
// never held.
func (p *startPacer) take(w furrow.Webhook, now time.Time) time.Duration {
	if w.MaxPerSecond == nil {
		return 0
	}
	limit, burst := startLimit(*w.MaxPerSecond)
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.hooks[w.ID]
	switch {
	case !ok:
		if len(p.hooks) >= maxPacedWebhooks || p.hooks == nil {
			p.hooks = make(map[uuid.UUID]*rate.Limiter)
		}
		l = rate.NewLimiter(limit, burst)
		p.hooks[w.ID] = l
	case l.Limit() != limit: // the owner changed the rate
		l.SetLimitAt(now, limit)
		l.SetBurstAt(now, burst)
	}
	if l.AllowN(now, 1) {
		return 0
	}
	return holdFor(limit, burst)
}

// startLimit is the start rate and burst for a webhook's rate.
func startLimit(perSecond float64) (rate.Limit, int) {
	return rate.Limit(perSecond * startFaster), max(minStartBurst, int(perSecond*startLead.Seconds()))
}

// holdFor is how long an event is held when its webhook has no start left:
// until half the burst has come back, so that each claim of the held
// events starts many of them, not one.
func holdFor(limit rate.Limit, burst int) time.Duration {
	return time.Duration(float64(burst) / 2 / float64(limit) * float64(time.Second))
}
