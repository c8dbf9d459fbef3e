package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

// faultEnv is a `furrow serve` whose PostgreSQL and Redis connections run
// through proxies the test can silence (blackhole) or refuse, with short
// bounds so that the test does not wait long. Temporal is never reached:
// readings wait in the outbox, which is what happens while it is down.
type faultEnv struct {
	f      *furrow
	env    map[string]string
	db     string
	pg     *testenv.Proxy
	redis  *testenv.Proxy
	fx     fixture
	client *http.Client // one connection per request
}

func newFaultEnv(t *testing.T, bounds map[string]string) *faultEnv {
	t.Helper()
	db := newDatabase(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	pg := testenv.NewProxy(t, u.Host)
	u.Host = pg.Addr
	ru, err := url.Parse(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rp := testenv.NewProxy(t, ru.Host)
	ru.Host = rp.Addr
	env := map[string]string{
		"FURROW_DATABASE_URL":      u.String(),
		"FURROW_REDIS_URL":         ru.String(),
		"FURROW_TEMPORAL_ADDRESS":  freeAddr(t),
		"FURROW_REQUEST_TIMEOUT":   "2s",
		"FURROW_CONNECT_TIMEOUT":   "1s",
		"FURROW_DEAD_CONN_TIMEOUT": "3s",
	}
	for k, v := range bounds {
		env[k] = v
	}
	f := start(t, "serve", env)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return &faultEnv{f: f, env: env, db: db, pg: pg, redis: rp, fx: newFixture(t, f, db), client: client}
}

// timed sends one request and returns the answer and how long it took.
func (e *faultEnv) timed(t *testing.T, method, path string, body any, headers ...string) (response, time.Duration) {
	t.Helper()
	start := time.Now()
	r := do(t, e.client, method, e.f.URL+path, body, headers...)
	return r, time.Since(start)
}

// slowBody opens a connection that sends a reading's headers without a
// credential and then its body one byte at a time, and returns a channel
// that receives how long the server took to answer or close it.
func slowBody(t *testing.T, addr string) <-chan time.Duration {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	start := time.Now()
	_, err = fmt.Fprintf(c, "POST /api/metric-values HTTP/1.1\r\nHost: furrow\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			time.Sleep(200 * time.Millisecond)
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	return closedAfter(c, start)
}

// closedAfter reports how long after start the server closed c, once it
// has; whatever it answered before is read and dropped.
func closedAfter(c net.Conn, start time.Time) <-chan time.Duration {
	done := make(chan time.Duration, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, _ = io.Copy(io.Discard, c)
		done <- time.Since(start)
	}()
	return done
}

// waitClosed fails t unless the server closed the connection within limit.
func waitClosed(t *testing.T, what string, ch <-chan time.Duration, limit time.Duration) time.Duration {
	t.Helper()
	select {
	case d := <-ch:
		if d > limit {
			t.Fatalf("%s closed after %v, beyond %v", what, d, limit)
		}
		return d
	case <-time.After(limit):
		t.Fatalf("%s still open after %v", what, limit)
		return 0
	}
}

// Slow senders and idle keep-alive connections are closed within the
// server's bounds, and meanwhile normal devices are served.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary behind fault-injecting proxies")
	e := newFaultEnv(t, map[string]string{
		"FURROW_HTTP_READ_HEADER_TIMEOUT": "1s",
		"FURROW_HTTP_READ_TIMEOUT":        "2s",
		"FURROW_HTTP_WRITE_TIMEOUT":       "5s",
		"FURROW_HTTP_IDLE_TIMEOUT":        "2s",
	})
	addr := strings.TrimPrefix(e.f.URL, "http://")
	var slow []<-chan time.Duration
	for range 50 {
		slow = append(slow, slowBody(t, addr))
	}
	// A slow header, too.
	hc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	_, _ = hc.Write([]byte("POST /api/metric-values HTTP/1.1\r\nHost: furrow\r\n"))
	header := closedAfter(hc, time.Now())

	// Devices are served while the slow connections are held.
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, took := e.timed(t, "POST", "/api/metric-values", reading(e.fx.DeviceID, i), bearer(e.fx.Key)...)
			if r.Status != 201 {
				t.Errorf("reading %d during the slow connections: %d %s", i, r.Status, r.Body)
			}
			if took > 5*time.Second {
				t.Errorf("reading %d took %v", i, took)
			}
		}()
	}
	wg.Wait()

	// The read timeout is 2 s; a loaded machine may add some.
	var longest time.Duration
	for i, ch := range slow {
		longest = max(longest, waitClosed(t, fmt.Sprintf("slow body %d", i), ch, 15*time.Second))
	}
	t.Logf("50 slow bodies closed, the last after %v (read timeout 2s)", longest)
	t.Logf("slow header closed after %v (read-header timeout 1s)", waitClosed(t, "slow header", header, 15*time.Second))

	// An idle keep-alive connection is closed after the idle timeout.
	ic, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	_, _ = ic.Write([]byte("GET /healthz HTTP/1.1\r\nHost: furrow\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(ic), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz on the keep-alive connection: %v", err)
	}
	resp.Body.Close()
	t.Logf("idle connection closed after %v (idle timeout 2s)", waitClosed(t, "idle connection", closedAfter(ic, time.Now()), 15*time.Second))
}

