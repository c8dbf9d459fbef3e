// Package activities holds the Temporal activities of the delivery engine:
// the HTTP delivery of one attempt and the store calls the workflows make.
// Workflows call them through a nil *Activities, so the worker's registered
// instance is the one that runs.
package activities

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/furrowhq/furrow"
)

// Type names of the application errors of failed attempts, visible in
// Temporal history.
const (
	// ErrorTypeRetryable marks an attempt that failed in a retried way:
	// 5xx, 408, 429, timeout or connection failure.
	ErrorTypeRetryable = "DeliveryRetryable"
	// ErrorTypeUnsent marks an attempt that was never made: the webhook or
	// the event could not be read (the database failed, or the key ring
	// lacks the key that sealed the secret). It is retried on the schedule
	// like ErrorTypeRetryable, but a chain that ends on it does not count
	// toward furrow.MaxFailedChains: the endpoint was not tried.
	ErrorTypeUnsent = "DeliveryUnsent"
	// ErrorTypeRejected marks an answer that is never retried: other 4xx,
	// 3xx.
	ErrorTypeRejected = "DeliveryRejected"
)

// Activities holds the dependencies of every activity. Register one
// instance with the worker.
type Activities struct {
	Webhooks furrow.WebhookService
	// Devices and Retention serve the device sweep and the retention job.
	Devices   furrow.DeviceService
	Retention furrow.Retention
	// HTTP sends deliveries. It should refuse private addresses (see
	// package safehttp); redirects are never followed whatever its policy.
	HTTP   *http.Client
	Clock  furrow.Clock
	Logger *slog.Logger
	// Reporter hands chain reports to the per-webhook workflows; cmd wires
	// it to Temporal.
	Reporter ChainReporter
	// Live publishes the events the activities store (webhook lifecycle,
	// device.offline) on the live bus; nil publishes nothing.
	Live furrow.EventPublisher
	// Metrics records attempts, chains, disabled webhooks and offline
	// devices; nil records nothing.
	Metrics Metrics
	// Pacer keeps attempts within each webhook's max_per_second; nil
	// sends every attempt at once.
	Pacer Pacer
	// Redeliverer starts the deliveries of redeliveries; cmd wires it to
	// Temporal.
	Redeliverer Redeliverer
}

// Metrics receives what the activities did, for the process's metrics
// (cmd/furrow wires *telemetry.Metrics).
type Metrics interface {
	// DeliveryAttempt counts an attempt by result (furrow.AttemptRetried or
	// an Outcome word); took is its duration, zero when it sent nothing.
	DeliveryAttempt(result string, took time.Duration)
	// DeliveryChain counts a chain that ended with outcome.
	DeliveryChain(outcome string)
	// Delivered observes the time from an event to its receiver's 2xx.
	Delivered(latency time.Duration)
	// WebhookDisabled counts a webhook disabled by its failed chains.
	WebhookDisabled()
	// WebhookLifecycleEvent counts a lifecycle event stored, by type.
	WebhookLifecycleEvent(eventType string)
	// DevicesOffline counts n devices marked offline.
	DevicesOffline(n int)
	// TestDelivery counts a test delivery's chain that ended with outcome.
	TestDelivery(outcome string)
	// DeliveryThrottled counts an attempt that waited for its webhook's
	// rate.
	DeliveryThrottled()
}

type noMetrics struct{}

func (noMetrics) DeliveryAttempt(string, time.Duration) {}
func (noMetrics) DeliveryChain(string)                  {}
func (noMetrics) Delivered(time.Duration)               {}
func (noMetrics) WebhookDisabled()                      {}
func (noMetrics) WebhookLifecycleEvent(string)          {}
func (noMetrics) DevicesOffline(int)                    {}
func (noMetrics) TestDelivery(string)                   {}
func (noMetrics) DeliveryThrottled()                    {}

func (a *Activities) metrics() Metrics {
	if a.Metrics == nil {
		return noMetrics{}
	}
	return a.Metrics
}

// publish hands a stored event to the live bus, when there is one.
func (a *Activities) publish(e furrow.Event) {
	if a.Live != nil {
		a.Live.PublishEvent(e)
	}
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}
