package ratelimit

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testenv"
)

// newLimiter makes a limiter of one implementation under test.
type newLimiter func(t *testing.T, limit int, window time.Duration) furrow.RateLimiter

// TestLimiterContract holds the in-process limiter and the Redis one to the
// same contract, on real time: the in-process one on the system clock, the
// Redis one on Redis's. Windows are short enough to wait out; each wait
// runs from when the requests it waits on were answered, with a margin.
func TestLimiterContract(t *testing.T) {
	impls := map[string]newLimiter{
		"memory": func(_ *testing.T, limit int, window time.Duration) furrow.RateLimiter {
			return NewMemory(limit, window, furrow.SystemClock{})
		},
		"redis": func(t *testing.T, limit int, window time.Duration) furrow.RateLimiter {
			return NewRedis(testenv.Redis(t), limit, window, testPrefix(t))
		},
	}
	for name, newL := range impls {
		t.Run(name, func(t *testing.T) {
			t.Run("LimitThenRefused", func(t *testing.T) { testLimitThenRefused(t, newL) })
			t.Run("ConcurrentExactlyLimit", func(t *testing.T) { testConcurrentExactlyLimit(t, newL) })
			t.Run("RefusedDoNotCount", func(t *testing.T) { testRefusedDoNotCount(t, newL) })
			t.Run("SlotFreesWhenOldestAgesOut", func(t *testing.T) { testSlotFreesWhenOldestAgesOut(t, newL) })
		})
	}
}

func allowed(t *testing.T, l furrow.RateLimiter, key, what string) {
	t.Helper()
	if d, err := l.Allow(context.Background(), key); err != nil || !d.Allowed {
		t.Fatalf("%s: got %+v, %v; want allowed", what, d, err)
	}
}

func refused(t *testing.T, l furrow.RateLimiter, key, what string, window time.Duration) furrow.RateDecision {
	t.Helper()
	d, err := l.Allow(context.Background(), key)
	if err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > window {
		t.Fatalf("%s: got %+v, %v; want refused with a retry within (0, %v]", what, d, err, window)
	}
	return d
}

// The spec's limit: 120 accepted, the next refused, another key untouched.
func testLimitThenRefused(t *testing.T, newL newLimiter) {
	l := newL(t, furrow.RateLimit, furrow.RateWindow)
	for i := range furrow.RateLimit {
		allowed(t, l, "key:a", "request "+strconv.Itoa(i+1))
	}
	for range 3 {
		refused(t, l, "key:a", "a request over the limit", furrow.RateWindow)
	}
	allowed(t, l, "key:b", "another key")
}

// Of 200 concurrent requests for one key, exactly the limit pass.
func testConcurrentExactlyLimit(t *testing.T, newL newLimiter) {
	l := newL(t, furrow.RateLimit, furrow.RateWindow)
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			d, err := l.Allow(context.Background(), "cert:x")
			if err != nil {
				t.Error(err)
			} else if d.Allowed {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if n.Load() != furrow.RateLimit {
		t.Fatalf("%d of 200 concurrent requests allowed, want exactly %d", n.Load(), furrow.RateLimit)
	}
}

// Refused requests take no slot: once the accepted ones leave the window,
// the whole limit is free again, however many were refused meanwhile.
func testRefusedDoNotCount(t *testing.T, newL newLimiter) {
	const window = 600 * time.Millisecond
	l := newL(t, 2, window)
	allowed(t, l, "k", "the first request")
	allowed(t, l, "k", "the second request")
	accepted := time.Now() // both were stamped by now
	// Refused while both are surely in the window, at least once.
	for i := 0; i == 0 || i < 6 && time.Since(accepted) < window/2; i++ {
		refused(t, l, "k", "a request over the limit", window)
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Until(accepted.Add(window + 50*time.Millisecond)))
	allowed(t, l, "k", "the first request of the next window")
	allowed(t, l, "k", "the second request of the next window")
}

// A slot frees when the oldest accepted request leaves the window, and only
// that one.
func testSlotFreesWhenOldestAgesOut(t *testing.T, newL newLimiter) {
	const window = time.Second
	l := newL(t, 2, window)
	allowed(t, l, "k", "the first request")
	first := time.Now() // the first was stamped by now
	time.Sleep(500 * time.Millisecond)
	allowed(t, l, "k", "the second request")
	// The first frees its slot by first+window; a millisecond for rounding.
	most := time.Until(first.Add(window)) + time.Millisecond
	if d := refused(t, l, "k", "a third", window); d.RetryAfter > most {
		t.Fatalf("retry after %v; want at most %v, when the first leaves the window", d.RetryAfter, most)
	}
	time.Sleep(time.Until(first.Add(window + 50*time.Millisecond)))
	allowed(t, l, "k", "a request once the first left the window")
	refused(t, l, "k", "another while the second is still in it", window)
}
