package bench

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMeasureInTurnsKeepsEveryRequest checks that a run cut into slices
// in turns with the HTTP ceiling counts every request of every slice,
// numbers them on across the slices, and measures the ceiling.
func TestMeasureInTurnsKeepsEveryRequest(t *testing.T) {
	var calls, base atomic.Int64
	var mu sync.Mutex
	var highest int64
	do := func(_ context.Context, s slot, tl *tally) {
		calls.Add(1)
		mu.Lock()
		highest = max(highest, s.i+base.Load()) // as the ingest numbers its requests
		mu.Unlock()
		tl.failures++ // as a request with no answer
		time.Sleep(time.Millisecond)
	}
	cfg := IngestConfig{Concurrency: 2, Duration: 250 * time.Millisecond, HTTPCeiling: true}
	r, _, err := measure(t.Context(), cfg, 0, &http.Client{}, do, &base)
	if err != nil {
		t.Fatal(err)
	}
	if r.Failures == 0 || r.Failures != calls.Load() || base.Load() != calls.Load() {
		t.Errorf("%d requests made, %d failures reported, %d counted on; want all of them", calls.Load(), r.Failures, base.Load())
	}
	if highest < calls.Load()-int64(cfg.Concurrency)*ceilingTurns {
		t.Errorf("highest request number %d of %d requests: the slices did not number on", highest, calls.Load())
	}
	if r.HTTPCeiling == nil || r.HTTPCeiling.PerSec <= 0 || r.HTTPCeiling.Elapsed < cfg.Duration {
		t.Errorf("ceiling %+v; want one measured over slices as long as the run", r.HTTPCeiling)
	}
	if r.Elapsed < cfg.Duration {
		t.Errorf("run elapsed %s; want at least %s", r.Elapsed, cfg.Duration)
	}
}
