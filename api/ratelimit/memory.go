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

	mu        sync.Mutex
	keys      map[string][]time.Time // accepted request times, oldest first
	lastSweep time.Time
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
	return &Memory{limit: limit, window: window, clock: clock, keys: map[string][]time.Time{}}
}

// Allow counts one request for key if fewer than limit were accepted in the
// last window. It never returns an error.
func (m *Memory) Allow(_ context.Context, key string) (furrow.RateDecision, error) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	times := live(m.keys[key], now.Add(-m.window))
	if len(times) >= m.limit {
		m.keys[key] = times
		return furrow.RateDecision{RetryAfter: times[0].Add(m.window).Sub(now)}, nil
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
func (m *Memory) sweep(now time.Time) {
	if now.Sub(m.lastSweep) < m.window {
		return
	}
	m.lastSweep = now
	cutoff := now.Add(-m.window)
	for k, times := range m.keys {
		if len(live(times, cutoff)) == 0 {
			delete(m.keys, k)
		}
	}
}

// live returns the suffix of times strictly after cutoff.
func live(times []time.Time, cutoff time.Time) []time.Time {
	i := 0
	for i < len(times) && !times[i].After(cutoff) {
		i++
	}
	return times[i:]
}
