package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow"
)

// reserveSlot is a GCRA reservation: KEYS[1] holds the theoretical arrival
// time (µs, Redis time) of the webhook's next free slot. The call takes that
// slot, moves the key one interval (ARGV[1], µs) on, and returns how many µs
// until the slot comes (0: now). Every process shares the key, so the
// slots of a webhook are one interval apart whoever takes them.
var reserveSlot = redis.NewScript(`
local interval = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local next = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.ceil((next - now) / 1000) + 1000)
return tat - now
`)

// admitSend is the check made when an attempt is about to send: KEYS[1]
// is a sorted set of the webhook's sends within the last window (ARGV[1],
// µs). Below ARGV[2] sends in it, the call adds this one (member ARGV[3])
// and returns 0; otherwise it adds nothing and returns the µs to wait. An
// admitted send is scored ARGV[4] µs ahead (Redis time): it counts as still
// to come until sentSend scores it with the moment it went, so that a send
// let go but sent late is never left out of a window it falls in. So no
// window of that length ever holds more sends than the rate allows, however
// late the attempts' turns came and however late their requests went out.
var admitSend = redis.NewScript(`
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local hold = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now + hold, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil((window + hold) / 1000) + 1000)
  return 0
end
local oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
if oldest > now then return window end
local wait = oldest + window - now
if wait < 1 then wait = 1 end
return wait
`)

