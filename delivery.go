package furrow

import "github.com/google/uuid"

// The words of the delivery engine: how a chain and an attempt end, why an
// attempt sends nothing, which answers are tried again, and what a chain
// tells its webhook's workflow. The workflows, the activities, the
// dispatcher and the metrics speak them from here; the numbers they follow
// are in spec.go.

// Outcomes of a delivery chain, the attempts to deliver one event to one
// webhook. They are the Outcome of a delivery workflow's result and the
// outcome label of furrow_delivery_chains_total.
const (
	// OutcomeDelivered is a chain whose last attempt was answered 2xx.
	OutcomeDelivered = "delivered"
	// OutcomeFailed is a chain ended by an answer that is not retried, or
	// by a retried failure of its last attempt.
	OutcomeFailed = "failed"
	// OutcomeSkipped is a chain whose attempt sent nothing, for one of the
	// Skip reasons.
	OutcomeSkipped = "skipped"
)

// AttemptRetried is the result of an attempt that failed in a retried way
// while attempts remain, so that its chain goes on. An attempt that ends
// its chain has the chain's outcome as its result. Both are the result
// label of furrow_delivery_attempts_total.
const AttemptRetried = "retry"

// Why an attempt sent nothing: the error of its row in the attempt log and
// of its delivery workflow's result. Each starts with SkipPrefix.
const (
	SkipWebhookDisabled = SkipPrefix + "webhook disabled"
	SkipWebhookDeleted  = SkipPrefix + "webhook deleted"
	SkipEventDeleted    = SkipPrefix + "event deleted"
)

// AttemptLost is the error of the row of an attempt that ended with no row
// of its own: the worker making it stopped (or stalled) past its time, so
// whether the endpoint got the request is not known. The chain goes on
// as after any failed attempt.
const AttemptLost = "lost: the worker making this attempt stopped before it ended; whether the endpoint got it is not known"

// SkipPrefix starts the error of every attempt row that sent nothing. The
// delivery log's health index (migration 0015) leaves such rows out by it.
const SkipPrefix = "skipped: "

// Accepted reports whether an answer's status delivers the event: any 2xx,
// whatever the body says.
func Accepted(status int) bool { return status >= 200 && status < 300 }

// Retried reports whether an attempt that was answered status, or not
// answered at all (status 0: a timeout or a connection failure), is tried
// again after the schedule's delay: no answer, 5xx, 408 Request Timeout and
// 429 Too Many Requests are. Any other answer that is not Accepted (other
// 4xx, a redirect, which is never followed) fails the chain at once.
func Retried(status int) bool {
	return status == 0 || status >= 500 && status <= 599 || status == 408 || status == 429
}

// ChainReport is how one delivery chain of a webhook ended, as its delivery
// workflow tells the webhook's workflow (which counts failed chains). Only
// failed chains, and delivered chains of a webhook that counts failed
// chains, are reported; the chain of a test delivery (IsTestDelivery) never
// is. StatusCode and Error are those of the chain's last
// attempt.
type ChainReport struct {
	WebhookID  uuid.UUID
	EventID    string
	Failed     bool
	StatusCode int    `json:",omitempty"`
	Error      string `json:",omitempty"`
	// Chain names the delivery chain, its workflow's ID and run, so that a
	// report sent twice (its activity retried after the signal went) is
	// counted once; EndedAtMs is when the chain ended, so that a failure
	// that ended before a re-enable, reported after it, is not counted
	// against the re-enabled webhook. Both are empty in the reports of
	// delivery workflows that started before they were.
	Chain     string `json:",omitempty"`
	EndedAtMs int64  `json:",omitempty"`
}

// MaxRedeliverSince bounds the events one redelivery since a time
// (POST …/redeliver {since_ms}) sends to a webhook: a farm of ten sensors
// makes about a thousand metric.value events a day, so this is three
// months of them, more than the events kept (AttemptRetention). It bounds
// the work one request starts, not the request, which never holds the
// events: the redelivery's workflow reads them a page at a time.
const MaxRedeliverSince = 100_000

// RedeliverySet is what a redelivery since a time sends to a webhook, fixed
// when it is asked for: the events of FarmID of the Types the webhook
// subscribes to that occurred at or after SinceMs and were stored no later
// than ThroughSeq (the place in the order stored of the newest of them
// then), so that events stored after the request, which their own
// deliveries reach, are not sent twice. Count is how many it held then;
// events removed since (retention) are not sent.
type RedeliverySet struct {
	FarmID     uuid.UUID
	Types      []string
	SinceMs    int64
	ThroughSeq int64
	Count      int
}
