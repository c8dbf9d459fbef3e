package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/redisclient"
	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/telemetry"
)

// TestRateLimitersCountBothLimits holds both limiters, in process and in
// Redis, to the metrics: a test delivery over its webhook's limit counts
// as a rejection, and one let through by a dead Redis as a fail-open.
func TestRateLimitersCountBothLimits(t *testing.T) {
	cfg, err := loadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	rejected := func(m *telemetry.Metrics) float64 {
		n, err := testutil.GatherAndCount(m.Registry(), "furrow_ratelimit_rejected_total")
		if err != nil || n != 1 {
			t.Fatalf("furrow_ratelimit_rejected_total: %d series, %v", n, err)
		}
		fams, _ := m.Registry().Gather()
		for _, f := range fams {
			if f.GetName() == "furrow_ratelimit_rejected_total" {
				return f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return -1
	}
	overTheTestLimit := func(t *testing.T, l rateLimiters, m *telemetry.Metrics) {
		ctx := context.Background()
		key := "test:" + uuid.NewString()
		for i := range furrow.TestDeliveryLimit + 1 {
			d, err := l.tests.Allow(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != (i < furrow.TestDeliveryLimit) {
				t.Fatalf("test delivery %d allowed=%v", i+1, d.Allowed)
			}
		}
		if got := rejected(m); got != 1 {
			t.Fatalf("furrow_ratelimit_rejected_total = %v after one test delivery over the limit, want 1", got)
		}
	}

	t.Run("in process", func(t *testing.T) {
		m := telemetry.New()
		overTheTestLimit(t, newRateLimiters(cfg, nil, m, nil), m)
	})
	t.Run("in Redis", func(t *testing.T) {
		rc, err := redisclient.Open(testenv.RedisURL(t), redisOptions(cfg))
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		m := telemetry.New()
		overTheTestLimit(t, newRateLimiters(cfg, rc, m, nil), m)
	})
	t.Run("Redis down", func(t *testing.T) {
		cfg := cfg
		cfg.Bounds.Connect, cfg.Bounds.Limiter = 200*time.Millisecond, 200*time.Millisecond
		rc, err := redisclient.Open("redis://127.0.0.1:1/0", redisOptions(cfg))
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		l := newRateLimiters(cfg, rc, telemetry.New(), nil)
		for _, lim := range []furrow.RateLimiter{l.readings, l.tests} {
			if d, err := lim.Allow(context.Background(), "k"); err != nil || !d.Allowed {
				t.Fatalf("a limiter with Redis down answered %+v, %v; want let through", d, err)
			}
		}
		if n := l.failOpens(); n != 2 {
			t.Fatalf("failOpens() = %d after a reading and a test delivery let through, want 2", n)
		}
	})
}
