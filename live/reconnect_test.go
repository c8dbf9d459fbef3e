package live_test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
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

// refusingRedis forwards connections to Redis until refuse is set; then it
// answers every command of a new connection with WRONGPASS, as a Redis
// whose password changed does, and counts the connections made.
type refusingRedis struct {
	target  string
	refuse  atomic.Bool
	accepts atomic.Int64
	mu      sync.Mutex
	open    []net.Conn
}

func newRefusingRedis(t *testing.T, target string) (addr string, r *refusingRedis) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	r = &refusingRedis{target: target}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.accepts.Add(1)
			go r.serve(c)
		}
	}()
	return ln.Addr().String(), r
}

func (r *refusingRedis) serve(c net.Conn) {
	if r.refuse.Load() {
		defer c.Close()
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := io.WriteString(c, "-WRONGPASS invalid username-password pair\r\n"); err != nil {
				return
			}
		}
	}
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		_ = c.Close()
		return
	}
	r.mu.Lock()
	r.open = append(r.open, c, up)
	r.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}

// cut closes the connections forwarded so far.
func (r *refusingRedis) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.open {
		_ = c.Close()
	}
	r.open = nil
}

// A Redis that answers the reconnection's handshake with an error reply is
// not hammered with connections: the attempts are paced.
func TestReconnectRefusedByRedisIsPaced(t *testing.T) {
	opt, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	addr, r := newRefusingRedis(t, opt.Addr)
	opt.Addr, opt.Password = addr, "x" // a Redis without a password takes any
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second, time.Second
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	w := newWorld(t, redisBus(t, c, testPrefix()), live.Deps{})
	w.dial(t, w.aliceToken, live.FarmTopic(w.farmA))
	r.refuse.Store(true)
	r.cut()
	before := r.accepts.Load()
	time.Sleep(2 * time.Second)
	// Paced from 100 ms, doubling: a handful in 2 s, against thousands
	// when each refusal is retried at once.
	if n := r.accepts.Load() - before; n > 60 {
		t.Fatalf("%d connections to Redis in 2 s while it refused them", n)
	}
}
