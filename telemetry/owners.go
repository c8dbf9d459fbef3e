package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/furrowhq/furrow"
)

// ownerMetrics count what the owners' webhook tools make the engine do:
// test deliveries, and attempts held back by a webhook's delivery rate.
type ownerMetrics struct {
	tests     *prometheus.CounterVec
	throttled prometheus.Counter
}

func newOwnerMetrics(reg prometheus.Registerer) ownerMetrics {
	o := ownerMetrics{
		tests:     counterVec(reg, "furrow_webhook_test_deliveries_total", "Test deliveries ended, by outcome: delivered, failed, skipped.", "outcome"),
		throttled: counter(reg, "furrow_delivery_throttled_total", "Times an attempt waited for its webhook's delivery rate (max_per_second) before sending."),
	}
	for _, out := range []string{furrow.OutcomeDelivered, furrow.OutcomeFailed, furrow.OutcomeSkipped} {
		o.tests.WithLabelValues(out)
	}
	return o
}

// TestDelivery records a test delivery's chain that ended with outcome, an
// Outcome word of package furrow.
func (m *Metrics) TestDelivery(outcome string) {
	if m != nil {
		m.owners.tests.WithLabelValues(outcome).Inc()
	}
}

// DeliveryThrottled records an attempt that waited for its webhook's
// delivery rate.
func (m *Metrics) DeliveryThrottled() {
	if m != nil {
		m.owners.throttled.Inc()
	}
}
