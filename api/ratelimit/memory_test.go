package ratelimit

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/testclock"
)

func TestMemoryRejects121st(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	m := NewMemory(furrow.RateLimit, furrow.RateWindow, clock)
	ctx := context.Background()
	for i := range furrow.RateLimit {
		d, err := m.Allow(ctx, "key:a")
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: got %+v, %v; want allowed", i+1, d, err)
		}
		clock.Advance(100 * time.Millisecond)
	}
	d, _ := m.Allow(ctx, "key:a")
	if d.Allowed {
		t.Fatal("121st request was allowed")
	}
	// The oldest was accepted 12 s ago, so its slot frees in 48 s.
	if want := furrow.RateWindow - 12*time.Second; d.RetryAfter != want {
		t.Fatalf("RetryAfter = %v, want %v", d.RetryAfter, want)
	}
	if d, _ := m.Allow(ctx, "key:b"); !d.Allowed {
		t.Fatal("another key was limited")
	}
}

func TestMemorySlotFreesWhenOldestAgesOut(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	m := NewMemory(3, time.Minute, clock)
	ctx := context.Background()
	for range 3 {
		m.Allow(ctx, "k")
		clock.Advance(10 * time.Second)
	}
	// now = t0+30s; the oldest (t0) ages out at t0+60s.
	if d, _ := m.Allow(ctx, "k"); d.Allowed || d.RetryAfter != 30*time.Second {
		t.Fatalf("got %+v, want rejected with 30s", d)
	}
	clock.Advance(29 * time.Second)
	if d, _ := m.Allow(ctx, "k"); d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("got %+v, want rejected with 1s", d)
	}
	clock.Advance(time.Second)
	if d, _ := m.Allow(ctx, "k"); !d.Allowed {
		t.Fatal("slot did not free after the oldest aged out")
	}
	if d, _ := m.Allow(ctx, "k"); d.Allowed {
		t.Fatal("only one slot should have freed")
	}
}

func TestMemoryEvictsIdleKeys(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	m := NewMemory(5, time.Minute, clock)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		m.Allow(ctx, k)
	}
	clock.Advance(2 * time.Minute)
	m.Allow(ctx, "d")
	if n := m.Keys(); n != 1 {
		t.Fatalf("Keys() = %d after idle keys aged out, want 1", n)
	}
}

// A key at its limit whose oldest time ages out at each request reuses its
// array: the steady state allocates nothing, where moving the live times
// along the array made append copy them again every few requests.
func TestMemorySteadyStateReusesItsArray(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	m := NewMemory(furrow.RateLimit, furrow.RateWindow, clock)
	ctx := context.Background()
	step := furrow.RateWindow / time.Duration(furrow.RateLimit)
	allow := func() {
		if d, _ := m.Allow(ctx, "k"); !d.Allowed {
			t.Fatalf("got %+v; one slot frees at each step", d)
		}
		clock.Advance(step)
	}
	for range 2 * furrow.RateLimit {
		allow()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const calls = 10_000
	for range calls {
		allow()
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > 20 {
		t.Fatalf("%d allocations in %d calls at the limit, want next to none", n, calls)
	}
}
