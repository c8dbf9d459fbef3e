package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sendTimer is a transport that times each round trip from its send, as
// the tool once timed every request: the coordinated-omission method.
type sendTimer struct {
	mu   sync.Mutex
	took []time.Duration
}

func (s *sendTimer) RoundTrip(req *http.Request) (*http.Response, error) {
	began := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(req)
	s.mu.Lock()
	s.took = append(s.took, time.Since(began))
	s.mu.Unlock()
	return resp, err
}

// A paced run against a server that stalls two requests in a row reports
// the stall in the latency of the requests queued behind them, which the
// old method (timing from the send) leaves out, and says how late the tool
// sent them.
func TestPacedLatencyRunsFromTheSchedule(t *testing.T) {
	const (
		stall = 300 * time.Millisecond
		rate  = 200.0
		run   = 1500 * time.Millisecond
	)
	var arrivals atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := arrivals.Add(1); n == 50 || n == 51 {
			time.Sleep(stall)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	timer := &sendTimer{}
	hc := &http.Client{Transport: timer, Timeout: 10 * time.Second}
	var base atomic.Int64
	devices := []Device{{ID: "d", Key: "k"}}
	// One connection: while it waits, the schedule's slots queue up.
	tl := runLoad(t.Context(), 1, newPace(run, rate), readingPoster(hc, srv.URL, devices, &base, ""))
	if tl.failures > 0 || len(tl.latencies) < 250 {
		t.Fatalf("%d answers, %d failures (last %v); want about %d answers", len(tl.latencies), tl.failures, tl.lastErr, int(rate*run.Seconds()))
	}
	fromSend := Summarize(timer.took)
	pacing := tl.pacing(rate)
	fromSchedule := Summarize(tl.latencies)
	t.Logf("p99 from the schedule %s, from the send %s; send lag %s; offered %.1f/s", fromSchedule.P99, fromSend.P99, pacing.SendLag, pacing.Offered)
	if fromSchedule.P99 < stall {
		t.Errorf("p99 from the schedule %s; want at least the stall, %s", fromSchedule.P99, stall)
	}
	if fromSend.P99 >= stall {
		t.Errorf("p99 from the send %s; want it under the stall, which only two requests of %d saw from their send", fromSend.P99, fromSend.Count)
	}
	if pacing.SendLag.Max < stall || pacing.SendLag.Count != len(tl.latencies) {
		t.Errorf("send lag %s; want the queued requests' lateness, at least the stall, for every request", pacing.SendLag)
	}
}

// A paced run that offers less than asked says so.
func TestPacingSaysWhenTheOfferedRateFellShort(t *testing.T) {
	tl := &tally{lags: make([]time.Duration, 90), span: time.Second}
	if p := tl.pacing(100); !p.Short || p.Offered != 90 {
		t.Errorf("pacing %+v; want 90/s offered of 100/s, short", p)
	}
	tl.lags = make([]time.Duration, 99)
	if p := tl.pacing(100); p.Short {
		t.Errorf("pacing %+v; want 99/s of 100/s within the shortfall allowed", p)
	}
	if p := tl.pacing(0); p != nil {
		t.Errorf("pacing %+v at full speed; want none", p)
	}
}

// neverAnswers is a server that accepts requests and answers none until
// they are given up.
func neverAnswers(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv
}

// A paced run against a server that never answers ends within its grace,
// counts the requests it never sent, and fails its check. Without the
// bound, each of its 1,000 slots would wait for a client timeout in turn.
func TestPacedRunEndsWhenTheServerNeverAnswers(t *testing.T) {
	t.Parallel()
	srv := neverAnswers(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cfg := IngestConfig{Concurrency: 4, Duration: 300 * time.Millisecond, Rate: 3333}
	hc := loadClient(cfg.Concurrency)
	var base atomic.Int64
	began := time.Now()
	r, tl, err := measure(ctx, cfg, 0, hc, readingPoster(hc, srv.URL, []Device{{ID: "d", Key: "k"}}, &base, ""), &base)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if bound := cfg.Duration + PaceGrace + 2*time.Second; took > bound {
		t.Errorf("the run took %s; want it over within %s", took, bound)
	}
	r.fill(tl, cfg.Rate)
	if r.Unsent < 900 || r.Failures != int64(cfg.Concurrency) {
		t.Errorf("%d unsent, %d without an answer; want all but the %d requests in flight unsent, those unanswered", r.Unsent, r.Failures, cfg.Concurrency)
	}
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "never sent") {
		t.Errorf("check: %v; want the unsent requests named", err)
	}
}

// The warm-up, which lasts until every device has posted once, ends
// within its grace too, and counts the devices it did not reach.
func TestWarmUpEndsWhenTheServerNeverAnswers(t *testing.T) {
	t.Parallel()
	srv := neverAnswers(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cfg := IngestConfig{Concurrency: 2, Warmup: 100 * time.Millisecond}
	hc := loadClient(cfg.Concurrency)
	var base atomic.Int64
	began := time.Now()
	w := warmUp(ctx, cfg, 1000, readingPoster(hc, srv.URL, []Device{{ID: "d", Key: "k"}}, &base, "w"))
	if bound := cfg.Warmup + PaceGrace + 2*time.Second; time.Since(began) > bound {
		t.Errorf("the warm-up took %s; want it over within %s", time.Since(began), bound)
	}
	if w.Unsent != 1000-int64(cfg.Concurrency) || w.Failures != int64(cfg.Concurrency) || w.LastFailure == "" {
		t.Errorf("warm-up %+v; want all but the requests in flight unsent, those unanswered with their error", w)
	}
}

// A paced schedule owes every slot due before its end, its minimum if
// more, and counts those never handed out.
func TestPaceCountsTheSlotsItNeverHandedOut(t *testing.T) {
	p := newPace(time.Second, 10)
	if n := p.scheduled(); n != 10 {
		t.Errorf("%d slots scheduled in 1 s at 10/s; want 10", n)
	}
	if n := newPace(time.Second, 10).atLeast(25).scheduled(); n != 25 {
		t.Errorf("%d slots scheduled with a minimum of 25; want 25", n)
	}
	p.deadline = p.start // Past its deadline at once: nothing is handed out.
	if _, ok := p.next(t.Context()); ok || p.unsent() != 10 {
		t.Errorf("handed out %v, %d unsent; want nothing handed out past the deadline, all 10 unsent", ok, p.unsent())
	}
}
