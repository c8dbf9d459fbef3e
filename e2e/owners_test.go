package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/furrowhq/furrow/internal/testenv"
)

// hookHealth is the health object of a webhook answer.
type hookHealth struct {
	Health struct {
		LastDeliveredAtMs   *int64 `json:"last_delivered_at_ms"`
		Attempts24h         int    `json:"attempts_24h"`
		ConsecutiveFailures int    `json:"consecutive_failures"`
		Enabled             bool
		LastFailure         *struct {
			StatusCode int `json:"status_code"`
		} `json:"last_failure"`
	}
}

func (e *devEnv) health(t *testing.T, id string) hookHealth {
	t.Helper()
	r := do(t, nil, "GET", e.f.URL+"/api/farms/"+e.fx.FarmID+"/webhooks/"+id, nil, bearer(e.fx.Token)...)
	expect(t, r, 200, "")
	var h hookHealth
	r.JSON(t, &h)
	return h
}

func TestWebhookTestDeliveryEndToEnd(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server) and a webhook receiver")
	e := newDevEnv(t)
	rc := e.rc
	// It subscribes to one type only: the test is sent all the same.
	hook := e.createWebhook(t, map[string]any{"url": rc.URL(), "event_types": []string{"trigger.fired"}})
	rc.setSecret(hook.Secret)
	testPath := e.f.URL + "/api/farms/" + e.fx.FarmID + "/webhooks/" + hook.ID + "/test"

	t.Run("a test delivery arrives signed and shows in the log and the health", func(t *testing.T) {
		r := do(t, nil, "POST", testPath, nil, bearer(e.fx.Token)...)
		expect(t, r, 202, "")
		var out struct {
			EventID string `json:"event_id"`
		}
		r.JSON(t, &out)
		d := rc.next(t, 10*time.Second)
		if !d.Verified || d.Type != "webhook.test" || d.EventID != out.EventID || !strings.Contains(string(d.Data), hook.ID) {
			t.Fatalf("delivery %+v, want the verified webhook.test %s", d, out.EventID)
		}
		waitFor(t, 5*time.Second, func() bool {
			h := e.health(t, hook.ID).Health
			return h.Attempts24h == 1 && h.LastDeliveredAtMs != nil
		})
		if rows := e.attempts(t, hook.ID); len(rows) != 1 || rows[0].EventID != out.EventID || rows[0].StatusCode != 200 {
			t.Fatalf("attempt log %+v", rows)
		}
		r = do(t, nil, "GET", e.f.URL+"/api/farms/"+e.fx.FarmID+"/events", nil, bearer(e.fx.Token)...)
		expect(t, r, 200, "")
		if strings.Contains(string(r.Body), out.EventID) {
			t.Fatalf("the events API lists the test event: %s", r.Body)
		}
	})

	t.Run("a failed test delivery does not count toward disabling", func(t *testing.T) {
		rc.setAnswer(func(string, int) int { return 503 })
		expect(t, do(t, nil, "POST", testPath, nil, bearer(e.fx.Token)...), 202, "")
		for range 8 { // the whole one-second schedule
			if d := rc.next(t, 15*time.Second); d.Status != 503 || d.Type != "webhook.test" {
				t.Fatalf("attempt %+v", d)
			}
		}
		rc.quiet(t, 3*time.Second)
		h := e.health(t, hook.ID).Health
		if h.ConsecutiveFailures != 0 || !h.Enabled || h.LastFailure == nil || h.LastFailure.StatusCode != 503 || h.Attempts24h != 9 {
			t.Fatalf("health after a failed test chain %+v", h)
		}
		rc.setAnswer(func(string, int) int { return 200 })
	})

	t.Run("ten test deliveries a minute per webhook", func(t *testing.T) {
		var limited bool
		for range 10 {
			r := do(t, nil, "POST", testPath, nil, bearer(e.fx.Token)...)
			if r.Status == 429 {
				expect(t, r, 429, "rate_limited")
				limited = r.Header.Get("Retry-After") != ""
				break
			}
			expect(t, r, 202, "")
		}
		if !limited {
			t.Fatal("the 11th test delivery of the minute was not answered 429 with retry-after")
		}
		rc.drain()
	})
}

