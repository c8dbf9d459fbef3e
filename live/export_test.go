package live

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// NewRedisBusPolling is NewRedisBus with the subscriptions polled every
// poll, so tests see pruning quickly.
func NewRedisBusPolling(client redis.UniversalClient, prefix string, poll time.Duration) *Bus {
	return newRedisBus(client, prefix, nil, poll)
}

// KnowsWatchedFarms reports whether a Redis bus knows which farms are
// watched, and so sends only their messages.
func KnowsWatchedFarms(b *Bus) bool {
	t, ok := b.tr.(*redisTransport)
	return ok && t.in.known.Load() != nil
}

// ControlSubscriptions returns how many times a Redis bus's control
// subscription was confirmed: 1 after the start, one more per reconnect.
func ControlSubscriptions(b *Bus) uint64 {
	return b.tr.(*redisTransport).in.generation()
}

// The connections' subscribe limit and how long they remember a farm's
// membership check, for tests that meet them.
const (
	SubscribeBurst = subscribeBurst
	SubscribeEvery = subscribeEvery
	FarmCheckTTL   = farmCheckTTL
)
