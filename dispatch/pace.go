package dispatch

import (
	"slices"
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
// never the other way round. An event whose start is not yet due is held,
// unstarted, and comes back in line: one every 1/rate after the last one
// held for the webhook, by when the bucket has room for it.
const (
	startLead     = 10 * time.Second
	startFaster   = 1.25
	minStartBurst = 16
	// maxHold bounds how far ahead a held event's turn may be: past it,
	// its delivery starts at once and waits for the webhook in the engine,
	// as without pacing. A claim walks past held events in the outbox, so
	// a webhook that is sent more than its rate for good must not hold
	// ever more of them: at most maxHold of its rate are held.
	maxHold = 2 * time.Minute
	// maxPaced bounds the webhooks, and apart from them the held events,
	// a dispatcher remembers; past it, it starts afresh: every webhook
	// with a full burst, every held event's webhooks started again (a
	// second start is refused as started).
	maxPaced = 100_000
)

// startPacer paces the starts of webhooks with a rate, one token bucket
// per webhook in this process, and remembers which webhooks' workflows of
// a held event it started, so that they are not started again when the
// event comes back.
type startPacer struct {
	mu      sync.Mutex
	hooks   map[uuid.UUID]*pacedHook
	started map[string][]uuid.UUID // by held event
}

type pacedHook struct {
	lim  *rate.Limiter
	line time.Time // when the last event held for the webhook comes back
}

// take takes a start of w now for an event of time at and returns 0, or
// returns how long the event is to be held before it is claimed again.
// Webhooks without a rate are never held, nor is an event older than
// maxHold: held once already, it would otherwise come back to a bucket
// that newer events emptied meanwhile and be held again, and again, for as
// long as the webhook is sent more than its rate. It starts ahead of them,
// the bucket in debt (the delivery itself still waits for the webhook's
// rate).
func (p *startPacer) take(w furrow.Webhook, at, now time.Time) time.Duration {
	if w.MaxPerSecond == nil {
		return 0
	}
	perSecond := *w.MaxPerSecond
	limit, burst := startLimit(perSecond)
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.hooks[w.ID]
	switch {
	case !ok:
		if len(p.hooks) >= maxPaced || p.hooks == nil {
			p.hooks = make(map[uuid.UUID]*pacedHook)
		}
		h = &pacedHook{lim: rate.NewLimiter(limit, burst)}
		p.hooks[w.ID] = h
	case h.lim.Limit() != limit: // the owner changed the rate
		h.lim.SetLimitAt(now, limit)
		h.lim.SetBurstAt(now, burst)
	}
	if now.Sub(at) >= maxHold {
		h.lim.ReserveN(now, 1)
		return 0
	}
	if h.lim.AllowN(now, 1) {
		return 0
	}
	// Back in line at the webhook's own rate, slower than the bucket
	// fills: by its turn, the bucket has room for it.
	line := h.line
	if line.Before(now) {
		line = now
	}
	line = line.Add(time.Duration(float64(time.Second) / perSecond))
	if line.Sub(now) > maxHold {
		return 0
	}
	h.line = line
	// Held once, it comes back by maxHold of its age at the latest, and
	// starts then (above).
	return min(line.Sub(now), at.Add(maxHold).Sub(now))
}

// startLimit is the start rate and burst for a webhook's rate.
func startLimit(perSecond float64) (rate.Limit, int) {
	return rate.Limit(perSecond * startFaster), max(minStartBurst, int(perSecond*startLead.Seconds()))
}

// startedOf returns the webhooks whose workflows of the held event id this
// process started.
func (p *startPacer) startedOf(id string) []uuid.UUID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started[id]
}

// settled remembers the webhooks started for the event id while it is
// held, and forgets them once it is not.
func (p *startPacer) settled(id string, started []uuid.UUID, held bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !held {
		delete(p.started, id)
		return
	}
	if len(p.started) >= maxPaced || p.started == nil {
		p.started = make(map[string][]uuid.UUID)
	}
	p.started[id] = slices.Concat(p.started[id], started)
}
