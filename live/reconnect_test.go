package live_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/furrowhq/furrow/internal/testenv"
	"github.com/furrowhq/furrow/live"
)

// A subscriber connection whose peer goes silent (a partition, a frozen
// host: the pings still land in the socket's buffer) is found lost by the
// silence, and its subscribers are told.
func TestSilentSubscriberConnectionIsTold(t *testing.T) {
	c, p := proxiedRedis(t)
	w := newWorld(t, redisBus(t, c, testPrefix()), live.Deps{})
	topic := live.FarmTopic(w.farmA)
	ws := w.dial(t, w.aliceToken, topic)
	p.Blackhole()
	expectBusError(t, ws, topic, 20*time.Second)
}

// A Redis that answers the reconnection's handshake with an error reply is
// not hammered with connections: the attempts are paced.
func TestReconnectRefusedByRedisIsPaced(t *testing.T) {
	opt, p := testenv.ProxiedRedis(t)
	opt.Password = "x" // sent in the handshake; a Redis without one takes any
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second, time.Second
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	w := newWorld(t, redisBus(t, c, testPrefix()), live.Deps{})
	w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
	// As a Redis whose password changed answers every command.
	p.Answer([]byte("-WRONGPASS invalid username-password pair\r\n"))
	before := p.Accepted()
	time.Sleep(2 * time.Second)
	// Paced from 100 ms, doubling: a handful in 2 s, against thousands
	// when each refusal is retried at once.
	if n := p.Accepted() - before; n > 60 {
		t.Fatalf("%d connections to Redis in 2 s while it refused them", n)
	}
}