// TestWebhookRateEndToEnd sends a burst of 1,000 events to a webhook set to
// 10 a second and measures the rate they arrive at, while another farm's
// webhook (unlimited) keeps receiving its events.
func TestWebhookRateEndToEnd(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary (furrow dev, embedded Temporal server), a 100 s burst")
	const burst, rate = 1000, 10
	// Redis holds the webhook's slots, as in production.
	e := newDevEnv(t, "FURROW_REDIS_URL", testenv.RedisURL(t))
	rc := e.rc
	slow := e.createWebhook(t, map[string]any{"url": rc.URL(), "max_per_second": rate})
	other := &devEnv{f: e.f, db: e.db, temporal: e.temporal, rc: rc, fx: newFixture(t, e.f, e.db)}
	fast := other.createWebhook(t, map[string]any{"url": rc.URL()})
	_ = fast // its deliveries are told apart by their data
	emit := func(env *devEnv, tag string) {
		body := map[string]any{"type": "trigger.fired", "data": map[string]any{"tag": tag, "sent_ms": time.Now().UnixMilli()}}
		r := do(t, nil, "POST", env.f.URL+"/api/farms/"+env.fx.FarmID+"/events", body, bearer(env.fx.Token)...)
		expect(t, r, 201, "")
	}
	// The other farm's events, one a second from before the burst on.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				emit(other, "fast")
			}
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < burst; i += 8 {
				emit(e, "slow")
			}
		})
	}
	wg.Wait()
	stored := time.Now()
	dispatched := dispatchedAt(t, e.db, e.fx.FarmID)
	var slowAt []time.Time
	var fastSent, fastLatency []time.Duration // from the burst's start
	deadline := time.After(time.Duration(burst/rate)*time.Second + 90*time.Second)
	for len(slowAt) < burst {
		select {
		case d := <-rc.arrivals:
			var data struct {
				Tag    string
				SentMs int64 `json:"sent_ms"`
			}
			_ = json.Unmarshal(d.Data, &data)
			if d.Status != 200 {
				t.Fatalf("a delivery answered %d", d.Status)
			}
			if data.Tag == "slow" {
				slowAt = append(slowAt, d.At)
			} else if sent := time.UnixMilli(data.SentMs); sent.After(start) {
				fastSent, fastLatency = append(fastSent, sent.Sub(start)), append(fastLatency, d.At.Sub(sent))
			}
		case <-deadline:
			t.Fatalf("%d of %d events arrived", len(slowAt), burst)
		}
	}
	startedIn := (<-dispatched).Sub(start)
	span := slowAt[len(slowAt)-1].Sub(slowAt[0])
	got := float64(len(slowAt)-1) / span.Seconds()
	sends := loggedSends(t, e.db, slow.ID, burst)
	logged := maxPerWindow(sends, time.Second)
	t.Logf("burst of %d events stored in %s, all its workflows started %s after its first event", burst, stored.Sub(start).Round(time.Millisecond), startedIn.Round(time.Millisecond))
	t.Logf("webhook at %d/s: %d deliveries in %s = %.2f/s; most in any second: %d by the receiver, %d by the delivery log; "+
		"the shortest time %d sends took: %s by the receiver, %s by the log",
		rate, len(slowAt), span.Round(time.Millisecond), got, maxPerWindow(slowAt, time.Second), logged,
		rate+1, shortestSpan(slowAt, rate+1), shortestSpan(sends, rate+1))
	during, after := splitLatency(fastSent, fastLatency, startedIn)
	t.Logf("the other farm while the burst's workflows were started: %s; afterwards: %s", during, after)
	t.Logf("of which from stored to dispatched (every workflow of the event started), while the burst's were started: %s",
		outboxWaits(t, e.db, other.fx.FarmID, start, start.Add(startedIn)))
	// The guarantees: every event delivered with one attempt, none failed
	// or burnt waiting, never more sends in a second than the rate by the
	// delivery log (the Pacer counts each send from when its request was
	// written, so no late request escapes its second), and the burst as a
	// whole not faster than the rate. How close to the rate it runs, the
	// receiver's count (which its own delays can bunch) and the other
	// farm's latency are figures of BENCHMARKS.md, logged here.
	if len(sends) != burst {
		t.Fatalf("%d attempts logged for %d events; want one each, none failed or spent waiting", len(sends), burst)
	}
	if logged > rate {
		t.Fatalf("the delivery log has %d sends in one second to a webhook set to %d/s", logged, rate)
	}
	if got > rate*1.1 {
		t.Fatalf("delivered at %.2f/s to a webhook set to %d/s", got, rate)
	}
	if rows := e.attempts(t, slow.ID); anyFailed(rows) {
		t.Fatalf("a failed attempt in the log: %+v", rows)
	}
}

