package store

import (
	"testing"
	"time"
)

// feed tells l of batches of n readings every gap, starting at t0, and
// returns the last wait it asked for.
func feed(l *linger, t0 time.Time, n int, gap time.Duration, batches int) (time.Time, time.Duration) {
	var d time.Duration
	for range batches {
		t0 = t0.Add(gap)
		d = l.wait(n, t0)
	}
	return t0, d
}

func TestLingerNeverHoldsALoneReadingAtALowRate(t *testing.T) {
	var l linger
	start := time.Unix(1_700_000_000, 0)
	for i := range 100 {
		// 500 readings/s, one at a time: under lingerAhead per maxLinger.
		if d := l.wait(1, start.Add(time.Duration(i)*2*time.Millisecond)); d != 0 {
			t.Fatalf("batch %d of one reading at 500/s waits %v, want 0", i, d)
		}
	}
}

func TestLingerWaitsAtAMillionDevicesMeanRate(t *testing.T) {
	var l linger
	// 1,111 readings/s, one at a time: about one more within maxLinger.
	_, d := feed(&l, time.Unix(1_700_000_000, 0), 1, 900*time.Microsecond, 20)
	if d <= 0 || d > maxLinger {
		t.Fatalf("at 1,111/s in ones the wait is %v, want within (0, %v]", d, maxLinger)
	}
}

func TestLingerWaitsAtAPeakOfSmallBatches(t *testing.T) {
	var l linger
	// 3,333 readings/s in batches of two.
	_, d := feed(&l, time.Unix(1_700_000_000, 0), 2, 600*time.Microsecond, 20)
	if d <= 0 || d > maxLinger {
		t.Fatalf("at 3,333/s in batches of two the wait is %v, want within (0, %v]", d, maxLinger)
	}
}

func TestLingerWaitsNoLongerThanTheRateNeeds(t *testing.T) {
	var l linger
	// 100,000 readings/s in batches of one: seven more come in 70 µs.
	_, d := feed(&l, time.Unix(1_700_000_000, 0), 1, 10*time.Microsecond, 50)
	if d <= 0 || d > 100*time.Microsecond {
		t.Fatalf("at 100,000/s the wait is %v, want within (0, 100µs]", d)
	}
}

func TestLingerLeavesFullBatchesAndStragglersAlone(t *testing.T) {
	var l linger
	t0, _ := feed(&l, time.Unix(1_700_000_000, 0), lingerBatch, 500*time.Microsecond, 20)
	if d := l.wait(lingerBatch, t0.Add(500*time.Microsecond)); d != 0 {
		t.Fatalf("a batch of %d waits %v, want 0", lingerBatch, d)
	}
	// The stragglers of a wave: a small batch right after a full one.
	if d := l.wait(1, t0.Add(600*time.Microsecond)); d != 0 {
		t.Fatalf("a small batch after a full one waits %v, want 0", d)
	}
}

func TestLingerCountsWhatTheWaitTook(t *testing.T) {
	var with, without linger
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 20 {
		now := t0.Add(time.Duration(i) * 2 * time.Millisecond)
		with.wait(1, now)
		with.took(5)
		without.wait(1, now)
	}
	if with.rate <= without.rate*2 {
		t.Fatalf("rate with readings taken while waiting %.0f/s, without %.0f/s: the waits' readings are not counted", with.rate, without.rate)
	}
}

func TestWaitForStopsAtTheSizeTheTimeOrTheClose(t *testing.T) {
	q := make(chan *ingestReq, 16)
	for range 10 {
		q <- &ingestReq{}
	}
	if got := waitFor(q, nil, 8, time.Hour); len(got) != 8 {
		t.Fatalf("waitFor with 10 queued and size 8 took %d", len(got))
	}
	start := time.Now()
	if got := waitFor(q, nil, 8, 20*time.Millisecond); len(got) != 2 {
		t.Fatalf("waitFor with 2 queued took %d", len(got))
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("waitFor returned after %v, before its 20ms", waited)
	}
	close(q)
	if got := waitFor(q, nil, 8, time.Hour); len(got) != 0 {
		t.Fatalf("waitFor on a closed queue took %d", len(got))
	}
}