// sentSend scores the admitted send ARGV[1] of the sorted set KEYS[1] with
// the Redis time now, after its request was written: from then on it
// leaves the window a window after it went. A send no longer in the set
// (past its hold) is left out.
var sentSend = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZADD', KEYS[1], 'XX', now, ARGV[1])
return 0
`)

// sendHold is how long an admitted send counts as still to come when the
// process never says it went (it died, say): its request is written
// within furrow.DeliveryTimeout of being admitted, and saying so takes at
// most a pacerTimeout.
const sendHold = furrow.DeliveryTimeout + pacerTimeout

// pacerTimeout bounds one Redis call of the Pacer; past it the slot is
// taken from the process's own schedule. It is generous: a call that
// times out may still have counted in Redis, and the process's own count
// then adds to it.
const pacerTimeout = time.Second

// pacerBreaker is how long the Pacer keeps to the process's own schedule
// after a failed Redis call before trying Redis again, so that a flapping
// Redis does not spend both budgets call after call.
const pacerBreaker = 5 * time.Second

// Pacer spaces the delivery attempts of each webhook to its max_per_second
// across every process, through one Redis (GCRA slots). When Redis does not
// answer, each process spaces the webhook's attempts on its own at the
// same rate, so deliveries go on, at worst at the rate times the number of
// processes, rather than stop. A zero Pacer (no Redis) is process-local.
type Pacer struct {
	client *redis.Client
	prefix string
	logger *slog.Logger
	local  LocalPacer
	failed atomic.Bool  // the last Redis call failed
	down   atomic.Int64 // until when (Unix ns) Redis is left alone
}

// NewPacer returns a Pacer keeping its slots under prefix in client.
func NewPacer(client *redis.Client, prefix string, logger *slog.Logger) *Pacer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Pacer{client: client, prefix: prefix, logger: logger}
}

// Reserve takes the webhook's next slot at perSecond attempts a second and
// returns how long until it comes. The slot is the caller's: it sends then,
// without asking again.
func (p *Pacer) Reserve(ctx context.Context, webhookID uuid.UUID, perSecond float64) (time.Duration, error) {
	args := []any{furrow.PaceInterval(perSecond).Microseconds()}
	return p.run(ctx, reserveSlot, "", webhookID, args, func(ctx context.Context) (time.Duration, error) {
		return p.local.Reserve(ctx, webhookID, perSecond)
	})
}

// Admit says whether the webhook may be sent to now at perSecond, and
// counts the send, named sendID, when it may; otherwise it returns how long
// to wait. Until Sent, the send counts as still to come. No sendWindow (at
// least a second) ever holds more than perSecond times its length of sends,
// each counted from when its request was written.
func (p *Pacer) Admit(ctx context.Context, webhookID uuid.UUID, perSecond float64, sendID uuid.UUID) (time.Duration, error) {
	window, limit := sendWindow(perSecond)
	args := []any{window.Microseconds(), limit, sendID.String(), sendHold.Microseconds()}
	return p.run(ctx, admitSend, "sent:", webhookID, args, func(ctx context.Context) (time.Duration, error) {
		return p.local.Admit(ctx, webhookID, perSecond, sendID)
	})
}

// Sent says the admitted send sendID went now: its request was written,
// or failed before it could be.
func (p *Pacer) Sent(ctx context.Context, webhookID, sendID uuid.UUID) error {
	_, err := p.run(ctx, sentSend, "sent:", webhookID, []any{sendID.String()}, func(ctx context.Context) (time.Duration, error) {
		return 0, p.local.Sent(ctx, webhookID, sendID)
	})
	return err
}

// sendWindow is the window Admit counts sends over, a second or the time
// between two sends when that is longer, and how many it allows in it. The
// window is a hundredth longer than that (10 ms on a second): a request
// reaches its receiver a little after it is written, and a receiver timing
// the requests as it reads them must not find one second with one more.
func sendWindow(perSecond float64) (time.Duration, int) {
	window := max(time.Second, furrow.PaceInterval(perSecond))
	return window + window/100, max(1, int(math.Floor(perSecond*window.Seconds()+1e-9)))
}

// run calls script for the webhook's key with args, or fallback when Redis
// fails.
func (p *Pacer) run(ctx context.Context, script *redis.Script, kind string, webhookID uuid.UUID, args []any,
	fallback func(context.Context) (time.Duration, error)) (time.Duration, error) {
	if time.Now().UnixNano() < p.down.Load() {
		return fallback(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, pacerTimeout)
	defer cancel()
	us, err := script.Run(ctx, p.client, []string{p.prefix + kind + webhookID.String()}, args...).Int64()
	if err != nil {
		p.down.Store(time.Now().Add(pacerBreaker).UnixNano())
		if !p.failed.Swap(true) {
			p.logger.Warn("the delivery-rate store failed; webhook rates are kept per process until it answers", "err", err)
		}
		return fallback(ctx)
	}
	if p.failed.Swap(false) {
		p.logger.Info("the delivery-rate store answers again; webhook rates are shared again")
	}
	return time.Duration(us) * time.Microsecond, nil
}

// maxLocalKeys bounds the webhooks a LocalPacer remembers before it forgets
// those whose slots are all past.
const maxLocalKeys = 10000

// LocalPacer spaces each webhook's attempts within one process; the zero
// value is ready.
type LocalPacer struct {
	mu    sync.Mutex
	clock furrow.Clock
	next  map[uuid.UUID]time.Time   // the next free slot of each webhook
	sent  map[uuid.UUID][]localSend // each webhook's sends in its sendWindow
}

// localSend is one admitted send: at is when it went, or, until Sent says
// so, sendHold after it was admitted.
type localSend struct {
	id uuid.UUID
	at time.Time
}

// NewLocalPacer returns a LocalPacer reading the time from clock.
func NewLocalPacer(clock furrow.Clock) *LocalPacer { return &LocalPacer{clock: clock} }

// Reserve takes the webhook's next slot in this process.
func (l *LocalPacer) Reserve(_ context.Context, webhookID uuid.UUID, perSecond float64) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.next = forgetPast(l.next, now)
	slot := l.next[webhookID]
	if slot.Before(now) {
		slot = now
	}
	l.next[webhookID] = slot.Add(furrow.PaceInterval(perSecond))
	return slot.Sub(now), nil
}

// Admit is Pacer.Admit in this process.
func (l *LocalPacer) Admit(_ context.Context, webhookID uuid.UUID, perSecond float64, sendID uuid.UUID) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	window, limit := sendWindow(perSecond)
	if l.sent == nil {
		l.sent = map[uuid.UUID][]localSend{}
	}
	if len(l.sent) >= maxLocalKeys {
		for id, sends := range l.sent {
			if len(inWindow(sends, now, window)) == 0 {
				delete(l.sent, id)
			}
		}
	}
	sends := inWindow(l.sent[webhookID], now, window)
	l.sent[webhookID] = sends
	if len(sends) < limit {
		l.sent[webhookID] = append(sends, localSend{id: sendID, at: now.Add(sendHold)})
		return 0, nil
	}
	oldest := sends[0].at
	for _, s := range sends[1:] {
		if s.at.Before(oldest) {
			oldest = s.at
		}
	}
	if oldest.After(now) {
		return window, nil
	}
	return oldest.Add(window).Sub(now), nil
}

// Sent is Pacer.Sent in this process.
func (l *LocalPacer) Sent(_ context.Context, webhookID, sendID uuid.UUID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	sends := l.sent[webhookID]
	for i := range sends {
		if sends[i].id == sendID {
			sends[i].at = l.now()
		}
	}
	return nil
}

// inWindow keeps, in place, the sends that count at now: those that went
// less than window ago, and those still to come.
func inWindow(sends []localSend, now time.Time, window time.Duration) []localSend {
	kept := sends[:0]
	for _, s := range sends {
		if now.Sub(s.at) < window {
			kept = append(kept, s)
		}
	}
	return kept
}

func (l *LocalPacer) now() time.Time {
	if l.clock != nil {
		return l.clock.Now()
	}
	return time.Now()
}

// forgetPast returns m, made when nil, without its past times once it holds
// maxLocalKeys webhooks.
func forgetPast(m map[uuid.UUID]time.Time, now time.Time) map[uuid.UUID]time.Time {
	if m == nil {
		return map[uuid.UUID]time.Time{}
	}
	if len(m) >= maxLocalKeys {
		for id, t := range m {
			if t.Before(now) {
				delete(m, id)
			}
		}
	}
	return m
}
