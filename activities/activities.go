// Package activities holds the Temporal activities of the delivery engine:
// the HTTP delivery of one attempt and the store calls the workflows make.
// Workflows call them through a nil *Activities, so the worker's registered
// instance is the one that runs.
package activities

import (
	"log/slog"
	"net/http"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/telemetry"
)

// Type names of the application errors of failed attempts, visible in
// Temporal history.
const (
	// ErrorTypeRetryable marks an attempt that failed in a retried way:
	// 5xx, 408, 429, timeout, connection failure, or an internal error.
	ErrorTypeRetryable = "DeliveryRetryable"
	// ErrorTypeRejected marks an answer that is never retried: other 4xx,
	// 3xx.
	ErrorTypeRejected = "DeliveryRejected"
)

// Activities holds the dependencies of every activity. Register one
// instance with the worker.
type Activities struct {
	Webhooks furrow.WebhookService
	Events   furrow.EventService
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
	// Metrics records attempts, chains, disabled webhooks and offline
	// devices; nil records nothing.
	Metrics *telemetry.Metrics
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}