// bound is how long a request may take while a dependency is silent: the
// request timeout of newFaultEnv (2 s) with room for a loaded machine;
// without the fixes, requests waited for the whole outage.
const faultBound = 8 * time.Second

// With PostgreSQL silent, requests answer 500 with retry-after within the
// request bound instead of waiting for the outage; after it, the first
// requests succeed and every acknowledged reading is stored.
func TestSilentDatabase(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary behind fault-injecting proxies")
	e := newFaultEnv(t, nil)
	fx := e.fx
	key := bearer(fx.Key)
	uncached, uncachedKey := newDevice(t, e.f, fx)
	acked := 0
	r, _ := e.timed(t, "POST", "/api/metric-values", reading(fx.DeviceID, "before"), key...)
	expect(t, r, 201, "")
	acked++

	e.pg.Blackhole()
	for _, c := range []struct {
		name string
		path string
		body any
		hdr  []string
	}{
		{"reading with a cached key", "/api/metric-values", reading(fx.DeviceID, "during"), key},
		{"reading with an uncached key", "/api/metric-values", reading(uncached, "during"), bearer(uncachedKey)},
		{"device list", "/api/farms/" + fx.FarmID + "/devices", nil, bearer(fx.Token)},
	} {
		method := "POST"
		if c.body == nil {
			method = "GET"
		}
		r, took := e.timed(t, method, c.path, c.body, c.hdr...)
		t.Logf("PostgreSQL blackholed: %s answered %d in %v", c.name, r.Status, took)
		if took > faultBound {
			t.Errorf("%s took %v", c.name, took)
		}
		expect(t, r, 500, "internal_error")
		if ra := r.Header.Get("Retry-After"); ra == "" {
			t.Errorf("%s: 500 without retry-after", c.name)
		}
	}
	r, took := e.timed(t, "GET", "/readyz", nil)
	t.Logf("PostgreSQL blackholed: readyz answered %d in %v", r.Status, took)
	if r.Status != 503 || took > faultBound {
		t.Errorf("readyz while blackholed: %d after %v", r.Status, took)
	}

	e.pg.Restore()
	// No stale connection reaches a request after recovery.
	for i := range 5 {
		r, _ := e.timed(t, "POST", "/api/metric-values", reading(fx.DeviceID, fmt.Sprintf("after-%d", i)), key...)
		expect(t, r, 201, "")
		acked++
	}
	r, _ = e.timed(t, "POST", "/api/metric-values", reading(uncached, "after"), bearer(uncachedKey)...)
	expect(t, r, 201, "")
	r, _ = e.timed(t, "GET", "/api/farms/"+fx.FarmID+"/devices", nil, bearer(fx.Token)...)
	expect(t, r, 200, "")

	var rows []struct{ Value string }
	r, _ = e.timed(t, "GET", "/api/farms/"+fx.FarmID+"/readings?limit=100&device_id="+fx.DeviceID, nil, bearer(fx.Token)...)
	expect(t, r, 200, "")
	r.JSON(t, &rows)
	got := map[string]bool{}
	for _, row := range rows {
		got[row.Value] = true
	}
	for _, v := range []string{"before", "after-0", "after-1", "after-2", "after-3", "after-4"} {
		if !got[v] {
			t.Errorf("acknowledged reading %q lost; stored: %v", v, got)
		}
	}
}

