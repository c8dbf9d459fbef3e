package telemetry

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A rejection asked for with AllowUncounted is counted only when its
// caller calls the function returned with it (when it answers 429);
// Allow counts it at once.
func TestLimiterLeavesTheCountToTheAnswer(t *testing.T) {
	m := New()
	l := m.Limiter(fixedLimiter{false}).(countingLimiter)
	d, count, err := l.AllowUncounted(context.Background(), "k")
	if err != nil || d.Allowed || count == nil {
		t.Fatalf("AllowUncounted = %+v, count %v, %v; want a rejection and its count", d, count != nil, err)
	}
	if got := testutil.ToFloat64(m.rateRejected); got != 0 {
		t.Fatalf("rejected = %v before the answer, want 0", got)
	}
	count()
	if got := testutil.ToFloat64(m.rateRejected); got != 1 {
		t.Fatalf("rejected = %v after the answer, want 1", got)
	}
	if _, count, _ := m.Limiter(fixedLimiter{true}).(countingLimiter).AllowUncounted(context.Background(), "k"); count != nil {
		t.Fatal("an allowed request came with a count")
	}
	_, _ = l.Allow(context.Background(), "k")
	if got := testutil.ToFloat64(m.rateRejected); got != 2 {
		t.Fatalf("rejected = %v after Allow refused, want 2", got)
	}
}
