package telemetry

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestDispatchFailuresReleasesAndBackoff(t *testing.T) {
	m := New()
	m.DispatchFarmFailed(false)
	m.DispatchFarmFailed(true)
	m.DispatchFarmFailed(true)
	m.DispatchLeasesReleased(3)
	m.DispatchLeasesReleased(0)
	m.DispatchHeld(5)
	m.DispatchBackingOff(4 * time.Second)
	farm := testutil.ToFloat64(m.dispatch.failures.WithLabelValues(CauseFarm))
	shared := testutil.ToFloat64(m.dispatch.failures.WithLabelValues(CauseShared))
	if farm != 1 || shared != 2 {
		t.Errorf("failures farm %v shared %v, want 1 and 2", farm, shared)
	}
	if got := testutil.ToFloat64(m.dispatch.released); got != 3 {
		t.Errorf("released = %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.dispatch.held); got != 5 {
		t.Errorf("held = %v, want 5", got)
	}
	if got := testutil.ToFloat64(m.dispatch.backoff); got != 4 {
		t.Errorf("backoff = %v, want 4", got)
	}
	m.DispatchBackingOff(0)
	if got := testutil.ToFloat64(m.dispatch.backoff); got != 0 {
		t.Errorf("backoff after recovery = %v, want 0", got)
	}
	var none *Metrics // metrics off: recording is a no-op
	none.DispatchFarmFailed(true)
	none.DispatchLeasesReleased(1)
	none.DispatchHeld(1)
	none.DispatchBackingOff(time.Second)
}