// With Redis silent or refusing, readings are let through within the
// limiter's bound, and a Redis that stays down costs later readings
// nothing.
func TestSilentOrRefusingRedis(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary behind fault-injecting proxies")
	e := newFaultEnv(t, map[string]string{"FURROW_RATELIMIT_TIMEOUT": "250ms", "FURROW_RATELIMIT_BREAKER": "5s"})
	key := bearer(e.fx.Key)
	r, _ := e.timed(t, "POST", "/api/metric-values", reading(e.fx.DeviceID, 1), key...)
	expect(t, r, 201, "")
	for _, fault := range []string{"blackholed", "refused"} {
		if fault == "blackholed" {
			e.redis.Blackhole()
		} else {
			e.redis.Cut()
		}
		var slowest time.Duration
		for i := range 10 {
			r, took := e.timed(t, "POST", "/api/metric-values", reading(e.fx.DeviceID, i), key...)
			expect(t, r, 201, "")
			slowest = max(slowest, took)
		}
		t.Logf("Redis %s: 10 readings answered 201, the slowest in %v (limiter bound 250ms)", fault, slowest)
		if slowest > 3*time.Second {
			t.Errorf("Redis %s: a reading took %v", fault, slowest)
		}
		e.redis.Restore()
		time.Sleep(6 * time.Second) // past the breaker period
	}
}

// valueCount returns how many of the farm's readings have value v.
func (e *faultEnv) valueCount(t *testing.T, v string) int {
	t.Helper()
	var rows []struct{ Value string }
	r, _ := e.timed(t, "GET", "/api/farms/"+e.fx.FarmID+"/readings?limit=500", nil, bearer(e.fx.Token)...)
	expect(t, r, 200, "")
	r.JSON(t, &rows)
	n := 0
	for _, row := range rows {
		if row.Value == v {
			n++
		}
	}
	return n
}

// A reading retried with the same Idempotency-Key is stored once, whichever
// instance the retry reaches, also when the first attempt failed with 500
// because PostgreSQL went silent.
func TestIdempotentRetriesAcrossInstances(t *testing.T) {
	testenv.SkipShort(t, "two furrow processes behind fault-injecting proxies")
	e := newFaultEnv(t, nil)
	other := start(t, "serve", e.env)
	post := func(f *furrow, idem string, value any) response {
		return do(t, e.client, "POST", f.URL+"/api/metric-values", reading(e.fx.DeviceID, value),
			append(bearer(e.fx.Key), "Idempotency-Key", idem)...)
	}
	first := post(e.f, "retry-1", "once")
	expect(t, first, 201, "")
	again := post(other, "retry-1", "once")
	expect(t, again, 201, "")
	if string(again.Body) != string(first.Body) {
		t.Fatalf("retry on the other instance answered %s, want the original %s", again.Body, first.Body)
	}
	expect(t, post(other, "retry-1", "another"), 409, "conflict")
	if n := e.valueCount(t, "once"); n != 1 {
		t.Fatalf("the retried reading is stored %d times, want once", n)
	}

	e.pg.Blackhole()
	r := post(e.f, "retry-2", "after a 500")
	expect(t, r, 500, "internal_error")
	e.pg.Restore()
	r = post(other, "retry-2", "after a 500")
	expect(t, r, 201, "")
	r2 := post(e.f, "retry-2", "after a 500")
	expect(t, r2, 201, "")
	if string(r.Body) != string(r2.Body) {
		t.Fatalf("answers differ: %s and %s", r.Body, r2.Body)
	}
	if n := e.valueCount(t, "after a 500"); n != 1 {
		t.Fatalf("the reading retried after a 500 is stored %d times, want once", n)
	}
	// Without the header, behaviour is as before: each request stores.
	for range 2 {
		expect(t, do(t, e.client, "POST", e.f.URL+"/api/metric-values", reading(e.fx.DeviceID, "plain"), bearer(e.fx.Key)...), 201, "")
	}
	if n := e.valueCount(t, "plain"); n != 2 {
		t.Fatalf("readings without a key stored %d times, want 2", n)
	}
}
