package ratelimit

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/warm"
)

// slidingWindow keeps one sorted set per key whose members are accepted
// requests scored by their arrival in milliseconds. Time comes from Redis
// itself so that every instance agrees on it. It decides for each key in
// turn (a key may repeat) and returns a pair per key: {1, 0} when the request
// is accepted, {0, retry_after_ms} when it is not. Entries older than the
// window are trimmed only when the set is full: fewer than limit entries
// in all means fewer in the window, and a set never holds more than limit.
var slidingWindow = redis.NewScript(`
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('ZCARD', key)
  if n >= limit then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    n = redis.call('ZCARD', key)
  end
  if n < limit then
    redis.call('ZADD', key, now, ARGV[2 + i])
    redis.call('PEXPIRE', key, window)
    out[#out + 1] = 1
    out[#out + 1] = 0
  else
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    local retry = tonumber(oldest[2]) + window - now
    if retry < 1 then retry = 1 end
    out[#out + 1] = 0
    out[#out + 1] = retry
  end
end
return out
`)

const (
	// maxBatch bounds the decisions of one script call.
	maxBatch = 128
	// callTimeout bounds one script call, which answers several requests,
	// whatever becomes of the request that happens to make it.
	callTimeout = 2 * time.Second
)

// Redis is an exact sliding-window limiter shared by every instance through
// one Redis. Decisions asked for while a script call is under way are made
// together by the next call, so a busy instance makes one round trip for
// many requests instead of one each. The calls are made one after another
// by one goroutine, which lives while decisions are queued, and runs on a
// warm.Pool: a goroutine already grown to go-redis's depth, even when
// requests come one at a time. Its keys must live on one node (a plain or
// replicated Redis, not a cluster).
type Redis struct {
	client *redis.Client
	limit  int
	window time.Duration
	prefix string
	caller *warm.Pool // runs call

	mu    sync.Mutex
	queue []*decision // waiting for the next call
	busy  bool        // the calling goroutine runs
}

// decision is one Allow waiting for its answer, which done receives.
type decision struct {
	key    string
	result furrow.RateDecision
	err    error
	done   chan struct{}
}

// NewRedis returns a limiter that accepts at most limit requests per key in
// any window, keeping its state under keys starting with prefix. It panics
// if limit is not positive or window is under a millisecond, a wiring error.
func NewRedis(client *redis.Client, limit int, window time.Duration, prefix string) *Redis {
	if limit <= 0 || window < time.Millisecond {
		panic("ratelimit: limit and window must be positive")
	}
	return &Redis{client: client, limit: limit, window: window, prefix: prefix, caller: warm.New()}
}

// Allow counts one request for key if fewer than limit were accepted in the
// last window. It returns an error when Redis cannot be reached or answers
// unexpectedly, or ctx's error when ctx ends first (the request may still be
// counted then); wrap the limiter in FailOpen to let requests through then.
func (l *Redis) Allow(ctx context.Context, key string) (furrow.RateDecision, error) {
	d := &decision{key: l.prefix + key, done: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, d)
	start := !l.busy
	l.busy = true
	l.mu.Unlock()
	if start {
		l.caller.Go(l.call)
	}
	select {
	case <-d.done:
		return d.result, d.err
	case <-ctx.Done():
		return furrow.RateDecision{}, fmt.Errorf("ratelimit: %w", ctx.Err())
	}
}

// call makes script calls, each for up to maxBatch of the queued
// decisions, until none is left. Each call has its own bound: a caller
// that stops waiting does not cancel the decisions of the others.
func (l *Redis) call() {
	for {
		l.mu.Lock()
		n := min(len(l.queue), maxBatch)
		if n == 0 {
			l.busy = false
			l.mu.Unlock()
			return
		}
		batch := l.queue[:n:n]
		l.queue = l.queue[n:]
		l.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		l.run(ctx, batch)
		cancel()
		for _, d := range batch {
			close(d.done)
		}
	}
}

// member returns a new member of a key's set: 16 random bytes, unique
// among every instance's requests without a crypto/rand read each.
func member() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return string(b[:])
}

// run makes one script call for batch and fills in every decision.
func (l *Redis) run(ctx context.Context, batch []*decision) {
	keys := make([]string, len(batch))
	args := make([]any, 2, 2+len(batch))
	args[0], args[1] = l.limit, l.window.Milliseconds()
	for i, d := range batch {
		keys[i] = d.key
		args = append(args, member())
	}
	res, err := slidingWindow.Run(ctx, l.client, keys, args...).Int64Slice()
	if err == nil && len(res) != 2*len(batch) {
		err = fmt.Errorf("unexpected reply of %d values for %d keys", len(res), len(batch))
	}
	for i, d := range batch {
		switch {
		case err != nil:
			d.err = fmt.Errorf("ratelimit: redis: %w", err)
		case res[2*i] == 1:
			d.result = furrow.RateDecision{Allowed: true}
		default:
			d.result = furrow.RateDecision{RetryAfter: time.Duration(res[2*i+1]) * time.Millisecond}
		}
	}
}