// dispatchedAt watches the farm's outbox and sends when it holds no event
// left to dispatch: every delivery workflow of its events is started.
func dispatchedAt(t *testing.T, databaseURL, farmID string) <-chan time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	out := make(chan time.Time, 1)
	go func() {
		defer cancel()
		defer c.Close(context.Background())
		for ctx.Err() == nil {
			var left int
			err := c.QueryRow(ctx, "SELECT count(*) FROM events WHERE farm_id = $1 AND dispatched_at_ms IS NULL", farmID).Scan(&left)
			if err == nil && left == 0 {
				out <- time.Now()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		out <- time.Time{}
	}()
	return out
}

// outboxWaits reads, for the farm's events that occurred in [from, to), the
// time from their storing to their being marked dispatched.
func outboxWaits(t *testing.T, databaseURL, farmID string, from, to time.Time) latencies {
	t.Helper()
	ms := millis(t, databaseURL, `SELECT dispatched_at_ms - occurred_at_ms FROM events
		WHERE farm_id = $1 AND occurred_at_ms >= $2 AND occurred_at_ms < $3 AND dispatched_at_ms IS NOT NULL`,
		farmID, from.UnixMilli(), to.UnixMilli())
	out := make(latencies, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

// millis runs a query of one column of milliseconds.
func millis(t *testing.T, databaseURL, query string, args ...any) []int64 {
	t.Helper()
	var ms []int64
	err := withConn(t, databaseURL, 10*time.Second, func(ctx context.Context, c *pgx.Conn) (err error) {
		rows, _ := c.Query(ctx, query, args...)
		ms, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// latencies sums up a set of delivery latencies.
type latencies []time.Duration

func (l latencies) String() string {
	q := quantiles(l)
	return fmt.Sprintf("%d deliveries, p50 %s, p95 %s, max %s", len(l), q[0].Round(time.Millisecond), q[1].Round(time.Millisecond), q[2].Round(time.Millisecond))
}

// splitLatency parts the latencies of events sent at sent (from the
// burst's start) into those sent before boundary and after.
func splitLatency(sent, latency []time.Duration, boundary time.Duration) (before, after latencies) {
	for i, s := range sent {
		if s < boundary {
			before = append(before, latency[i])
		} else {
			after = append(after, latency[i])
		}
	}
	return before, after
}

// sendTimes reads when each attempt to the webhook was sent, from the
// delivery log, oldest first.
// loggedSends is sendTimes once the delivery log holds n attempts of the
// webhook, or after 10 s: an attempt is logged when its answer is in, a
// moment after the receiver saw its request.
func loggedSends(t *testing.T, databaseURL, webhookID string, n int) []time.Time {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sends := sendTimes(t, databaseURL, webhookID)
		if len(sends) >= n || time.Now().After(deadline) {
			return sends
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sendTimes(t *testing.T, databaseURL, webhookID string) []time.Time {
	t.Helper()
	ms := millis(t, databaseURL, "SELECT at_ms FROM delivery_attempts WHERE webhook_id = $1 ORDER BY at_ms", webhookID)
	out := make([]time.Time, len(ms))
	for i, m := range ms {
		out[i] = time.UnixMilli(m)
	}
	return out
}

// quantiles returns the median, 95th percentile and maximum of ds.
func quantiles(ds []time.Duration) [3]time.Duration {
	if len(ds) == 0 {
		return [3]time.Duration{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return [3]time.Duration{ds[len(ds)/2], ds[len(ds)*95/100], ds[len(ds)-1]}
}

// maxPerWindow is the most arrivals in any window of length w.
func maxPerWindow(at []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// shortestSpan is the shortest time between the first and the last of n
// consecutive times of at: under a second, some second holds n of them.
func shortestSpan(at []time.Time, n int) time.Duration {
	best := time.Duration(math.MaxInt64)
	for i := n - 1; i < len(at); i++ {
		best = min(best, at[i].Sub(at[i-n+1]))
	}
	return best
}

func anyFailed(rows []attemptRow) bool {
	for _, r := range rows {
		if r.StatusCode != 200 {
			return true
		}
	}
	return false
}
