package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/furrowhq/furrow"
)

// Memory is an exact sliding-window limiter kept in process memory. It is
// correct for a single instance only. It is safe for concurrent use.
type Memory struct {
	limit  int
	window time.Duration
	clock  furrow.Clock

	// base is the origin of the offsets kept per key: an int64 of
	// nanoseconds is a third of a time.Time, and a million devices at the
	// limit keep 120 each.
	base time.Time

	mu        sync.Mutex
	keys      map[string][]int64 // accepted request times since base, oldest first
	lastSweep int64
}

// NewMemory returns a limiter that accepts at most limit requests per key in
// any window. It panics if limit or window is not positive, a wiring error.
func NewMemory(limit int, window time.Duration, clock furrow.Clock) *Memory {
	if limit <= 0 || window <= 0 {
		panic("ratelimit: limit and window must be positive")
	}
	if clock == nil {
		clock = furrow.SystemClock{}
	}
	base := clock.Now()
	return &Memory{limit: limit, window: window, clock: clock, base: base, keys: map[string][]int64{}}
}

// Allow counts one request for key if fewer than limit were accepted in the
// last window. It never returns an error.
func (m *Memory) Allow(_ context.Context, key string) (furrow.RateDecision, error) {
	now := int64(m.clock.Now().Sub(m.base))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	times := live(m.keys[key], now-int64(m.window))
	if len(times) >= m.limit {
		m.keys[key] = times
		return furrow.RateDecision{RetryAfter: time.Duration(times[0] + int64(m.window) - now)}, nil
	}
	m.keys[key] = append(times, now)
	return furrow.RateDecision{Allowed: true}, nil
}

// Keys returns how many keys are held, for tests of the memory bound.
func (m *Memory) Keys() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}

// sweep drops idle keys at most once per window, so memory stays bounded by
// the keys active in the last two windows at amortised constant cost.
func (m *Memory) sweep(now int64) {
	if now-m.lastSweep < int64(m.window) {
		return
	}
	m.lastSweep = now
	cutoff := now - int64(m.window)
	for k, times := range m.keys {
		if times = live(times, cutoff); len(times) == 0 {
			delete(m.keys, k)
		} else {
			m.keys[k] = times
		}
	}
}

// live drops the times at or before cutoff, moving the rest to the front
// of the same array: a key keeps the array append last grew, where
// reslicing its front away made append move the times to a new one every
// few requests.
func live(times []int64, cutoff int64) []int64 {
	i := 0
	for i < len(times) && times[i] <= cutoff {
		i++
	}
	if i == 0 {
		return times
	}
	return times[:copy(times, times[i:])]
}
