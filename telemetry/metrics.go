// Package telemetry holds Furrow's observability: the Prometheus metrics of
// the table of docs/operating/observability.md, their /metrics listener, the Temporal
// SDK's metrics on the same registry, and OpenTelemetry tracing. cmd/furrow
// creates one *Metrics and hands it to the packages that record; every
// method is safe on a nil *Metrics, so code and tests that do not care need
// no wiring.
package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/furrowhq/furrow"
)

// httpBuckets are Prometheus's default bounds, in seconds, with 2.5 ms and
// 15 ms added: the ingest p99 targets of BENCHMARKS.md (10 ms at a million
// devices' peak, 15 ms at full load) must fall on a bound to be read off.
var httpBuckets = []float64{.0025, .005, .01, .015, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// latencyBuckets are the bounds, in seconds, of event-to-2xx latency: from
// 5 ms, since a first attempt's p50 is a few milliseconds (BENCHMARKS.md),
// to a day, since retries run for about 21 hours.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 43200, 86400}

// Metrics are Furrow's own instruments, registered on one registry.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests   *prometheus.CounterVec
	httpDuration   *prometheus.HistogramVec
	readingsStored prometheus.Counter
	batchSize      prometheus.Histogram
	rateRejected   prometheus.Counter
	started        prometheus.Counter
	attempts       *prometheus.CounterVec
	attemptTime    prometheus.Histogram
	chains         *prometheus.CounterVec
	latency        prometheus.Histogram
	disabled       prometheus.Counter
	lifecycle      *prometheus.CounterVec
	offline        prometheus.Counter
	rotations      prometheus.Counter
	dispatch       dispatchMetrics
	owners         ownerMetrics
}

// New returns the instruments registered on a new registry that also holds
// the Go runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg}
	m.httpRequests = counterVec(reg, "furrow_http_requests_total", "API requests answered, by chi route pattern, method and status code.", "route", "method", "code")
	m.httpDuration = histogramVec(reg, "furrow_http_request_duration_seconds", "Time to answer an API request.", httpBuckets, "route", "method")
	m.readingsStored = counter(reg, "furrow_readings_stored_total", "Readings committed to PostgreSQL.")
	m.batchSize = histogram(reg, "furrow_ingest_batch_size", "Readings per group-commit transaction.", prometheus.ExponentialBuckets(1, 2, 10))
	m.rateRejected = counter(reg, "furrow_ratelimit_rejected_total", "Requests answered 429 by a rate limiter (readings per credential, test deliveries per webhook).")
	m.started = counter(reg, "furrow_dispatch_workflows_started_total", "Delivery workflows started: by the outbox dispatcher, test deliveries and redeliveries; one started already is not counted again.")
	m.attempts = counterVec(reg, "furrow_delivery_attempts_total", "Delivery attempts by result: delivered, retry, failed, skipped.", "result")
	m.attemptTime = histogram(reg, "furrow_delivery_attempt_duration_seconds", "One delivery attempt, from the request to the answer or the error.", []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15})
	m.chains = counterVec(reg, "furrow_delivery_chains_total", "Delivery chains ended, by outcome: delivered, failed, skipped.", "outcome")
	m.latency = histogram(reg, "furrow_delivery_latency_seconds", "From the event's occurred_at_ms to the receiver's 2xx.", latencyBuckets)
	m.disabled = counter(reg, "furrow_webhooks_disabled_total", "Webhooks disabled after consecutive failed chains.")
	m.lifecycle = counterVec(reg, "furrow_webhook_lifecycle_events_total", "Webhook lifecycle events stored, by type: webhook.disabled, webhook.enabled.", "type")
	m.offline = counter(reg, "furrow_devices_offline_total", "Devices marked offline (device.offline emitted).")
	m.rotations = counter(reg, "furrow_webhook_secret_rotations_total", "Webhook signing secrets rotated through the API.")
	m.dispatch = newDispatchMetrics(reg)
	m.owners = newOwnerMetrics(reg)
	for _, r := range []string{furrow.OutcomeDelivered, furrow.AttemptRetried, furrow.OutcomeFailed, furrow.OutcomeSkipped} {
		m.attempts.WithLabelValues(r) // Every result is shown from the start, at 0.
	}
	for _, o := range []string{furrow.OutcomeDelivered, furrow.OutcomeFailed, furrow.OutcomeSkipped} {
		m.chains.WithLabelValues(o)
	}
	for _, t := range []string{furrow.EventWebhookDisabled, furrow.EventWebhookEnabled} {
		m.lifecycle.WithLabelValues(t)
	}
	return m
}

// Registry returns the registry the instruments are on, for the /metrics
// handler and for collectors added beside them.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// IngestBatch records one group-commit transaction of rows readings, of
// which stored were committed.
func (m *Metrics) IngestBatch(rows, stored int) {
	if m == nil {
		return
	}
	m.batchSize.Observe(float64(rows))
	m.readingsStored.Add(float64(stored))
}

// RateLimited records a request answered 429.
func (m *Metrics) RateLimited() {
	if m != nil {
		m.rateRejected.Inc()
	}
}

// WorkflowStarted records a delivery workflow started.
func (m *Metrics) WorkflowStarted() {
	if m != nil {
		m.started.Inc()
	}
}

// DeliveryAttempt records one attempt by result (furrow.AttemptRetried or
// an Outcome word); took is its duration, zero for an attempt that sent
// nothing.
func (m *Metrics) DeliveryAttempt(result string, took time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(result).Inc()
	if took > 0 {
		m.attemptTime.Observe(took.Seconds())
	}
}

// DeliveryChain records a chain that ended with outcome, an Outcome word of
// package furrow.
func (m *Metrics) DeliveryChain(outcome string) {
	if m != nil {
		m.chains.WithLabelValues(outcome).Inc()
	}
}

// Delivered records the time from an event to its receiver's 2xx.
func (m *Metrics) Delivered(latency time.Duration) {
	if m != nil {
		m.latency.Observe(max(latency, 0).Seconds())
	}
}

// WebhookDisabled records a webhook disabled by the failed-chain rule.
func (m *Metrics) WebhookDisabled() {
	if m != nil {
		m.disabled.Inc()
	}
}

// SecretRotated records a webhook signing secret rotated.
func (m *Metrics) SecretRotated() {
	if m != nil {
		m.rotations.Inc()
	}
}

// WebhookLifecycleEvent records a stored webhook lifecycle event of type
// eventType (webhook.disabled or webhook.enabled, a bounded label).
func (m *Metrics) WebhookLifecycleEvent(eventType string) {
	if m != nil {
		m.lifecycle.WithLabelValues(eventType).Inc()
	}
}

// DevicesOffline records n devices marked offline.
func (m *Metrics) DevicesOffline(n int) {
	if m != nil && n > 0 {
		m.offline.Add(float64(n))
	}
}

func counter(reg prometheus.Registerer, name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	reg.MustRegister(c)
	return c
}

func counterVec(reg prometheus.Registerer, name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	reg.MustRegister(c)
	return c
}

func histogram(reg prometheus.Registerer, name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	reg.MustRegister(h)
	return h
}

func histogramVec(reg prometheus.Registerer, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	reg.MustRegister(h)
	return h
}
