package telemetry

import (
	"fmt"

	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// temporalBuckets are the bucket bounds, in seconds, of the Temporal SDK's
// latency histograms (schedule-to-start, request and execution latencies).
// OpenTelemetry's defaults are meant for milliseconds.
// 2 is the schedule-to-start alert's threshold: a bound of its own keeps
// the quantile from being interpolated across it.
var temporalBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2, 2.5, 5, 10, 30, 60, 300}

// TemporalMetrics returns the metrics handler to set on the Temporal client
// options: the SDK's worker and client metrics (temporal_*), exported
// through OpenTelemetry's Prometheus exporter on m's registry, so they are
// served by the same /metrics. A nil m returns nil (the SDK's no-op).
func (m *Metrics) TemporalMetrics() (client.MetricsHandler, error) {
	if m == nil {
		return nil, nil
	}
	exp, err := otelprom.New(
		otelprom.WithRegisterer(m.reg),
		otelprom.WithoutTargetInfo(),
		otelprom.WithoutScopeInfo(),
		otelprom.WithAggregationSelector(func(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
			if k == sdkmetric.InstrumentKindHistogram {
				return sdkmetric.AggregationExplicitBucketHistogram{Boundaries: temporalBuckets}
			}
			return sdkmetric.DefaultAggregationSelector(k)
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal metrics exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	return temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                provider.Meter("temporal-sdk-go"),
		UseMonotonicCounters: true,
	}), nil
}
