package ratelimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/internal/testenv"
)

// proxiedLimiter is a FailOpen Redis limiter whose Redis connection runs
// through a proxy the test can silence or refuse, with commands counted.
type proxiedLimiter struct {
	f     *FailOpenLimiter
	proxy *testenv.Proxy
	asked *countingLimiter
	clock *testclock.Clock
}

func newProxiedLimiter(t *testing.T) *proxiedLimiter {
	t.Helper()
	opt, p := testenv.ProxiedRedis(t)
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	inner := &countingLimiter{inner: NewRedis(c, furrow.RateLimit, furrow.RateWindow, "furrow-test:"+uuid.NewString()+":")}
	f := NewFailOpen(inner, FailOpenOptions{Timeout: 200 * time.Millisecond, Breaker: 5 * time.Second, Clock: clock})
	return &proxiedLimiter{f: f, proxy: p, asked: inner, clock: clock}
}

// allow asks once and returns how long the answer took; every answer must
// be an allowance without error.
func (l *proxiedLimiter) allow(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	d, err := l.f.Allow(context.Background(), "device")
	took := time.Since(start)
	if err != nil || !d.Allowed {
		t.Fatalf("got %+v, %v; want allowed", d, err)
	}
	return took
}

// A silent or refusing Redis costs a request at most the limiter's bound,
// then nothing while the failure is remembered; every such request is
// counted; once Redis answers again the probe restores real decisions.
func TestFailOpenBoundedAndRemembered(t *testing.T) {
	for _, fault := range []string{"blackholed", "refused"} {
		t.Run(fault, func(t *testing.T) {
			l := newProxiedLimiter(t)
			l.allow(t) // connected and working
			if l.f.Failures() != 0 {
				t.Fatal("a working Redis counted a failure")
			}
			if fault == "blackholed" {
				l.proxy.Blackhole()
			} else {
				l.proxy.Cut()
			}
			// The bound is 200 ms; a loaded machine may add some.
			took := l.allow(t)
			t.Logf("first request with Redis %s answered in %v", fault, took)
			if took > 2*time.Second {
				t.Fatalf("the first request waited %v, beyond the limiter's bound", took)
			}
			sent := l.asked.n.Load()
			for range 20 {
				if took := l.allow(t); took > time.Second {
					t.Fatalf("a request during a remembered failure waited %v", took)
				}
			}
			if n := l.asked.n.Load(); n != sent {
				t.Fatalf("Redis asked %d times while its failure was remembered", n-sent)
			}
			if n := l.f.Failures(); n != 21 {
				t.Fatalf("Failures() = %d, want 21", n)
			}
			// After the breaker period one request probes; Redis is still
			// down, so it fails open within the bound and is remembered.
			l.clock.Advance(6 * time.Second)
			if took := l.allow(t); took > 2*time.Second {
				t.Fatalf("the probe waited %v", took)
			}
			if n := l.asked.n.Load(); n != sent+1 {
				t.Fatalf("Redis asked %d times after the breaker period, want once", n-sent)
			}
			l.proxy.Restore()
			l.clock.Advance(6 * time.Second)
			// The probe may find the connection the blackhole left; allow a
			// few periods for a fresh one.
			before := l.f.Failures()
			recovered := false
			for range 20 {
				l.allow(t)
				if l.f.Failures() == before {
					recovered = true
					break
				}
				before = l.f.Failures()
				l.clock.Advance(6 * time.Second)
				time.Sleep(100 * time.Millisecond)
			}
			if !recovered {
				t.Fatal("the limiter did not come back after Redis did")
			}
		})
	}
}

// countingLimiter counts the decisions asked of its inner limiter.
type countingLimiter struct {
	inner furrow.RateLimiter
	n     atomic.Int64
}

func (c *countingLimiter) Allow(ctx context.Context, key string) (furrow.RateDecision, error) {
	c.n.Add(1)
	return c.inner.Allow(ctx, key)
}

// A request whose own context ends while the limiter decides (its client
// went away) is not a failure of the limiter: it is not counted, and the
// next request is decided by the limiter, not let through by the breaker.
func TestFailOpenIgnoresARequestThatIsGone(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	inner := &stallingLimiter{inner: NewMemory(1, time.Minute, clock), stall: make(chan struct{})}
	f := NewFailOpen(inner, FailOpenOptions{Timeout: time.Minute, Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-inner.stall // the first decision is under way
		cancel()
	}()
	if d, err := f.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("gone request: got %+v, %v; want allowed", d, err)
	}
	if n := f.Failures(); n != 0 {
		t.Fatalf("Failures() = %d after a request that went away, want 0", n)
	}
	f.Allow(context.Background(), "k")
	if d, _ := f.Allow(context.Background(), "k"); d.Allowed {
		t.Fatal("the second request over the limit was let through: the breaker opened for a gone request")
	}
}

// stallingLimiter makes its first decision wait for the caller's context to
// end, closing stall when it starts waiting; later ones go to inner.
type stallingLimiter struct {
	inner   furrow.RateLimiter
	stall   chan struct{}
	stalled atomic.Bool
}

func (s *stallingLimiter) Allow(ctx context.Context, key string) (furrow.RateDecision, error) {
	if s.stalled.CompareAndSwap(false, true) {
		close(s.stall)
		<-ctx.Done()
		return furrow.RateDecision{}, ctx.Err()
	}
	return s.inner.Allow(ctx, key)
}
