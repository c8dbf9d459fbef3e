package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
	"github.com/furrowhq/furrow/internal/testenv"
)

// testPrefix returns a key prefix no other test uses, whose keys are
// deleted when the test ends.
func testPrefix(t *testing.T) string {
	t.Helper()
	c := testenv.Redis(t)
	prefix := "furrow-test:" + t.Name() + ":" + uuid.NewString() + ":"
	t.Cleanup(func() {
		keys, _ := c.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(context.Background(), keys...)
		}
	})
	return prefix
}

func TestFailOpenAllowsAndCounts(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: testenv.ClosedAddr(t), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { c.Close() })
	var logs strings.Builder
	f := NewFailOpen(NewRedis(c, 1, time.Minute, "x:"), FailOpenOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := range 3 {
		d, err := f.Allow(context.Background(), "key:secretish")
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: got %+v, %v; want allowed", i+1, d, err)
		}
	}
	if n := f.Failures(); n != 3 {
		t.Fatalf("Failures() = %d, want 3", n)
	}
	if got := strings.Count(logs.String(), "rate limiter unavailable"); got != 1 {
		t.Fatalf("logged %d times within a few seconds, want 1:\n%s", got, logs.String())
	}
}

func TestFailOpenPassesDecisions(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	f := NewFailOpen(NewMemory(1, time.Minute, clock), FailOpenOptions{})
	f.Allow(context.Background(), "k")
	if d, _ := f.Allow(context.Background(), "k"); d.Allowed || d.RetryAfter != time.Minute {
		t.Fatalf("got %+v, want the inner rejection", d)
	}
	if f.Failures() != 0 {
		t.Fatal("a rejection counted as a failure")
	}
}

// countingHook counts the commands a client sends.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Concurrent requests share script calls, and each still gets its own key's
// answer: a full key is refused with its retry time while another key
// accepts.
func TestRedisBatchesConcurrentDecisions(t *testing.T) {
	c := testenv.Redis(t)
	hook := &countingHook{}
	c.AddHook(hook)
	l := NewRedis(c, 10, time.Minute, "furrow-test:"+uuid.NewString()+":")
	ctx := context.Background()
	for range 10 {
		if d, err := l.Allow(ctx, "full"); err != nil || !d.Allowed {
			t.Fatalf("filling: %+v, %v", d, err)
		}
	}
	before := hook.n.Load()
	const workers, each = 32, 20
	var fullAllowed, otherAllowed, badRetry atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := "full"
				if i%2 == 1 {
					key = "other-" + strconv.Itoa(w)
				}
				d, err := l.Allow(ctx, key)
				switch {
				case err != nil:
					t.Error(err)
				case key == "full" && d.Allowed:
					fullAllowed.Add(1)
				case key == "full" && (d.RetryAfter <= 0 || d.RetryAfter > time.Minute):
					badRetry.Add(1)
				case key != "full" && d.Allowed:
					otherAllowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if fullAllowed.Load() != 0 || badRetry.Load() != 0 {
		t.Fatalf("full key: %d allowed, %d bad retry-after; want none", fullAllowed.Load(), badRetry.Load())
	}
	if otherAllowed.Load() != workers*each/2 {
		t.Fatalf("other keys: %d allowed, want %d", otherAllowed.Load(), workers*each/2)
	}
	if calls := hook.n.Load() - before; calls >= workers*each {
		t.Fatalf("%d script calls for %d requests: no decisions were shared", calls, workers*each)
	}
}

// A caller whose context ends stops waiting at once, even while Redis is
// silent and the script call is still bounded by its own timeout; and once
// Redis answers again, the next decisions come from it.
func TestRedisAllowEndsWithItsContext(t *testing.T) {
	opt, p := testenv.ProxiedRedis(t)
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	l := NewRedis(c, furrow.RateLimit, furrow.RateWindow, "furrow-test:"+uuid.NewString()+":")
	if d, err := l.Allow(context.Background(), "k"); err != nil || !d.Allowed {
		t.Fatalf("before the silence: %+v, %v", d, err)
	}
	p.Blackhole()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.Allow(ctx, "k")
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > callTimeout/2 {
		t.Fatalf("silent Redis: got %v after %v; want the context's deadline within about 100ms", err, took)
	}
	p.Restore()
	deadline := time.Now().Add(2 * callTimeout)
	for {
		d, err := l.Allow(context.Background(), "k")
		if err == nil && d.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the silence: %+v, %v; want allowed", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRedisSetHoldsAtMostTheLimit checks the memory bound of the lazy
// trim: a key's set never holds more than the limit, and a full set whose
// entries left the window is trimmed by the next request.
func TestRedisSetHoldsAtMostTheLimit(t *testing.T) {
	c := testenv.Redis(t)
	prefix := testPrefix(t)
	const window = 300 * time.Millisecond
	l := NewRedis(c, 3, window, prefix)
	size := func() int64 {
		n, err := c.ZCard(context.Background(), prefix+"k").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 3 {
		allowed(t, l, "k", "a request under the limit")
	}
	refused(t, l, "k", "a request over the limit", window)
	if n := size(); n != 3 {
		t.Fatalf("set holds %d after 3 accepted and 1 refused, want 3", n)
	}
	time.Sleep(window + 50*time.Millisecond)
	allowed(t, l, "k", "a request once the window passed")
	if n := size(); n != 1 {
		t.Fatalf("set holds %d after the full window aged out and one more was accepted, want 1", n)
	}
}
