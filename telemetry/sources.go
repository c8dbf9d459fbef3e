package telemetry

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/furrowhq/furrow"
)

// WatchFailOpen exports failures, the requests the rate limiter let through
// because its store failed, as furrow_ratelimit_failopen_total.
func (m *Metrics) WatchFailOpen(failures func() int64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "furrow_ratelimit_failopen_total",
		Help: "Requests (readings, test deliveries) let through because the rate limiter's store failed.",
	}, func() float64 { return float64(failures()) }))
}

// LiveStats are the counters of the live-updates bus and its WebSocket
// server, read at each scrape.
type LiveStats struct {
	Published func() uint64
	Dropped   func() uint64
	// Connections and SlowDisconnects are nil in a process that publishes
	// without serving sockets (furrow worker); they are then not exported.
	Connections func() int
	// SlowDisconnects counts sockets closed because the client was too
	// slow to take its messages.
	SlowDisconnects func() uint64
}

// WatchLive exports the live bus's counters.
func (m *Metrics) WatchLive(s LiveStats) {
	if m == nil {
		return
	}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "furrow_live_published_total", Help: "Messages (readings and farm events) sent on the live-updates bus.",
		}, func() float64 { return float64(s.Published()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "furrow_live_dropped_total", Help: "Messages (readings and farm events) the live-updates bus dropped (queue full or transport failed).",
		}, func() float64 { return float64(s.Dropped()) }),
	)
	if s.Connections != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "furrow_live_connections", Help: "Open live-updates WebSocket connections.",
		}, func() float64 { return float64(s.Connections()) }))
	}
	if s.SlowDisconnects != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "furrow_live_slow_disconnects_total",
			Help: "Live-updates WebSocket connections closed because the client was too slow (send buffer full, write timed out, no pong).",
		}, func() float64 { return float64(s.SlowDisconnects()) }))
	}
}

// Backlog reports the outbox: how many events wait to be handed to
// Temporal, and when the oldest of them occurred (0 when none).
type Backlog interface {
	OutboxBacklog(ctx context.Context) (pending int64, oldestMs int64, err error)
}

// backlogTimeout bounds the query made at each scrape.
const backlogTimeout = 2 * time.Second

// WatchOutbox exports furrow_outbox_pending and
// furrow_outbox_oldest_pending_seconds, read from b at each scrape. A
// failed read is logged and leaves both out of that scrape, so that a
// broken database shows as missing data rather than as an empty outbox.
func (m *Metrics) WatchOutbox(b Backlog, log *slog.Logger) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&outboxCollector{b: b, log: log,
		pending: prometheus.NewDesc("furrow_outbox_pending", "Events not yet handed to Temporal.", nil, nil),
		oldest:  prometheus.NewDesc("furrow_outbox_oldest_pending_seconds", "Age of the oldest event not yet handed to Temporal (0 when none).", nil, nil),
	})
}

type outboxCollector struct {
	b               Backlog
	log             *slog.Logger
	pending, oldest *prometheus.Desc
}

func (c *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.oldest
}

func (c *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	n, oldestMs, err := c.b.OutboxBacklog(ctx)
	if err != nil {
		if c.log != nil {
			c.log.Warn("metrics: reading the outbox backlog failed", "err", err)
		}
		return
	}
	age := 0.0
	if n > 0 && oldestMs > 0 {
		age = max(0, time.Since(time.UnixMilli(oldestMs)).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
}

// Limiter returns l counting its rejections as
// furrow_ratelimit_rejected_total, the requests answered 429. A caller that
// may answer a rejection otherwise (the API answers 401 when the refused
// device key turns out revoked) calls AllowUncounted instead of Allow and
// counts the rejections it answers 429.
func (m *Metrics) Limiter(l furrow.RateLimiter) furrow.RateLimiter {
	if m == nil {
		return l
	}
	return countingLimiter{l, m}
}

type countingLimiter struct {
	furrow.RateLimiter
	m *Metrics
}

// Allow asks the limiter and counts a rejection.
func (c countingLimiter) Allow(ctx context.Context, key string) (furrow.RateDecision, error) {
	d, count, err := c.AllowUncounted(ctx, key)
	if count != nil {
		count()
	}
	return d, err
}

// AllowUncounted asks the limiter and returns, with a rejection, the
// function that counts it, to be called once the request is answered 429.
func (c countingLimiter) AllowUncounted(ctx context.Context, key string) (furrow.RateDecision, func(), error) {
	d, err := c.RateLimiter.Allow(ctx, key)
	if err != nil || d.Allowed {
		return d, nil, err
	}
	return d, c.m.RateLimited, nil
}
