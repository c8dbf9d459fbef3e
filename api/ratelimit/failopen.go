package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/furrowhq/furrow"
)

// logEvery bounds how often FailOpen logs, so an outage does not flood logs.
const logEvery = 5 * time.Second

// Defaults of FailOpenOptions.
const (
	// DefaultFailOpenTimeout is the limiter's own bound: a Redis round trip
	// takes about a millisecond, so a decision that takes longer than this
	// means Redis is silent or overloaded.
	DefaultFailOpenTimeout = 250 * time.Millisecond
	// DefaultBreaker is how long a failure is remembered.
	DefaultBreaker = 5 * time.Second
)

var (
	errTimeout     = errors.New("ratelimit: no decision within the limiter's bound")
	errBreakerOpen = errors.New("ratelimit: a recent failure is remembered; the limiter is not asked")
)

// FailOpenOptions tune a FailOpenLimiter; zero values take the defaults.
type FailOpenOptions struct {
	// Timeout bounds one decision; past it the request is let through.
	Timeout time.Duration
	// Breaker is how long a failure is remembered: meanwhile requests are
	// let through without asking the inner limiter, except one probe per
	// period, so that a Redis that stays down costs each request nothing.
	Breaker time.Duration
	// Logger receives the rate-limited failure lines; nil discards them.
	Logger *slog.Logger
	// Clock is the breaker's time; nil is the system clock.
	Clock furrow.Clock
}

// FailOpenLimiter lets requests through when its inner limiter fails or
// does not answer within its bound: an unreachable Redis must not stop
// devices from reporting, nor slow them down.
type FailOpenLimiter struct {
	inner    furrow.RateLimiter
	opts     FailOpenOptions
	failures atomic.Int64
	lastLog  atomic.Int64 // unix nanoseconds of the last log line
	// openUntil is when the remembered failure expires (unix nanoseconds),
	// 0 when there is none. The first request after it probes the inner
	// limiter while the others still pass.
	openUntil atomic.Int64
}

// NewFailOpen wraps inner so that its errors and its slowness allow the
// request.
func NewFailOpen(inner furrow.RateLimiter, opts FailOpenOptions) *FailOpenLimiter {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultFailOpenTimeout
	}
	if opts.Breaker <= 0 {
		opts.Breaker = DefaultBreaker
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = furrow.SystemClock{}
	}
	return &FailOpenLimiter{inner: inner, opts: opts}
}

// Allow asks the inner limiter, waiting at most the bound; when it fails,
// is too slow, or failed within the breaker period, the request is
// allowed, the failure counted and logged at most once per few seconds. A
// request whose own context ends first is allowed without counting: its
// caller has gone. It never returns an error.
func (f *FailOpenLimiter) Allow(ctx context.Context, key string) (furrow.RateDecision, error) {
	if f.remembered() {
		return f.open(errBreakerOpen)
	}
	d, err := f.ask(ctx, key)
	if err != nil && ctx.Err() != nil {
		// The request itself is gone: not a fault of the limiter, so it is
		// neither counted nor remembered.
		return furrow.RateDecision{Allowed: true}, nil
	}
	if err != nil {
		f.openUntil.Store(f.opts.Clock.Now().Add(f.opts.Breaker).UnixNano())
		return f.open(err)
	}
	// Loaded first: a store on every request would make the cores that
	// serve them trade the line back and forth.
	if f.openUntil.Load() != 0 {
		f.openUntil.Store(0)
	}
	return d, nil
}

// remembered reports whether a recent failure stands, making the caller
// the probe (and answering false) when it has just expired.
func (f *FailOpenLimiter) remembered() bool {
	until := f.openUntil.Load()
	if until == 0 {
		return false
	}
	now := f.opts.Clock.Now()
	if now.UnixNano() < until {
		return true
	}
	return !f.openUntil.CompareAndSwap(until, now.Add(f.opts.Breaker).UnixNano())
}

// ask runs the inner limiter under the bound. The inner limiter returns
// when its context ends (Redis and Memory both do), so no goroutine is
// needed to stop waiting for it.
func (f *FailOpenLimiter) ask(ctx context.Context, key string) (furrow.RateDecision, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	d, err := f.inner.Allow(ctx, key)
	if err != nil && ctx.Err() != nil {
		return furrow.RateDecision{}, errTimeout
	}
	return d, err
}

// open lets the request through and counts and logs why.
func (f *FailOpenLimiter) open(err error) (furrow.RateDecision, error) {
	n := f.failures.Add(1)
	now := f.opts.Clock.Now().UnixNano()
	last := f.lastLog.Load()
	if now-last >= int64(logEvery) && f.lastLog.CompareAndSwap(last, now) {
		f.opts.Logger.Warn("rate limiter unavailable; allowing requests", "error", err, "failures_total", n)
	}
	return furrow.RateDecision{Allowed: true}, nil
}

// Failures returns how many requests were allowed because the inner limiter
// failed, was too slow, or had failed within the breaker period, since the
// wrapper was made.
func (f *FailOpenLimiter) Failures() int64 { return f.failures.Load() }
