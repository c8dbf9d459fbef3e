package furrow

import (
	"strings"

	"github.com/google/uuid"
)

// WebhookHealth is a webhook's health at a glance, read from its attempt
// log (the attempts that sent something; skipped ones are left out) and
// its state. The *24h fields cover the last HealthWindow; the pointers are
// nil when there is nothing to say (no attempt in the window, never
// delivered, never failed).
type WebhookHealth struct {
	LastDeliveredAtMs *int64         `json:"last_delivered_at_ms"`
	LastFailure       *HealthFailure `json:"last_failure"`
	Attempts24h       int            `json:"attempts_24h"`
	// SuccessRate24h is the share of the window's attempts answered 2xx,
	// from 0 to 1.
	SuccessRate24h *float64 `json:"success_rate_24h"`
	P50DurationMs  *int64   `json:"p50_duration_ms"`
	P95DurationMs  *int64   `json:"p95_duration_ms"`
	// ConsecutiveFailures and Enabled are the webhook's own: failed chains
	// in a row, and whether it is delivered to.
	ConsecutiveFailures int  `json:"consecutive_failures"`
	Enabled             bool `json:"enabled"`
	// StateChangedAtMs and StateCause say when and why Enabled last
	// changed (the webhook's StateChangedAtMs and StateCause); nil before
	// the first change.
	StateChangedAtMs *int64  `json:"state_changed_at_ms"`
	StateCause       *string `json:"state_cause"`
}

// HealthFailure is the last attempt that was not answered 2xx: its time,
// the status (0 when there was no answer) and the error.
type HealthFailure struct {
	AtMs       int64  `json:"at_ms"`
	StatusCode int    `json:"status_code"`
	Error      string `json:"error"`
}

// AttemptHealth is the part of WebhookHealth the attempt log gives, for
// one webhook.
type AttemptHealth struct {
	WebhookID         uuid.UUID
	LastDeliveredAtMs *int64
	LastFailure       *HealthFailure
	Attempts          int
	Delivered         int
	P50DurationMs     *int64
	P95DurationMs     *int64
}

// Health combines the attempt log's part a with w's state.
func (a AttemptHealth) Health(w Webhook) WebhookHealth {
	h := WebhookHealth{
		LastDeliveredAtMs: a.LastDeliveredAtMs, LastFailure: a.LastFailure, Attempts24h: a.Attempts,
		P50DurationMs: a.P50DurationMs, P95DurationMs: a.P95DurationMs,
		ConsecutiveFailures: w.ConsecutiveFailures, Enabled: w.Enabled,
	}
	if w.StateChangedAtMs != 0 {
		at, cause := w.StateChangedAtMs, w.StateCause
		h.StateChangedAtMs, h.StateCause = &at, &cause
	}
	if a.Attempts > 0 {
		rate := float64(a.Delivered) / float64(a.Attempts)
		h.SuccessRate24h = &rate
	}
	return h
}

// Skipped reports whether an attempt row's error says it sent nothing
// (one of the Skip reasons): such rows are left out of the health summary.
func Skipped(attemptError string) bool { return strings.HasPrefix(attemptError, SkipPrefix) }
