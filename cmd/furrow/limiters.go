package main

import (
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/api/ratelimit"
	"github.com/furrowhq/furrow/telemetry"
)

// rateLimiters are the two limiters of the API, counted by the metrics.
type rateLimiters struct {
	// readings is the per-credential limit on readings.
	readings furrow.RateLimiter
	// tests is the per-webhook limit on test deliveries.
	tests furrow.RateLimiter
	// failOpens is how many requests either let through because Redis failed.
	failOpens func() int64
}

// newRateLimiters keeps both limits in Redis when rc is set, failing open
// within cfg's bounds, and in process otherwise. Both count their 429s as
// furrow_ratelimit_rejected_total and their fail-opens as
// furrow_ratelimit_failopen_total, so that neither limit hides from the
// alerts.
func newRateLimiters(cfg Config, rc *redis.Client, m *telemetry.Metrics, log *slog.Logger) rateLimiters {
	if rc == nil {
		clock := furrow.SystemClock{}
		return rateLimiters{
			readings:  m.Limiter(ratelimit.NewMemory(furrow.RateLimit, furrow.RateWindow, clock)),
			tests:     m.Limiter(ratelimit.NewMemory(furrow.TestDeliveryLimit, furrow.TestDeliveryWindow, clock)),
			failOpens: func() int64 { return 0 }, // the in-process limiter cannot fail
		}
	}
	opts := ratelimit.FailOpenOptions{Timeout: cfg.Bounds.Limiter, Breaker: cfg.Bounds.LimiterBreaker, Logger: log}
	readings := ratelimit.NewFailOpen(ratelimit.NewRedis(rc, furrow.RateLimit, furrow.RateWindow, "furrow:rl:"), opts)
	tests := ratelimit.NewFailOpen(ratelimit.NewRedis(rc, furrow.TestDeliveryLimit, furrow.TestDeliveryWindow, "furrow:rltest:"), opts)
	return rateLimiters{
		readings:  m.Limiter(readings),
		tests:     m.Limiter(tests),
		failOpens: func() int64 { return readings.Failures() + tests.Failures() },
	}
}
