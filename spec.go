package furrow

import (
	"math"
	"slices"
	"time"
)

// The numbers Furrow promises: the rate limit of the device API and the
// rules of webhook delivery. They are defined here only; the API, the rate
// limiters, the dispatcher, the workflows, the activities, the dev server
// and the cluster setup all read them from here, and the README states them
// in words.
const (
	// RateLimit is how many readings one device credential may post in a
	// RateWindow; the next is answered 429 rate_limited with retry-after.
	RateLimit = 120
	// RateWindow is the sliding window RateLimit counts over.
	RateWindow = 60 * time.Second

	// MaxAttempts is how many times one event is sent to one webhook at
	// most: a first attempt, then one after each delay of DefaultSchedule.
	MaxAttempts = 8
	// DeliveryTimeout bounds each delivery attempt, response body
	// included. An attempt that runs out of it is retried.
	DeliveryTimeout = 10 * time.Second
	// MaxFailedChains is the number of consecutive failed chains that
	// disables a webhook until it is re-enabled.
	MaxFailedChains = 5
	// AttemptRetention is how long delivery attempts are kept; dispatched
	// events, and closed workflows in a namespace Furrow sets up, are kept
	// as long.
	AttemptRetention = 30 * 24 * time.Hour
)

// MaxResponseBody bounds the response body kept in the attempt log. It is
// Furrow's own bound rather than a promise, but it sits with the numbers
// above because the attempt log is read by users.
const MaxResponseBody = 4096

// MaxAttemptError bounds an attempt's error text in the attempt log and in
// its log line: a transport error can quote what the endpoint sent (a
// malformed status line or header of megabytes).
const MaxAttemptError = 1024

// defaultSchedule holds one delay per attempt but the first, so that its
// length follows MaxAttempts.
var defaultSchedule = [MaxAttempts - 1]time.Duration{
	30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 6 * time.Hour, 12 * time.Hour,
}

// DefaultSchedule returns the delay after each failed attempt but the
// last: MaxAttempts attempts over about 21 hours. A deployment may set its
// own schedule (FURROW_RETRY_SCHEDULE); the result is a copy the caller
// may change.
func DefaultSchedule() []time.Duration { return slices.Clone(defaultSchedule[:]) }

// ScheduleOrDefault returns s, or DefaultSchedule when s is empty: how
// every layer reads a schedule that was not set.
func ScheduleOrDefault(s []time.Duration) []time.Duration {
	if len(s) == 0 {
		return DefaultSchedule()
	}
	return s
}

// The numbers of the owners' webhook tools: test deliveries, the health
// summary and the delivery rate an owner may set.
const (
	// TestDeliveryLimit is how many test deliveries one webhook may be
	// sent in a TestDeliveryWindow; the next request is answered 429
	// rate_limited with retry-after.
	TestDeliveryLimit = 10
	// TestDeliveryWindow is the sliding window TestDeliveryLimit counts
	// over.
	TestDeliveryWindow = time.Minute
	// HealthWindow is the span of the attempt log a webhook's health
	// summary counts its attempts, success rate and durations over.
	HealthWindow = 24 * time.Hour
	// MaxPerSecondBound is the highest delivery rate an owner may set on a
	// webhook (max_per_second).
	MaxPerSecondBound = 1000
	// MinPerSecondBound is the lowest: one attempt in 1,000 s. Slower rates
	// would not be paced better, and far slower ones overflow a Duration.
	MinPerSecondBound = 0.001
)

// chainSlack is the part of ChainSpan that covers what else delays a
// chain: a start or a timer waiting for a worker, the processes' clocks.
const chainSlack = 24 * time.Hour

// ChainSpan is how long a delivery chain started now, on schedule (empty:
// DefaultSchedule), may still read its event: the schedule's delays, the
// timeout of each of its attempts (one more than its delays) and a day of
// slack. Retention keeps an event that long after a chain for it starts or
// makes an attempt. A span longer than a time.Duration holds is the
// longest one it holds, so that no schedule, however absurd, wraps it
// round to a short one.
func ChainSpan(schedule []time.Duration) time.Duration {
	span := DeliveryTimeout + chainSlack // the first attempt
	for _, d := range ScheduleOrDefault(schedule) {
		// Each delay is followed by one more attempt.
		if d > math.MaxInt64-DeliveryTimeout-span {
			return math.MaxInt64
		}
		span += d + DeliveryTimeout
	}
	return span
}
