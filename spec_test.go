package furrow

import (
	"math"
	"testing"
	"time"
)

func TestDefaultScheduleHasADelayBeforeEveryAttemptButTheFirst(t *testing.T) {
	s := DefaultSchedule()
	if len(s)+1 != MaxAttempts {
		t.Fatalf("%d delays for %d attempts", len(s), MaxAttempts)
	}
	var total time.Duration
	for i, d := range s {
		if d <= 0 || (i > 0 && d < s[i-1]) {
			t.Fatalf("delay %d is %s: delays must be positive and never shrink (%v)", i, d, s)
		}
		total += d
	}
	if total < 20*time.Hour || total > 22*time.Hour {
		t.Errorf("the chain lasts %s, want about 21 hours", total)
	}
	s[0] = time.Hour
	if DefaultSchedule()[0] != 30*time.Second {
		t.Error("changing a returned schedule changed the default")
	}
}

func TestScheduleOrDefault(t *testing.T) {
	if got := ScheduleOrDefault(nil); len(got) != MaxAttempts-1 {
		t.Errorf("empty schedule read as %v", got)
	}
	own := []time.Duration{time.Second}
	if got := ScheduleOrDefault(own); len(got) != 1 || got[0] != time.Second {
		t.Errorf("a set schedule read as %v", got)
	}
}

// A chain's span is its schedule's delays, the timeout of each of its
// attempts and a day: about 45 hours with the default schedule.
func TestChainSpan(t *testing.T) {
	if got, want := ChainSpan(nil), 20*time.Hour+42*time.Minute+30*time.Second+8*DeliveryTimeout+24*time.Hour; got != want {
		t.Errorf("ChainSpan(default) = %v, want %v", got, want)
	}
	if got, want := ChainSpan(DefaultSchedule()), ChainSpan(nil); got != want {
		t.Errorf("ChainSpan(DefaultSchedule()) = %v, want ChainSpan(nil) = %v", got, want)
	}
	// A schedule of its own makes its own number of attempts: one more
	// than its delays, not MaxAttempts.
	if got, want := ChainSpan([]time.Duration{time.Hour, 72 * time.Hour}), 73*time.Hour+3*DeliveryTimeout+24*time.Hour; got != want {
		t.Errorf("ChainSpan(1h, 72h) = %v, want %v", got, want)
	}
	many := make([]time.Duration, 20)
	for i := range many {
		many[i] = time.Minute
	}
	if got, want := ChainSpan(many), 20*time.Minute+21*DeliveryTimeout+24*time.Hour; got != want {
		t.Errorf("ChainSpan(20 × 1m) = %v, want %v", got, want)
	}
}

// Delays that add up past what a time.Duration holds give the longest
// span, never one wrapped round to a short or negative one.
func TestChainSpanDoesNotOverflow(t *testing.T) {
	for _, s := range [][]time.Duration{
		{math.MaxInt64},
		{math.MaxInt64 - DeliveryTimeout},
		{math.MaxInt64 / 2, math.MaxInt64 / 2},
		{time.Hour, math.MaxInt64, time.Hour},
	} {
		if got := ChainSpan(s); got != math.MaxInt64 {
			t.Errorf("ChainSpan(%v) = %v, want the longest duration", s, got)
		}
	}
}
