package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/furrowhq/furrow"
)

// logEvery bounds how often FailOpen logs, so an outage does not flood logs.
const logEvery = 5 * time.Second

// FailOpenLimiter lets requests through when its inner limiter fails: an
// unreachable Redis must not stop devices from reporting.
type FailOpenLimiter struct {
	inner    furrow.RateLimiter
	logger   *slog.Logger
	clock    furrow.Clock
	failures atomic.Int64
	lastLog  atomic.Int64 // unix nanoseconds of the last log line
}

// FailOpen wraps inner so that its errors allow the request. A nil logger
// discards the log lines.
func FailOpen(inner furrow.RateLimiter, logger *slog.Logger) *FailOpenLimiter {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &FailOpenLimiter{inner: inner, logger: logger, clock: furrow.SystemClock{}}
}

// Allow asks the inner limiter; when it fails, the request is allowed, the
// failure counted and logged at most once per few seconds. It never returns
// an error.
func (f *FailOpenLimiter) Allow(ctx context.Context, key string) (furrow.RateDecision, error) {
	d, err := f.inner.Allow(ctx, key)
	if err == nil {
		return d, nil
	}
	n := f.failures.Add(1)
	now := f.clock.Now().UnixNano()
	last := f.lastLog.Load()
	if now-last >= int64(logEvery) && f.lastLog.CompareAndSwap(last, now) {
		f.logger.Warn("rate limiter unavailable; allowing requests", "error", err, "failures_total", n)
	}
	return furrow.RateDecision{Allowed: true}, nil
}

// Failures returns how many requests were allowed because the inner limiter
// failed, since the wrapper was made.
func (f *FailOpenLimiter) Failures() int64 { return f.failures.Load() }
