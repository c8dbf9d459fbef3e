package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the cause label of furrow_dispatch_farm_failures_total.
const (
	CauseFarm   = "farm"   // the farm's own dispatch failed; its claims were given back
	CauseShared = "shared" // the database or Temporal failed the whole pass
)

// dispatchMetrics say how the outbox dispatcher fares beside the starts it
// makes: failures, claims given back, and its backoff.
type dispatchMetrics struct {
	failures *prometheus.CounterVec
	released prometheus.Counter
	held     prometheus.Counter
	backoff  prometheus.Gauge
}

func newDispatchMetrics(reg prometheus.Registerer) dispatchMetrics {
	d := dispatchMetrics{
		failures: counterVec(reg, "furrow_dispatch_farm_failures_total", "Farms whose events a dispatcher pass could not dispatch, by cause: farm (its own) or shared (the database or Temporal).", "cause"),
		released: counter(reg, "furrow_dispatch_leases_released_total", "Outbox claims a dispatcher gave back unfinished, for another dispatcher or its next pass."),
		held:     counter(reg, "furrow_dispatch_held_total", "Outbox events held unstarted because a webhook's max_per_second had no room for their start yet; they are claimed again after the hold."),
		backoff:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "furrow_dispatch_backoff_seconds", Help: "How long the dispatcher waits before claiming again after failing passes; 0 when healthy."}),
	}
	reg.MustRegister(d.backoff)
	d.failures.WithLabelValues(CauseFarm)
	d.failures.WithLabelValues(CauseShared)
	return d
}

// DispatchFarmFailed counts a farm the dispatcher could not dispatch in a
// pass; shared says the cause was the database or Temporal.
func (m *Metrics) DispatchFarmFailed(shared bool) {
	if m == nil {
		return
	}
	cause := CauseFarm
	if shared {
		cause = CauseShared
	}
	m.dispatch.failures.WithLabelValues(cause).Inc()
}

// DispatchLeasesReleased counts outbox claims given back unfinished.
func (m *Metrics) DispatchLeasesReleased(n int) {
	if m != nil && n > 0 {
		m.dispatch.released.Add(float64(n))
	}
}

// DispatchHeld counts outbox events held for a paced webhook.
func (m *Metrics) DispatchHeld(n int) {
	if m != nil && n > 0 {
		m.dispatch.held.Add(float64(n))
	}
}

// DispatchBackingOff sets the dispatcher's current wait before claiming.
func (m *Metrics) DispatchBackingOff(wait time.Duration) {
	if m != nil {
		m.dispatch.backoff.Set(wait.Seconds())
	}
}
