package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// slidingWindow keeps one sorted set per key whose members are accepted
// requests scored by their arrival in milliseconds. Time comes from Redis
// itself so that every instance agrees on it. It returns {1, 0} when the
// request is accepted and {0, retry_after_ms} when it is not.
var slidingWindow = redis.NewScript(`
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local retry = tonumber(oldest[2]) + window - now
if retry < 1 then retry = 1 end
return {0, retry}
`)

// Redis is an exact sliding-window limiter shared by every instance through
// one Redis. Each decision is one atomic script call.
type Redis struct {
	client *redis.Client
	limit  int
	window time.Duration
	prefix string
}

// NewRedis returns a limiter that accepts at most limit requests per key in
// any window, keeping its state under keys starting with prefix. It panics
// if limit is not positive or window is under a millisecond, a wiring error.
func NewRedis(client *redis.Client, limit int, window time.Duration, prefix string) *Redis {
	if limit <= 0 || window < time.Millisecond {
		panic("ratelimit: limit and window must be positive")
	}
	return &Redis{client: client, limit: limit, window: window, prefix: prefix}
}

// Allow counts one request for key if fewer than limit were accepted in the
// last window. It returns an error when Redis cannot be reached or answers
// unexpectedly; wrap the limiter in FailOpen to let requests through then.
func (l *Redis) Allow(ctx context.Context, key string) (furrow.RateDecision, error) {
	res, err := slidingWindow.Run(ctx, l.client, []string{l.prefix + key},
		l.limit, l.window.Milliseconds(), uuid.NewString()).Int64Slice()
	if err != nil {
		return furrow.RateDecision{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(res) != 2 {
		return furrow.RateDecision{}, fmt.Errorf("ratelimit: redis: unexpected reply of %d values", len(res))
	}
	if res[0] == 1 {
		return furrow.RateDecision{Allowed: true}, nil
	}
	return furrow.RateDecision{RetryAfter: time.Duration(res[1]) * time.Millisecond}, nil
}
