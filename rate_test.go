package furrow

import (
	"math"
	"testing"
	"time"
)

func TestValidateMaxPerSecond(t *testing.T) {
	ok := []float64{MinPerSecondBound, 0.01, 1, 10, MaxPerSecondBound}
	bad := []float64{0, -1, MinPerSecondBound / 2, 1e-300, MaxPerSecondBound + 0.5, math.NaN(), math.Inf(1)}
	if err := ValidateMaxPerSecond(nil); err != nil {
		t.Fatalf("nil (unlimited): %v", err)
	}
	for _, v := range ok {
		if err := ValidateMaxPerSecond(&v); err != nil {
			t.Errorf("%v: %v", v, err)
		}
	}
	for _, v := range bad {
		if ErrorCode(ValidateMaxPerSecond(&v)) != EINVALID {
			t.Errorf("%v accepted", v)
		}
	}
	if RateText(5) != "5/s" || RateText(0.5) != "0.5/s" {
		t.Fatalf("RateText: %s %s", RateText(5), RateText(0.5))
	}
}

// A rate too slow to be a Duration's interval (stored before the lower
// bound) is paced at the bound instead of overflowing into no pacing.
func TestPaceInterval(t *testing.T) {
	for rate, want := range map[float64]time.Duration{
		2:                 500 * time.Millisecond,
		MaxPerSecondBound: time.Millisecond,
		MinPerSecondBound: 1000 * time.Second,
		1e-300:            1000 * time.Second,
		0:                 1000 * time.Second,
		1e12:              time.Microsecond,
	} {
		if got := PaceInterval(rate); got != want {
			t.Errorf("PaceInterval(%g) = %s, want %s", rate, got, want)
		}
	}
}

func TestSkipReasonsStartWithSkipPrefix(t *testing.T) {
	for _, s := range []string{SkipWebhookDisabled, SkipWebhookDeleted, SkipEventDeleted} {
		if !Skipped(s) {
			t.Errorf("%q does not start with %q", s, SkipPrefix)
		}
	}
	if Skipped("timeout after 10s") {
		t.Fatal("a failure reads as skipped")
	}
}
