package live_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/furrowhq/furrow/live"
)

// answerBound is how soon a subscribe must be answered while Redis is
// silent: the 3 s a subscription waits for the bus, and some slack for a
// loaded machine.
const answerBound = 3500 * time.Millisecond

// While Redis is unreachable, the subscribes of several clients do not
// wait on one another's SUBSCRIBE: each client has its error within about
// 3 s, and the connections' cleanup (UNSUBSCRIBE) does not hold up the
// server's shutdown.
func TestOutageSubscribesDoNotQueue(t *testing.T) {
	c, p := proxiedRedis(t)
	bus := redisBus(t, c, testPrefix())
	waitFor(t, "the control subscription", func() bool { return live.ControlSubscriptions(bus) > 0 })
	// The subscriber connection is dropped and new connections hang, as
	// when Redis's host goes away: each SUBSCRIBE or UNSUBSCRIBE then waits
	// on a connection attempt, some seconds.
	p.Cut()
	p.Restore()
	p.Blackhole()
	w := newWorld(t, bus, live.Deps{})
	const clients = 4
	var wg sync.WaitGroup
	took := make([]time.Duration, clients)
	errs := make([]string, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			topic := live.MetricTopic(w.farmA, uuid.New(), 220)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ws, _, err := websocket.Dial(ctx, w.url(topic), &websocket.DialOptions{
				HTTPHeader: http.Header{"Authorization": {"Bearer " + w.aliceToken}}})
			if err != nil {
				errs[i] = "dial: " + err.Error()
				return
			}
			defer ws.CloseNow()
			start := time.Now()
			m := readWithin(t, ws, 30*time.Second)
			took[i] = time.Since(start)
			if m.Type != "error" || m.Topic != topic.String() || m.Error != "internal_error" {
				errs[i] = "got " + m.Type + " " + m.Error + ", want the bus's error"
			}
		}()
	}
	wg.Wait()
	for i := range clients {
		if errs[i] != "" {
			t.Fatalf("client %d: %s", i, errs[i])
		}
		t.Logf("client %d answered after %v", i, took[i])
	}
	for i, d := range took {
		if d > answerBound {
			t.Errorf("client %d answered after %v, want at most %v", i, d, answerBound)
		}
	}
	// Every connection is open with one unconfirmed topic; ending them
	// unsubscribes each while Redis is still silent.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown took %v with Redis unreachable, want under 1 s", d)
	}
}
