package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"strconv"
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

// admitSend is the strict check made when an attempt is about to send:
// KEYS[1] holds the earliest time (µs) the webhook may be sent to again.
// When that time has come the call moves it one interval (ARGV[1], µs) on
// and returns 0; otherwise it changes nothing and returns the µs to wait.
// Slots spread a burst out; this keeps late timers from bunching it up.
var admitSend = redis.NewScript(`
local interval = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
if free > now then return free - now end
redis.call('SET', KEYS[1], string.format('%.0f', now + interval), 'PX', math.ceil(interval / 1000) + 1000)
return 0
`)

// pacerTimeout bounds one Redis call of the Pacer; past it the slot is
// taken from the process's own schedule.
const pacerTimeout = 250 * time.Millisecond

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
	failed atomic.Bool // the last Redis call failed
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
	return p.run(ctx, reserveSlot, "", webhookID, perSecond, p.local.Reserve)
}

// Admit says whether the webhook may be sent to now at perSecond, and
// counts the send when it may; otherwise it returns how long to wait.
func (p *Pacer) Admit(ctx context.Context, webhookID uuid.UUID, perSecond float64) (time.Duration, error) {
	return p.run(ctx, admitSend, "sent:", webhookID, perSecond, p.local.Admit)
}

// run calls script for the webhook's key, or fallback when Redis fails.
func (p *Pacer) run(ctx context.Context, script *redis.Script, kind string, webhookID uuid.UUID, perSecond float64,
	fallback func(context.Context, uuid.UUID, float64) (time.Duration, error)) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, pacerTimeout)
	defer cancel()
	interval := strconv.FormatInt(intervalOf(perSecond).Microseconds(), 10)
	us, err := script.Run(ctx, p.client, []string{p.prefix + kind + webhookID.String()}, interval).Int64()
	if err != nil {
		if !p.failed.Swap(true) {
			p.logger.Warn("the delivery-rate store failed; webhook rates are kept per process until it answers", "err", err)
		}
		return fallback(ctx, webhookID, perSecond)
	}
	if p.failed.Swap(false) {
		p.logger.Info("the delivery-rate store answers again; webhook rates are shared again")
	}
	return time.Duration(us) * time.Microsecond, nil
}

// intervalOf is the time between two slots at perSecond, at least 1 µs.
func intervalOf(perSecond float64) time.Duration {
	return max(time.Duration(math.Round(float64(time.Second)/perSecond)), time.Microsecond)
}

// maxLocalKeys bounds the webhooks a LocalPacer remembers before it forgets
// those whose slots are all past.
const maxLocalKeys = 10000

// LocalPacer spaces each webhook's attempts within one process; the zero
// value is ready.
type LocalPacer struct {
	mu    sync.Mutex
	clock furrow.Clock
	next  map[uuid.UUID]time.Time // the next free slot of each webhook
	sent  map[uuid.UUID]time.Time // when each webhook may be sent to again
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
	l.next[webhookID] = slot.Add(intervalOf(perSecond))
	return slot.Sub(now), nil
}

// Admit is Pacer.Admit in this process.
func (l *LocalPacer) Admit(_ context.Context, webhookID uuid.UUID, perSecond float64) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sent = forgetPast(l.sent, now)
	if free := l.sent[webhookID]; free.After(now) {
		return free.Sub(now), nil
	}
	l.sent[webhookID] = now.Add(intervalOf(perSecond))
	return 0, nil
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
